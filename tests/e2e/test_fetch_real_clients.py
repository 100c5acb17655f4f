"""Real consumers over three partitions under tight KIP-74 limits, with fetch sessions on
(kafka-oracle/consume_fetch_limits_kip74 with this broker in Kafka's place). A capture proxy
between client and broker shows which Fetch requests the client sent; what the clients got is
compared with the batches the broker stored."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTopicPartition

from protocol.api_keys import ALL_APIS
from protocol.codec import decode_request
from protocol.header import decode_request_header
from protocol.messages.fetch import FETCH
from protocol.primitives import Reader
from protocol.records import build_batch, decode_records
from protocol.schema import Message
from tests.e2e.test_fetch_limits import create_topic
from tests.support.broker_process import BrokerProcess
from tests.support.capture_proxy import CapturedFrame, CaptureProxy
from tests.support.produce import produce, stored
from tests.support.raw_client import RawClient

with warnings.catch_warnings():
    # kafka-python 3.0 uses importlib.resources.read_text, deprecated in Python 3.11.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, TopicPartition

PARTITIONS = 3
BATCHES = 5
DEADLINE_S = 30.0

Record = tuple[int, int, bytes | None]  # partition, offset, value


@pytest.fixture(scope="module")
def proxied(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[BrokerProcess, CaptureProxy]]:
    with CaptureProxy() as proxy:
        broker = BrokerProcess(
            tmp_path_factory.mktemp("sessions") / "data",
            {"advertised.listeners": f"PLAINTEXT://{proxy.bootstrap}"},
        ).start()
        proxy.set_upstream(broker.port)
        try:
            yield broker, proxy
        finally:
            broker.stop()


def fill(broker: BrokerProcess, name: str) -> list[Record]:
    """Five one-record batches of 700 bytes per partition; what the broker stored."""
    with RawClient(broker.port) as client:
        create_topic(client, name, PARTITIONS)
        for i in range(BATCHES):
            for p in range(PARTITIONS):
                value = f"{p}-{i}".encode() * 234  # about 770 bytes a batch: one per answer
                assert (
                    produce(client, name, build_batch([(b"k", value)]), partition=p).error_code == 0
                )
    on_disk: list[Record] = []
    for p in range(PARTITIONS):
        for header, raw in stored(broker.data_dir, name, p):
            for record in decode_records(raw):
                on_disk.append((p, header.base_offset + record.offset_delta, record.value))
    assert len(on_disk) == PARTITIONS * BATCHES
    return on_disk


def fetches(frames: list[CapturedFrame]) -> list[Message]:
    found = []
    for captured in frames:
        if captured.api_key != FETCH.key:
            continue
        reader = Reader(captured.frame)
        decode_request_header(
            reader, ALL_APIS[FETCH.key].request_header_version(captured.api_version)
        )
        found.append(decode_request(FETCH, captured.api_version, captured.frame[reader.pos :]))
    return found


def test_kafka_python_reads_three_partitions_through_incremental_sessions(
    proxied: tuple[BrokerProcess, CaptureProxy],
) -> None:
    broker, proxy = proxied
    name = f"kp-sessions-{time.monotonic_ns()}"
    on_disk = fill(broker, name)
    proxy.take()
    consumer = KafkaConsumer(
        bootstrap_servers=proxy.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_bytes=1000,
        max_partition_fetch_bytes=500,
    )
    got: list[Record] = []
    try:
        tps = [TopicPartition(name, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < len(on_disk) and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=500).items():
                got += [(tp.partition, m.offset, m.value) for m in messages]
    finally:
        consumer.close()
    assert sorted(got) == sorted(on_disk)
    requests = fetches(proxy.take())
    # The client opened a session and then fetched incrementally in it.
    assert any(r.session_id == 0 and r.session_epoch == 0 for r in requests)
    incremental = [r for r in requests if r.session_id != 0 and r.session_epoch > 0]
    assert len(incremental) >= PARTITIONS * BATCHES - 1
    assert len({r.session_id for r in incremental}) == 1


def test_confluent_kafka_reads_three_partitions_under_tight_limits(
    proxied: tuple[BrokerProcess, CaptureProxy],
) -> None:
    broker, proxy = proxied
    name = f"ck-sessions-{time.monotonic_ns()}"
    on_disk = fill(broker, name)
    proxy.take()
    consumer = Consumer(
        {
            "bootstrap.servers": proxy.bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "fetch.max.bytes": 1000,
            "max.partition.fetch.bytes": 500,
            "message.max.bytes": 1000,
            "check.crcs": True,
        }
    )
    got: list[Record] = []
    try:
        consumer.assign([CkTopicPartition(name, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < len(on_disk) and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=100, timeout=0.5):
                assert m.error() is None, m.error()
                partition, offset = m.partition(), m.offset()
                assert partition is not None and offset is not None
                got.append((partition, offset, m.value()))
    finally:
        consumer.close()
    assert sorted(got) == sorted(on_disk)
    # Each partition's records arrive in offset order, each exactly once.
    for p in range(PARTITIONS):
        assert [o for q, o, _ in got if q == p] == list(range(BATCHES))
    assert fetches(proxy.take()), "the consumer fetched through the proxy"
