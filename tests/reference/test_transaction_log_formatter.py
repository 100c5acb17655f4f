"""Kafka's console consumer with its transaction log formatter
(``--formatter org.apache.kafka.tools.consumer.TransactionLogMessageFormatter``) reads
``__transaction_state`` from Apache Kafka 4.0.0 and from us after the same transactions
(one committed, one aborted, by confluent-kafka): the records for the transactional id,
at the partition Kafka picks for it (abs(hashCode) % 50), must match once producer ids and
timestamps are masked (and each topic's partition ids sorted: Kafka lists them in a hash
order).
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.reference.conftest import REFERENCE_VERSION
from tests.support.internal_topics import formatted_records, java_partition

pytestmark = pytest.mark.timeout(600)

FORMATTER = "org.apache.kafka.tools.consumer.TransactionLogMessageFormatter"
# Kafka's transaction.state.log.num.partitions default, on both sides.
PARTITIONS = 50


def flow(bootstrap: str, topic: str, txn_id: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"a", partition=0)
    producer.produce(topic, value=b"b", partition=1)
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"c", partition=1)
    # Delivered first, so the partition is in the transaction that is aborted.
    assert producer.flush(30) == 0
    producer.abort_transaction(30)


def offsets_flow(bootstrap: str, topic: str, txn_id: str, group: str) -> None:
    """A transaction that also carries a group's offsets (send_offsets_to_transaction)."""
    from confluent_kafka import Consumer, TopicPartition

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(topic, value=b"out", partition=0)
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 1)], consumer.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
    finally:
        consumer.close()


def formatted(bootstrap: str, txn_id: str) -> list[dict[str, object]]:
    """The records the formatter prints for ``txn_id``, ids and times masked."""
    partition = java_partition(txn_id, PARTITIONS)
    records = []
    for record in formatted_records(
        bootstrap, "__transaction_state", partition, FORMATTER, REFERENCE_VERSION
    ):
        if record["key"]["data"].get("transactionalId") != txn_id:
            continue
        data = record["value"]["data"] if record.get("value") else None
        if isinstance(data, dict):
            assert data["producerId"] >= 0
            data["producerId"] = "<pid>"
            for name in ("transactionLastUpdateTimestampMs", "transactionStartTimestampMs"):
                if data[name] != -1:
                    data[name] = "<ts>"
            # Kafka groups a Set of partitions by topic: their order is a hash order.
            if data["transactionPartitions"]:
                for entry in data["transactionPartitions"]:
                    entry["partitionIds"].sort()
                data["transactionPartitions"].sort(key=lambda e: e["topic"])
        records.append(record)
    return records


def test_transaction_log_formatter_shows_the_same_transaction_states(
    sides: dict[str, str],
) -> None:
    suffix = uuid.uuid4().hex[:8]
    seen = {}
    for side, bootstrap in sides.items():
        topic, txn_id = f"txlog-{suffix}", f"txlog-id-{suffix}"
        flow(bootstrap, topic, txn_id)
        seen[side] = formatted(bootstrap, txn_id)
    assert seen["ours"] == seen["kafka"]
    states = [r["value"]["data"]["transactionStatus"] for r in seen["ours"]]  # type: ignore[index]
    # Empty, Ongoing, PrepareCommit, CompleteCommit, Ongoing, PrepareAbort, CompleteAbort.
    assert states == [0, 1, 2, 4, 1, 3, 5]


def test_a_transaction_with_offsets_lists_the_groups_offsets_partition(
    sides: dict[str, str],
) -> None:
    suffix = uuid.uuid4().hex[:8]
    seen = {}
    for side, bootstrap in sides.items():
        txn_id = f"txoff-id-{suffix}"
        offsets_flow(bootstrap, f"txoff-{suffix}", txn_id, f"txoff-group-{suffix}")
        seen[side] = formatted(bootstrap, txn_id)
    assert seen["ours"] == seen["kafka"]
    ongoing = [r for r in seen["ours"] if r["value"]["data"]["transactionStatus"] == 1]  # type: ignore[index]
    topics = {e["topic"] for r in ongoing for e in r["value"]["data"]["transactionPartitions"]}  # type: ignore[index]
    assert "__consumer_offsets" in topics
