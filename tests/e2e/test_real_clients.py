"""Stock clients against a real broker process, checked on what the broker STORED.

kafka-python, confluent-kafka (librdkafka) and aiokafka each run an idempotent producer
(acks=all) with every codec: 10,000 keyed records over 3 partitions, sent to explicit
partitions. The assertions read the segment files, so they hold whatever the clients
believed: every record stored exactly once, in per-partition send order, offsets and
sequences contiguous from 0, one producer id with epoch 0, the requested codec.

Then each client's plain consumer (assign + offset 0, no group) reads records back with
Fetch only and must see exactly what is stored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from protocol.messages.api_versions import API_VERSIONS
from protocol.records import CODEC_NAMES, crc_ok, decode_records
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import create_topic, stored
from tests.support.raw_client import RawClient

N_RECORDS = 10_000
PARTITIONS = 3
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {name: codec for codec, name in CODEC_NAMES.items()}
FIND_COORDINATOR = 10
CONSUME_DEADLINE_S = 30.0

Producer = Callable[[str, str, str, int], None]

# kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text, deprecated
# since Python 3.11; pytest runs with warnings as errors.
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


def record_key(i: int) -> bytes:
    return b"key-%d" % i


def record_value(i: int) -> bytes:
    # JSON-ish and repetitive so that every codec shrinks it: librdkafka sends a batch
    # uncompressed when compression would not make it smaller.
    return (
        b'{"n": %d, "kind": "e2e-record", "text": "the quick brown fox jumps over the lazy dog, '
        b'the quick brown fox jumps over the lazy dog", "pad": "%s"}' % (i, b"x" * 40)
    )


def index_of(key: bytes | None) -> int:
    assert key is not None and key.startswith(b"key-"), key
    return int(key[4:])


# --- producers: each sends record i to partition i % 3 and returns once all are acked -------


def produce_kafka_python(bootstrap: str, topic: str, codec: str, n: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        enable_idempotence=True,
        acks="all",
        compression_type=None if codec == "none" else codec,
    )
    try:
        futures = [
            producer.send(topic, key=record_key(i), value=record_value(i), partition=i % PARTITIONS)
            for i in range(n)
        ]
        producer.flush(timeout=30)
        for future in futures:
            future.get(timeout=0)  # raises the delivery error, if any
    finally:
        producer.close(timeout=10)


def produce_confluent(bootstrap: str, topic: str, codec: str, n: int) -> None:
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
    for i in range(n):
        producer.produce(
            topic,
            key=record_key(i),
            value=record_value(i),
            partition=i % PARTITIONS,
            on_delivery=on_delivery,
        )
    assert producer.flush(30) == 0, "records still queued after flush"
    assert errors == []


def produce_aiokafka(bootstrap: str, topic: str, codec: str, n: int) -> None:
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
                    topic, key=record_key(i), value=record_value(i), partition=i % PARTITIONS
                )
                for i in range(n)
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


# --- consumers: assign all partitions at offset 0 (Fetch only, no group, no ListOffsets) -----

Consumed = list[tuple[int, int, bytes | None, bytes | None]]  # partition, offset, key, value


def consume_kafka_python(bootstrap: str, topic: str, n: int) -> Consumed:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    got: Consumed = []
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        for tp in partitions:
            consumer.seek(tp, 0)  # an explicit position: no ListOffsets needed
        deadline = time.monotonic() + CONSUME_DEADLINE_S
        while len(got) < n and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=500).items():
                got += [(tp.partition, m.offset, m.key, m.value) for m in messages]
    finally:
        consumer.close()
    return got


def consume_confluent(bootstrap: str, topic: str, n: int) -> Consumed:
    from confluent_kafka import Consumer, TopicPartition

    # group.id is required by the client but unused: no subscribe, no commits.
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "e2e-unused",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    )
    got: Consumed = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + CONSUME_DEADLINE_S
        while len(got) < n and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=1000, timeout=0.5):
                assert m.error() is None, m.error()
                partition, offset = m.partition(), m.offset()
                assert partition is not None and offset is not None
                got.append((partition, offset, m.key(), m.value()))
    finally:
        consumer.close()
    return got


def consume_aiokafka(bootstrap: str, topic: str, n: int) -> Consumed:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> Consumed:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
        )
        await consumer.start()
        got: Consumed = []
        try:
            partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(partitions)
            for tp in partitions:
                consumer.seek(tp, 0)
            deadline = time.monotonic() + CONSUME_DEADLINE_S
            while len(got) < n and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for tp, messages in batches.items():
                    got += [(tp.partition, m.offset, m.key, m.value) for m in messages]
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


CONSUMERS: dict[str, Callable[[str, str, int], Consumed]] = {
    "kafka-python": consume_kafka_python,
    "confluent-kafka": consume_confluent,
    "aiokafka": consume_aiokafka,
}


# --- fixtures and checks ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the module; auto-created topics get 3 partitions."""
    proc = BrokerProcess(
        tmp_path_factory.mktemp("clients") / "data", {"num.partitions": str(PARTITIONS)}
    ).start()
    try:
        yield proc
    finally:
        proc.stop()


