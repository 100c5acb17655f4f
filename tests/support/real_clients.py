"""Drive kafka-python, confluent-kafka and aiokafka as an application would, for e2e tests.

Records to send are values (``Sent``) built up front, so a test can compare what the broker
stored and what a consumer read back with what was sent. Every producer is idempotent
(acks=all), sends each record to its explicit partition with its own headers and CreateTime
timestamp, and returns once all are acknowledged. Every consumer assigns the partitions, seeks
to offset 0 (Fetch only: no group membership, no commits, no ListOffsets) and reads until it has
the expected count or a deadline passes; it returns what it got, normalised to ``Got``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

Header = tuple[str, bytes | None]
Headers = tuple[Header, ...]

# kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text/open_text,
# deprecated since Python 3.11; pytest runs with warnings as errors. A module that drives
# kafka-python (or a broker answer it decodes) sets ``pytestmark = KAFKA_PYTHON_SCHEMA_READS``.
KAFKA_PYTHON_SCHEMA_READS = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"


@dataclass(frozen=True, slots=True)
class Sent:
    partition: int
    key: bytes
    value: bytes | None
    headers: Headers
    timestamp: int


@dataclass(frozen=True, slots=True)
class Got:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int
    timestamp_type: str


Producer = Callable[[str, str, str, Sequence[Sent]], None]
Consumer = Callable[[str, str, int, int, float], list[Got]]

# None as a header value is legal on the wire (a negative length, Kafka's NULLABLE_BYTES), but
# kafka-python 3.0's send() accepts only bytes header values.
NULL_HEADER_VALUES = {"kafka-python": False, "confluent-kafka": True, "aiokafka": True}


def record_key(i: int) -> bytes:
    return b"key-%d" % i


def record_value(i: int) -> bytes | None:
    # A tombstone now and then: a null value must come back null, not empty.
    if i % 101 == 50:
        return None
    # JSON-ish and repetitive so that every codec shrinks it: all three clients send a batch
    # uncompressed when compression would not make it smaller.
    return (
        b'{"n": %d, "kind": "e2e-record", "text": "the quick brown fox jumps over the lazy dog, '
        b'the quick brown fox jumps over the lazy dog", "pad": "%s"}' % (i, b"x" * 40)
    )


def record_headers(i: int, *, null_values: bool) -> Headers:
    """0-2 headers: empty and null values, a repeated key (order matters), UTF-8 keys."""
    if record_value(i) is None:
        # A tombstone alone in a batch is too small to shrink, and every client then sends
        # that batch uncompressed; a compressible header keeps the requested codec on the wire.
        return (("deleted-because", b"the record was deleted by the e2e test; " * 3),)
    kind = i % 5
    if kind == 0:
        return ()
    if kind == 1:
        return (("trace-id", b"t-%d" % i),)
    if kind == 2:
        return (("trace-id", b"t-%d" % i), ("empty", b""))
    if kind == 3:
        # Kafka keeps every header in order, duplicates included (Headers.lastHeader exists
        # precisely because keys repeat).
        return (("dup", b"first"), ("dup", b"second-%d" % (i % 13)))
    utf8 = ("ключ-ü-🚀", f"значение-{i}".encode())
    return (utf8, ("nullable", None if null_values else b""))


def record_timestamp(base_ms: int, i: int) -> int:
    # Not monotonic: within a batch, timestamp deltas go negative and max_timestamp is not the
    # last record's. All within 10 minutes after base_ms, which the caller puts a little in the
    # past: message.timestamp.after.max.ms lets a broker reject timestamps in the future, and
    # timestamps older than retention.ms would let retention delete the segments.
    return base_ms + (i * 7919) % 600_000


def make_records(n: int, partitions: int, base_ms: int, *, null_header_values: bool) -> list[Sent]:
    """Record i goes to partition i % partitions; the list is in send order."""
    return [
        Sent(
            partition=i % partitions,
            key=record_key(i),
            value=record_value(i),
            headers=record_headers(i, null_values=null_header_values),
            timestamp=record_timestamp(base_ms, i),
        )
        for i in range(n)
    ]


# --- producers -------------------------------------------------------------------------------


def produce_kafka_python(bootstrap: str, topic: str, codec: str, records: Sequence[Sent]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        enable_idempotence=True,
        acks="all",
        compression_type=None if codec == "none" else codec,
    )
    try:
        futures = [
            producer.send(
                topic,
                key=r.key,
                value=r.value,
                headers=list(r.headers),
                partition=r.partition,
                timestamp_ms=r.timestamp,
            )
            for r in records
        ]
        producer.flush(timeout=30)
        for future in futures:
            future.get(timeout=0)  # raises the delivery error, if any
    finally:
        producer.close(timeout=10)


def produce_confluent(bootstrap: str, topic: str, codec: str, records: Sequence[Sent]) -> None:
    from confluent_kafka import KafkaError
    from confluent_kafka import Message as CkMessage
    from confluent_kafka import Producer as CkProducer

    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: CkMessage) -> None:
        if err is not None:
            errors.append(err)

    producer = CkProducer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "compression.type": codec,
        }
    )
    for r in records:
        producer.produce(
            topic,
            key=r.key,
            value=r.value,
            headers=list(r.headers),
            partition=r.partition,
            timestamp=r.timestamp,
            on_delivery=on_delivery,
        )
    assert producer.flush(30) == 0, "records still queued after flush"
    assert errors == []


def produce_aiokafka(bootstrap: str, topic: str, codec: str, records: Sequence[Sent]) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            enable_idempotence=True,
            acks="all",
            compression_type=None if codec == "none" else codec,
        )
        await producer.start()
        try:
            futures = [
                await producer.send(
                    topic,
                    key=r.key,
                    value=r.value,
                    headers=list(r.headers),
                    partition=r.partition,
                    timestamp_ms=r.timestamp,
                )
                for r in records
            ]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(run())


PRODUCERS: dict[str, Producer] = {
    "kafka-python": produce_kafka_python,
    "confluent-kafka": produce_confluent,
    "aiokafka": produce_aiokafka,
}


# --- consumers: assign every partition at offset 0 -------------------------------------------


def _headers(raw: Iterable[tuple[str, object]] | Mapping[str, object] | None) -> Headers:
    """Clients hand headers back as a list, a tuple or None (confluent, when there are none)."""
    pairs = raw.items() if isinstance(raw, Mapping) else raw or ()
    out: list[Header] = []
    for k, v in pairs:
        assert v is None or isinstance(v, bytes), (k, v)
        out.append((k, v))
    return tuple(out)


def consume_kafka_python(
    bootstrap: str, topic: str, partitions: int, n: int, deadline_s: float
) -> list[Got]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    got: list[Got] = []
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)  # an explicit position: no ListOffsets needed
        deadline = time.monotonic() + deadline_s
        while len(got) < n and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=500).items():
                got += [_got(tp.partition, m) for m in messages]
    finally:
        consumer.close()
    return got


def _got(partition: int, m: Any) -> Got:
    """A record as kafka-python and aiokafka hand it out (same attribute names)."""
    return Got(
        partition,
        m.offset,
        m.key,
        m.value,
        _headers(m.headers),
        m.timestamp,
        LOG_APPEND_TIME if m.timestamp_type == 1 else CREATE_TIME,
    )


def consume_confluent(
    bootstrap: str, topic: str, partitions: int, n: int, deadline_s: float
) -> list[Got]:
    from confluent_kafka import (
        TIMESTAMP_CREATE_TIME,
        TIMESTAMP_LOG_APPEND_TIME,
        Consumer,
        TopicPartition,
    )

    names = {TIMESTAMP_CREATE_TIME: CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME: LOG_APPEND_TIME}
    # group.id is required by the client but unused: no subscribe, no commits.
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "e2e-unused",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "check.crcs": True,
        }
    )
    got: list[Got] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + deadline_s
        while len(got) < n and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=1000, timeout=0.5):
                assert m.error() is None, m.error()
                partition, offset = m.partition(), m.offset()
                assert partition is not None and offset is not None
                ts_type, ts = m.timestamp()
                got.append(
                    Got(
                        partition,
                        offset,
                        m.key(),
                        m.value(),
                        _headers(m.headers()),
                        ts,
                        names.get(ts_type, f"type {ts_type}"),
                    )
                )
    finally:
        consumer.close()
    return got


def consume_aiokafka(
    bootstrap: str, topic: str, partitions: int, n: int, deadline_s: float
) -> list[Got]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> list[Got]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
        )
        await consumer.start()
        got: list[Got] = []
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            for tp in tps:
                consumer.seek(tp, 0)
            deadline = time.monotonic() + deadline_s
            while len(got) < n and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for tp, messages in batches.items():
                    got += [_got(tp.partition, m) for m in messages]
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


CONSUMERS: dict[str, Consumer] = {
    "kafka-python": consume_kafka_python,
    "confluent-kafka": consume_confluent,
    "aiokafka": consume_aiokafka,
}
