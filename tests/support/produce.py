"""Helpers shared by raw-socket tests: create topics, produce a batch, read what is stored."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from broker.tools.dump import iter_partition_batches
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.fetch import FETCH
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.records import BatchHeader, build_batch, decode_records
from protocol.schema import Message
from tests.support.raw_client import RawClient


@dataclass(frozen=True)
class Answer:
    error_code: int
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int


def create_topic(client: RawClient, name: str) -> Message:
    """Auto-create a topic through Metadata and return the first answer that has it ready.

    As Kafka 4.0, the request that creates the topic is answered UNKNOWN_TOPIC_OR_PARTITION;
    the topic is there for the next one (no waiting: the creation itself is synchronous).
    """
    request = Message(topics=[Message(name=name)], allow_auto_topic_creation=True)
    first = client.request(METADATA, 12, request)
    if first.topics[0].error_code == 0:
        return first
    assert first.topics[0].error_code == 3, first  # UNKNOWN_TOPIC_OR_PARTITION
    meta = client.request(METADATA, 12, request)
    assert meta.topics[0].error_code == 0, meta
    return meta


def create_topics_request(name: str, partitions: int, timeout_ms: int = 10_000) -> Message:
    """CreateTopics (v5+) for one topic: ``partitions`` partitions, replication factor 1."""
    return Message(
        topics=[
            Message(
                name=name,
                num_partitions=partitions,
                replication_factor=1,
                assignments=[],
                configs=[],
            )
        ],
        timeout_ms=timeout_ms,
        validate_only=False,
    )


def create_partitioned_topic(client: RawClient, name: str, partitions: int) -> bytes:
    """Create a topic with CreateTopics v7 and return its topic id."""
    answer = client.request(CREATE_TOPICS, 7, create_topics_request(name, partitions))
    assert answer.topics[0].error_code == 0, answer
    return bytes(answer.topics[0].topic_id)


def init_producer(client: RawClient) -> int:
    answer = client.request(
        INIT_PRODUCER_ID, 4, Message(transactional_id=None, transaction_timeout_ms=60000)
    )
    assert answer.error_code == 0
    producer_id: int = answer.producer_id
    return producer_id


@contextmanager
def producing_to(port: int, topic: str) -> Iterator[tuple[RawClient, int]]:
    """A connection to the broker on ``port`` with ``topic`` auto-created and an idempotent
    producer id from InitProducerId (checked): ``with producing_to(port, t) as (client, pid)``."""
    with RawClient(port) as client:
        create_topic(client, topic)
        yield client, init_producer(client)


def batch(
    producer_id: int, epoch: int, base_sequence: int, count: int = 2, tag: str = "r", **kw: object
) -> bytes:
    records = [(None, f"{tag}-{base_sequence + i}".encode()) for i in range(count)]
    return build_batch(
        records,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=base_sequence,
        **kw,  # type: ignore[arg-type]
    )


def produce_request(
    topic: str, data: bytes | None, *, acks: int = -1, partition: int = 0
) -> Message:
    return Message(
        transactional_id=None,
        acks=acks,
        timeout_ms=30000,
        topic_data=[Message(name=topic, partition_data=[Message(index=partition, records=data)])],
    )


def produce(
    client: RawClient,
    topic: str,
    data: bytes | None,
    *,
    version: int = 9,
    acks: int = -1,
    partition: int = 0,
) -> Answer:
    response = client.request(
        PRODUCE, version, produce_request(topic, data, acks=acks, partition=partition)
    )
    part = response.responses[0].partition_responses[0]
    return Answer(part.error_code, part.base_offset, part.log_append_time_ms, part.log_start_offset)


def fetch_request(
    topic: str,
    offset: int,
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 50_000_000,
    partition_max_bytes: int = 1_000_000,
    topic_id: bytes = b"\x00" * 16,
    partition: int = 0,
) -> Message:
    return Message(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            Message(
                topic=topic,
                topic_id=topic_id,
                partitions=[
                    Message(
                        partition=partition,
                        fetch_offset=offset,
                        partition_max_bytes=partition_max_bytes,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def fetch_partition(client: RawClient, topic: str, offset: int, partition: int = 0) -> Message:
    """Fetch v12 (no waiting) of one partition; the partition's answer."""
    answer = client.request(
        FETCH, 12, fetch_request(topic, offset, min_bytes=0, partition=partition)
    )
    result: Message = answer.responses[0].partitions[0]
    return result


def stored(data_dir: Path, topic: str, partition: int = 0) -> list[tuple[BatchHeader, bytes]]:
    """Every batch the broker wrote for a partition, read straight from its segment files."""
    path = data_dir / f"{topic}-{partition}"
    if not path.exists():
        return []
    return list(iter_partition_batches(path))


def stored_values(data_dir: Path, topic: str, partition: int = 0) -> list[bytes | None]:
    """The record values the broker wrote for a partition, in offset order, from its segments."""
    return [
        record.value
        for header, batch in stored(data_dir, topic, partition)
        for record in decode_records(batch, header)
    ]


def cut_into_body(frame: bytes, keep: int = 10) -> bytes:
    """A framed request cut ``keep`` bytes into its body (a v2 request header of a 7-byte
    client id takes 19 bytes after the length), its length prefix fixed to match: a request
    Kafka cannot read, so it closes the connection."""
    bad = bytearray(frame[: 4 + 19 + keep])
    struct.pack_into(">i", bad, 0, len(bad) - 4)
    return bytes(bad)
