"""Transactional APIs of stock clients against a real broker, checked on what it STORED.

confluent-kafka (librdkafka) and kafka-python transactional producers commit and abort;
the segment files then hold the data batches with the transactional bit, one COMMIT or ABORT
control batch per partition and transaction, and the aborted transactions in the segment's
.txnindex; read_committed consumers of confluent-kafka and kafka-python get every committed
record once and no aborted one. Also: a second producer with the same transactional id
fences the first (Kafka's errors), and a transaction left open past its timeout is aborted
by the broker (an ABORT marker with a bumped epoch, the LSO released).
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from protocol.records import decode_records
from storage.txn_index import read_entries
from tests.support.broker_process import BrokerProcess
from tests.support.produce import create_topic, stored
from tests.support.raw_client import RawClient

COMMIT, ABORT = 1, 0


def markers(data_dir: Path, topic: str, partition: int = 0) -> list[tuple[int, int, int]]:
    """(offset, control type, producer epoch) of every control batch stored."""
    out = []
    for header, data in stored(data_dir, topic, partition):
        if header.is_control:
            (record,) = decode_records(data, header)
            assert record.key is not None
            out.append(
                (header.base_offset, struct.unpack(">hh", record.key)[1], header.producer_epoch)
            )
    return out


def data_values(data_dir: Path, topic: str, partition: int = 0) -> list[tuple[bytes | None, bool]]:
    """(value, transactional) of every stored data record."""
    out = []
    for header, data in stored(data_dir, topic, partition):
        if not header.is_control:
            out.extend((r.value, header.is_transactional) for r in decode_records(data, header))
    return out


def wait_for(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        time.sleep(0.05)


def confluent_read_committed(bootstrap: str, topic: str, want: int) -> list[bytes]:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"rc-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 15
    try:
        while time.monotonic() < deadline and len(got) < want:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        # Nothing more arrives (an aborted record would come after the committed ones).
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def kafka_python_read_committed(bootstrap: str, topic: str, want: int) -> list[bytes]:
    kafka = pytest.importorskip("kafka")
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", enable_auto_commit=False
    )
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got: list[bytes] = []
    deadline = time.monotonic() + 15
    try:
        while time.monotonic() < deadline and len(got) < want:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value for r in records)
        for records in consumer.poll(timeout_ms=1000).values():
            got.extend(r.value for r in records)
    finally:
        consumer.close()
    return got


def test_confluent_commit_and_abort_store_markers_and_read_committed_skips_aborted(
    broker: BrokerProcess,
) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with RawClient(broker.port) as c:
        create_topic(c, "tx-c")
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-c-1", "linger.ms": 0}
    )
    producer.init_transactions(15)
    producer.begin_transaction()
    for i in range(3):
        producer.produce("tx-c", b"committed-%d" % i, partition=0)
    producer.commit_transaction(15)
    producer.begin_transaction()
    for i in range(2):
        producer.produce("tx-c", b"aborted-%d" % i, partition=0)
    producer.flush(15)
    producer.abort_transaction(15)
    producer.begin_transaction()
    producer.produce("tx-c", b"committed-3", partition=0)
    producer.commit_transaction(15)

    assert [kind for _, kind, _ in markers(broker.data_dir, "tx-c")] == [COMMIT, ABORT, COMMIT]
    values = data_values(broker.data_dir, "tx-c")
    assert all(txn for _, txn in values)
    assert [v for v, _ in values] == [
        b"committed-0",
        b"committed-1",
        b"committed-2",
        b"aborted-0",
        b"aborted-1",
        b"committed-3",
    ]
    # The aborted transaction is in the segment's .txnindex: first offset 4 (after 3 records
    # and a marker), its ABORT marker at 6.
    (entry,) = read_entries(broker.data_dir / "tx-c-0" / f"{0:020d}.txnindex")
    assert (entry.first_offset, entry.last_offset) == (4, 6)
    expected = [b"committed-0", b"committed-1", b"committed-2", b"committed-3"]
    assert confluent_read_committed(broker.bootstrap, "tx-c", 4) == expected
    assert kafka_python_read_committed(broker.bootstrap, "tx-c", 4) == expected


def test_kafka_python_transactional_producer_commits_and_aborts(broker: BrokerProcess) -> None:
    kafka = pytest.importorskip("kafka")
    with RawClient(broker.port) as c:
        create_topic(c, "tx-kp")
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="tx-kp-1")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("tx-kp", b"one", partition=0)
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send("tx-kp", b"two", partition=0)
    producer.flush()
    producer.abort_transaction()
    producer.close()
    assert [kind for _, kind, _ in markers(broker.data_dir, "tx-kp")] == [COMMIT, ABORT]
    assert [v for v, _ in data_values(broker.data_dir, "tx-kp")] == [b"one", b"two"]
    assert kafka_python_read_committed(broker.bootstrap, "tx-kp", 1) == [b"one"]


def test_second_producer_with_the_same_id_fences_the_first(broker: BrokerProcess) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with RawClient(broker.port) as c:
        create_topic(c, "tx-fence")
    conf = {"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-fence-1"}
    zombie = confluent_kafka.Producer(conf)
    zombie.init_transactions(15)
    zombie.begin_transaction()
    zombie.produce("tx-fence", b"zombie", partition=0)
    zombie.flush(15)
    fresh = confluent_kafka.Producer(conf)
    fresh.init_transactions(15)  # fences the zombie: its open transaction is aborted
    fresh.begin_transaction()
    fresh.produce("tx-fence", b"fresh", partition=0)
    fresh.commit_transaction(15)
    with pytest.raises(confluent_kafka.KafkaException) as failed:
        zombie.commit_transaction(15)
    assert failed.value.args[0].fatal()
    found = markers(broker.data_dir, "tx-fence")
    # The zombie's transaction was aborted with the bumped epoch; the new one committed.
    assert [kind for _, kind, _ in found] == [ABORT, COMMIT]
    assert found[0][2] == found[1][2] - 1 >= 1
    assert confluent_read_committed(broker.bootstrap, "tx-fence", 1) == [b"fresh"]


@pytest.fixture
def quick_timeouts(tmp_path: Path) -> BrokerProcess:
    return BrokerProcess(
        tmp_path / "data",
        {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"},
    )


def test_transaction_left_open_past_its_timeout_is_aborted_by_the_broker(
    quick_timeouts: BrokerProcess,
) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    broker = quick_timeouts.start()
    try:
        with RawClient(broker.port) as c:
            create_topic(c, "tx-timeout")
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "transactional.id": "tx-timeout-1",
                "transaction.timeout.ms": 1000,
            }
        )
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.produce("tx-timeout", b"left-open", partition=0)
        producer.flush(15)
        wait_for(lambda: bool(markers(broker.data_dir, "tx-timeout")))
        ((_, kind, epoch),) = markers(broker.data_dir, "tx-timeout")
        assert kind == ABORT and epoch == 1  # the producer's epoch 0, bumped by the abort
        assert confluent_read_committed(broker.bootstrap, "tx-timeout", 0) == []
    finally:
        broker.stop()
