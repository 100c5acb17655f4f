"""Scenarios `make oracle-record` records into the oracle corpus (tests/oracle/record.py).

Each is a function of a bootstrap address that drives real clients and returns what the
application observed (the file header's ``observed``). The client code is the differential
layer's (tests/reference/test_scenarios.py); a scenario recorded here replays against us in
tests/oracle/test_oracle_replay.py. Record timestamps, partitions, ids and names are fixed so
that a re-recording is the same conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

from tests.reference.test_scenarios import (
    TIMEOUT,
    admin,
    create_topic,
    group_commit_and_fetch,
    read_all,
    transactions_read_committed,
)

BASE_TIME = 1_700_000_000_000


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[str], Any]
    description: str
    steps: tuple[str, ...]
    clients: tuple[str, ...] = ("confluent-kafka",)
    # Broker settings beyond the recorder's base ones, for the recording and the replay.
    broker_config: dict[str, str] = field(default_factory=dict)
    replay: str = "full"


def _reports(into: list[tuple[Any, ...]]) -> Callable[[Any, Any], None]:
    def delivered(err: Any, msg: Any) -> None:
        into.append((err.name() if err else None, msg.partition(), msg.offset(), msg.key()))

    return delivered


def idempotent_lz4_headers_group(bootstrap: str) -> dict[str, Any]:
    topic, group = "rec-lz4", "rec-lz4-group"
    create_topic(bootstrap, topic, 2)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "compression.type": "lz4",
            "linger.ms": 5,
        }
    )
    reports: list[tuple[Any, ...]] = []
    for i in range(12):
        producer.produce(
            topic,
            key=f"key-{i}".encode(),
            # Repetitive values, so that lz4 actually shrinks the batch.
            value=f"value-{i}-".encode() * 20,
            partition=i % 2,
            headers=[("trace", f"t{i}".encode()), ("empty", b""), ("null", None)],
            timestamp=BASE_TIME + i,
            on_delivery=_reports(reports),
        )
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    records = read_all(consumer, 12)
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(topic, p) for p in (0, 1)], TIMEOUT)
    consumer.close()
    return {
        "reports": sorted(reports, key=lambda r: (r[1], r[2])),
        "records": sorted(records, key=lambda r: (r["partition"], r["offset"])),
        "committed": [(tp.partition, tp.offset) for tp in committed],
    }


def delete_records_list_offsets(bootstrap: str) -> dict[str, Any]:
    topic = "rec-dr"
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(10):
        producer.produce(topic, value=f"r{i}".encode(), partition=0, timestamp=BASE_TIME + 10 * i)
        # One batch per record, so that the new log start falls on a batch boundary.
        producer.flush(TIMEOUT)
    client = admin(bootstrap)
    tp = TopicPartition(topic, 0)
    out: dict[str, Any] = {}

    def delete_before(offset: int) -> Any:
        future = client.delete_records([TopicPartition(topic, 0, offset)])
        try:
            return next(iter(future.values())).result(TIMEOUT).low_watermark
        except KafkaException as exc:
            return exc.args[0].name()

    def list_offset(spec: OffsetSpec) -> tuple[int, int]:
        info = client.list_offsets({tp: spec})[tp].result(TIMEOUT)
        return info.offset, info.timestamp

    out["delete_before_4"] = delete_before(4)
    specs = {
        "earliest": OffsetSpec.earliest(),
        "latest": OffsetSpec.latest(),
        "max_timestamp": OffsetSpec.max_timestamp(),
        # Before the new log start: the first offset still there.
        "time_of_offset_2": OffsetSpec.for_timestamp(BASE_TIME + 20),
        "time_of_offset_7": OffsetSpec.for_timestamp(BASE_TIME + 70),
        "time_after_last": OffsetSpec.for_timestamp(BASE_TIME + 1000),
    }
    out["list_offsets"] = {name: list_offset(spec) for name, spec in specs.items()}
    out["delete_beyond_end"] = delete_before(50)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "rec-dr-unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out["read_from_beginning"] = [(r["offset"], r["value"]) for r in read_all(consumer, 6)]
    consumer.close()
    out["delete_to_end"] = delete_before(-1)
    out["earliest_after"] = list_offset(OffsetSpec.earliest())
    return out


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "produce_confluent_idempotent_lz4_headers_group",
            idempotent_lz4_headers_group,
            "confluent-kafka idempotent producer with compression.type=lz4 and record headers "
            "(a value, an empty one, a null one) over 2 partitions, read back by a consumer "
            "group that commits: the lz4 batches are stored as sent and decompressed by the "
            "consumer, headers and client timestamps come back unchanged",
            (
                "create rec-lz4 (2 partitions)",
                "idempotent producer (lz4, linger 5 ms): 12 keyed records, 3 headers each, "
                "timestamps 1700000000000+i, partition i%2",
                "consumer in group rec-lz4-group subscribes from earliest, reads 12",
                "commit (sync), committed() for both partitions, close (LeaveGroup)",
            ),
        ),
        Scenario(
            "admin_delete_records_list_offsets",
            delete_records_list_offsets,
            "DeleteRecords then ListOffsets through confluent-kafka's AdminClient: earliest "
            "follows the new log start, latest and max-timestamp do not move, a timestamp "
            "older than the log start finds the first record left, one after the last finds "
            "none; deleting beyond the end is OFFSET_OUT_OF_RANGE; a consumer from the "
            "beginning starts at the log start; delete to the high watermark (-1)",
            (
                "create rec-dr; produce 10 records one per batch, timestamps 1700000000000+10*i",
                "delete_records(rec-dr[0] before 4)",
                "list_offsets earliest, latest, max_timestamp, by timestamp (offset 2's, "
                "offset 7's, after the last)",
                "delete_records(before 50) -> OFFSET_OUT_OF_RANGE",
                "consumer assigned from the beginning reads offsets 4..9",
                "delete_records(-1: the high watermark); list_offsets earliest",
            ),
        ),
        Scenario(
            "txn_commit_abort_open_lso",
            transactions_read_committed,
            "confluent-kafka transactional producer: commit, abort, commit of 3 records each, "
            "then a transaction left open: a read_committed consumer reads the 6 committed "
            "records and stops at the last stable offset, a read_uncommitted one reads all 10; "
            "both see the same high watermark; the open transaction is aborted at the end",
            (
                "create ref-txn",
                "init_transactions (transactional.id ref-txn-1)",
                "begin, 3 records, commit; begin, 3 records, abort; begin, 3 records, commit",
                "begin, 1 record, flush (left open)",
                "read_committed consumer from the beginning: 6 records, watermarks",
                "read_uncommitted consumer from the beginning: 10 records, watermarks",
                "abort the open transaction",
            ),
        ),
        Scenario(
            "group_confluent_commit_metadata_delete",
            group_commit_and_fetch,
            "A confluent-kafka consumer group over 3 partitions commits explicit offsets with "
            "and without metadata; committed() and the admin client's "
            "list_consumer_group_offsets return them; after close the group is Empty with no "
            "members; delete_consumer_groups removes it and its offsets",
            (
                "create ref-group (3 partitions); plain producer, 30 records round-robin",
                "consumer in ref-group-1 subscribes, reads 30",
                "commit p0=4, p1=10 with metadata 'm' (sync); committed() for 3 partitions",
                "close; admin list_consumer_group_offsets, describe_consumer_groups",
                "delete_consumer_groups; list_consumer_group_offsets again",
            ),
        ),
    )
}
