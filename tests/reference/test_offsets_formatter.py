"""Kafka's console consumer with its offsets formatter
(``--formatter org.apache.kafka.tools.consumer.OffsetsMessageFormatter``) reads
``__consumer_offsets`` from Apache Kafka 4.0.0 and from us after the same commits and
deletion: the lines for the test's group must match once the commit timestamps are masked.
The group is at the partition Kafka picks for it (abs(hashCode) % 50) on both sides.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.reference.conftest import REFERENCE_VERSION
from tests.support.internal_topics import formatted_records, java_partition

kafka_python = pytest.importorskip("kafka")

pytestmark = pytest.mark.timeout(600)

FORMATTER = "org.apache.kafka.tools.consumer.OffsetsMessageFormatter"
PARTITIONS = 50


def flow(bootstrap: str, topic: str, group: str) -> None:
    """Two commits (one with metadata), then the group's offsets deleted (tombstones)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(6):
        producer.produce(topic, value=b"v%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    consumer = kafka_python.KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    try:
        tps = [kafka_python.TopicPartition(topic, p) for p in (0, 1)]
        consumer.assign(tps)
        om = kafka_python.structs.OffsetAndMetadata
        consumer.commit({tps[0]: om(1, "first", -1)})
        consumer.commit({tps[0]: om(3, "", -1), tps[1]: om(2, "checkpoint", -1)})
    finally:
        consumer.close()
    [deleted] = admin.delete_consumer_groups([group], request_timeout=30).values()
    deleted.result(30)


def formatted(bootstrap: str, group: str) -> list[dict[str, object]]:
    """The records the formatter prints for ``group``, read from its partition."""
    partition = java_partition(group, PARTITIONS)
    lines = []
    for record in formatted_records(
        bootstrap, "__consumer_offsets", partition, FORMATTER, REFERENCE_VERSION
    ):
        if record["key"]["data"].get("group") == group:
            value = record.get("value")
            if isinstance(value, dict):
                data = value["data"]
                assert isinstance(data, dict) and data["commitTimestamp"] > 0
                data["commitTimestamp"] = "<ts>"
            lines.append(record)
    return lines


def test_offsets_formatter_shows_the_same_commits_and_tombstones(
    sides: dict[str, str],
) -> None:
    suffix = uuid.uuid4().hex[:8]
    seen = {}
    for side, bootstrap in sides.items():
        topic, group = f"fmt-{suffix}", f"fmt-group-{suffix}"
        flow(bootstrap, topic, group)
        seen[side] = formatted(bootstrap, group)
    assert seen["ours"] == seen["kafka"]
    # What both show: three commits (version 3 values), then a tombstone per partition.
    kinds = [(r["key"]["type"], r["value"] is None) for r in seen["ours"]]  # type: ignore[index]
    assert kinds == [(1, False)] * 3 + [(1, True)] * 2
    metadata = [r["value"]["data"]["metadata"] for r in seen["ours"][:3]]  # type: ignore[index]
    assert metadata == ["first", "", "checkpoint"]
