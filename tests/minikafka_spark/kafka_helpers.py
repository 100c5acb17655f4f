"""What the broker stored, and small admin steps, for the Spark tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.records import decode_records
from tests.support.produce import stored


@dataclass(frozen=True)
class StoredRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int
    timestamp_type: int
    producer_id: int
    producer_epoch: int
    sequence: int
    transactional: bool


def stored_records(data_dir: Path, topic: str, partitions: int) -> list[StoredRecord]:
    """Every data record in the segment files (control batches left out)."""
    found = []
    for partition in range(partitions):
        for header, raw in stored(data_dir, topic, partition):
            if header.is_control:
                continue
            for record in decode_records(raw, header):
                log_append = header.log_append_time
                found.append(
                    StoredRecord(
                        topic,
                        partition,
                        header.base_offset + record.offset_delta,
                        record.key,
                        record.value,
                        record.headers,
                        header.max_timestamp
                        if log_append
                        else header.base_timestamp + record.timestamp_delta,
                        1 if log_append else 0,
                        header.producer_id,
                        header.producer_epoch,
                        header.base_sequence + record.offset_delta
                        if header.base_sequence >= 0
                        else -1,
                        header.is_transactional,
                    )
                )
    return found


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1)])
    futures[name].result(30)


def delete_records_before(bootstrap: str, topic: str, partition: int, offset: int) -> int:
    """DeleteRecords; returns the new log start offset the broker answered."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, partition, offset)])
    result = futures[TopicPartition(topic, partition)].result(30)
    return int(result.low_watermark)


def batch_read(spark: Any, source: str, bootstrap: str, topic: str, **options: str) -> Any:
    """A batch read of ``topic`` with ``spark.read.format(source)`` ("kafka": Spark's own
    connector, "minikafka": the project's data source) and the given options."""
    reader = (
        spark.read.format(source)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()