def create(broker: BrokerProcess, topic: str) -> None:
    with RawClient(broker.port) as client:
        meta = create_topic(client, topic)
    assert len(meta.topics[0].partitions) == PARTITIONS


def advertised_keys(broker: BrokerProcess) -> set[int]:
    with RawClient(broker.port) as client:
        answer = client.request(API_VERSIONS, 3, Message())
    return {k.api_key for k in answer.api_keys}


def expected_codec(broker: BrokerProcess, client: str, codec: str) -> str:
    # librdkafka enables LZ4 only when the broker advertises FindCoordinator (its proxy for
    # "Kafka >= 0.8.2", rdkafka_feature.c); without it, it sends lz4 batches uncompressed.
    lz4_disabled = client == "confluent-kafka" and codec == "lz4"
    if lz4_disabled and FIND_COORDINATOR not in advertised_keys(broker):
        return "none"
    return codec


def check_stored(data_dir: Path, topic: str, n: int, codec: str, *, librdkafka: bool) -> None:
    """Every record once, in send order per partition, contiguous offsets and sequences."""
    producer_ids: set[int] = set()
    codecs: list[int] = []
    for partition in range(PARTITIONS):
        next_offset = 0
        next_sequence = 0
        indexes: list[int] = []
        for header, data in stored(data_dir, topic, partition):
            where = f"{topic}-{partition} batch at {header.base_offset}"
            assert header.base_offset == next_offset, where
            assert crc_ok(data, header), where
            assert header.magic == 2, where
            assert header.producer_id >= 0 and header.producer_epoch == 0, (where, header)
            assert header.base_sequence == next_sequence, (where, header)
            assert not header.is_transactional and not header.is_control, where
            records = decode_records(data, header)
            assert [r.offset_delta for r in records] == list(range(header.records_count)), where
            for r in records:
                i = index_of(r.key)
                assert r.value == record_value(i), (where, i)
                indexes.append(i)
            producer_ids.add(header.producer_id)
            codecs.append(header.compression)
            next_offset = header.next_offset
            next_sequence = header.last_sequence + 1
        assert indexes == list(range(partition, n, PARTITIONS)), f"{topic}-{partition} records"
    assert len(producer_ids) == 1, producer_ids
    wanted = CODEC_IDS[codec]
    if librdkafka:
        # librdkafka falls back to an uncompressed batch when compression would not shrink
        # it; with these payloads that should be rare, never the rule.
        assert set(codecs) <= {wanted, 0}, codecs
        assert codecs.count(wanted) * 2 > len(codecs), codecs
    else:
        assert set(codecs) == {wanted}, codecs


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", list(PRODUCERS))
def test_idempotent_producer_stores_every_record_once_in_order(
    broker3: BrokerProcess, client: str, codec: str
) -> None:
    topic = f"produce-{client}-{codec}"
    create(broker3, topic)
    PRODUCERS[client](broker3.bootstrap, topic, codec, N_RECORDS)
    check_stored(
        broker3.data_dir,
        topic,
        N_RECORDS,
        expected_codec(broker3, client, codec),
        librdkafka=client == "confluent-kafka",
    )


@pytest.mark.parametrize("client", list(CONSUMERS))
def test_plain_consumer_reads_back_exactly_what_is_stored(
    broker3: BrokerProcess, client: str
) -> None:
    n = 3000
    topic = f"consume-{client}"
    create(broker3, topic)
    # zstd: Fetch must hand back zstd batches only to clients fetching with v10+.
    PRODUCERS[client](broker3.bootstrap, topic, "zstd", n)
    want: Consumed = []
    for partition in range(PARTITIONS):
        for header, data in stored(broker3.data_dir, topic, partition):
            want += [
                (partition, header.base_offset + r.offset_delta, r.key, r.value)
                for r in decode_records(data, header)
            ]
    assert len(want) == n
    got = CONSUMERS[client](broker3.bootstrap, topic, n)
    assert sorted(got) == sorted(want)
    for partition in range(PARTITIONS):
        offsets = [offset for p, offset, _, _ in got if p == partition]
        assert offsets == sorted(offsets), f"partition {partition} delivered out of order"
