"""Log compaction seen from outside, checked on the segment files (COMPACTION_NOTES.md):
Kafka 4.0's cleaner semantics with real clients producing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess, running
from tests.support.compaction import batch_headers, first_segment, leftovers, read_partition
from tests.support.polling import until_sync

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")

COMPACTED = {
    "cleanup.policy": "compact",
    "segment.ms": "500",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "3000",
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(tmp_path / "data", {"log.cleaner.backoff.ms": "200"}) as proc:
        yield proc


def create(broker: BrokerProcess, topic: str, partitions: int = 1, **configs: str) -> None:
    admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    new = confluent_admin.NewTopic(topic, partitions, 1, config=configs)
    admin.create_topics([new])[topic].result(15)


class Ticker:
    """A record with a fresh key every ~600 ms, so segments keep rolling (segment.ms)."""

    def __init__(self, broker: BrokerProcess, topic: str, partitions: int = 1) -> None:
        self.producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
        self.topic, self.partitions = topic, partitions
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self.stop.wait(0.6):
            for p in range(self.partitions):
                self.producer.produce(self.topic, b"tick", key=b"tick-%d" % n, partition=p)
            self.producer.flush(5)
            n += 1

    def __enter__(self) -> Ticker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def produce_versions(
    broker: BrokerProcess, topic: str, partition: int = 0, **extra: str
) -> dict[bytes, list[int]]:
    """200 keys x 10 versions, then tombstones for keys 0..49; offsets by key."""
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "linger.ms": 5, **extra}
    )
    offsets: dict[bytes, list[int]] = {}

    def done(err: object, msg: object) -> None:
        assert err is None, err
        offsets.setdefault(msg.key(), []).append(msg.offset())  # type: ignore[attr-defined]

    for v in range(10):
        for k in range(200):
            producer.produce(
                topic, b"v%d" % v, key=b"key-%d" % k, partition=partition, on_delivery=done
            )
    for k in range(50):
        producer.produce(topic, None, key=b"key-%d" % k, partition=partition, on_delivery=done)
    assert producer.flush(30) == 0
    return offsets


def superseded_gone(data: Path, topic: str, partition: int = 0) -> bool:
    keys = [r.key for r in read_partition(data, topic, partition) if r.key.startswith(b"key-")]
    return len(keys) == len(set(keys))


def test_issue_case_versions_then_tombstones_go_offsets_kept(broker: BrokerProcess) -> None:
    data = broker.data_dir
    create(broker, "cmp", **COMPACTED)
    with Ticker(broker, "cmp"):
        offsets = produce_versions(broker, "cmp")
        burst_done = time.monotonic()
        assert until_sync(lambda: superseded_gone(data, "cmp"), 15), "versions kept"
        took = time.monotonic() - burst_done
        print(f"superseded versions gone {took:.1f} s after the burst")
        stored = {r.key: r for r in read_partition(data, "cmp") if r.key.startswith(b"key-")}
        for k in range(50, 200):
            r = stored[b"key-%d" % k]
            assert (r.value, r.offset) == (b"v9", offsets[b"key-%d" % k][9])
        # Tombstones first stay, with a delete horizon 3 s after the cleaning that reached
        # them (the batch's deleteHorizonMs).
        horizons = {
            r.header.delete_horizon_ms
            for r in read_partition(data, "cmp")
            if r.value is None and r.key.startswith(b"key-")
        }
        seen_at_ms = time.time() * 1000
        assert horizons and None not in horizons
        assert all(h - seen_at_ms <= 3000 for h in horizons)  # type: ignore[operator]
        assert until_sync(
            lambda: not [r for r in read_partition(data, "cmp") if r.value is None], 15
        ), "tombstones kept"
        gone_at_ms = time.time() * 1000
        print(f"tombstones gone {(gone_at_ms - min(horizons)) / 1000:.1f} s after their horizon")  # type: ignore[type-var]
        assert gone_at_ms >= min(horizons)  # type: ignore[type-var]
        left = read_partition(data, "cmp")
        assert {r.key for r in left if r.key.startswith(b"key-")} == {
            b"key-%d" % k for k in range(50, 200)
        }
    # Offsets kept, with gaps where records went; the log still starts at 0.
    kept = [r.offset for r in left]
    assert kept == sorted(kept) and kept[-1] - kept[0] + 1 > len(kept)
    assert first_segment(data, "cmp") == f"{0:020d}.log"
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "g", "enable.auto.commit": False}
    )
    low, _ = consumer.get_watermark_offsets(confluent_kafka.TopicPartition("cmp", 0), 10)
    assert low == 0
    consumer.assign([confluent_kafka.TopicPartition("cmp", 0, 0)])
    seen: dict[bytes, tuple[int, bytes | None]] = {}
    deadline = time.monotonic() + 15
    while len([k for k in seen if k.startswith(b"key-")]) < 150 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen[msg.key()] = (msg.offset(), msg.value())
    consumer.close()
    assert all(seen[b"key-%d" % k] == (offsets[b"key-%d" % k][9], b"v9") for k in range(50, 200))
    assert took < 10
    assert not leftovers(data, "cmp")


def test_compact_delete_retention_runs_with_the_cleaner(broker: BrokerProcess) -> None:
    data = broker.data_dir
    create(
        broker, "cd", **{**COMPACTED, "cleanup.policy": "compact,delete", "retention.ms": "2000"}
    )
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
    for v in range(3):
        for k in range(20):
            producer.produce("cd", b"v%d" % v, key=b"k%d" % k, partition=0)
    assert producer.flush(10) == 0
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g"})
    tp = confluent_kafka.TopicPartition("cd", 0)

    def emptied() -> bool:
        low, high = consumer.get_watermark_offsets(tp, 5)
        return bool(low == high == 60)

    # Retention (retention.ms after the newest record), not the 5-minute retention task.
    assert until_sync(emptied, 20)
    consumer.close()
    assert read_partition(data, "cd") == []


def test_compressed_transactional_batches_on_several_partitions(broker: BrokerProcess) -> None:
    data = broker.data_dir
    create(broker, "ctx", 3, **COMPACTED)
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": "ctx-1",
            "compression.type": "lz4",
            "linger.ms": 5,
        }
    )
    producer.init_transactions(15)
    for v in range(6):
        producer.begin_transaction()
        for p in range(3):
            for k in range(30):
                producer.produce("ctx", b"v%d" % v, key=b"k%d" % k, partition=p)
        if v in (2, 5):  # versions 2 and 5 are aborted: 4 is the last committed
            producer.flush(15)
            producer.abort_transaction(15)
        else:
            producer.commit_transaction(15)
    with Ticker(broker, "ctx", 3):
        for p in range(3):
            assert until_sync(
                lambda p=p: (
                    {
                        r.key: r.value
                        for r in read_partition(data, "ctx", p)
                        if r.key.startswith(b"k")
                    }
                    == {b"k%d" % k: b"v4" for k in range(30)}
                    and superseded_gone(data, "ctx", p)
                ),
                20,
            ), f"partition {p}: {[(r.key, r.value) for r in read_partition(data, 'ctx', p)][:40]}"
        for p in range(3):
            headers = batch_headers(data, "ctx", p)
            assert any(h.compression == 3 for h in headers if not h.is_control)
            assert not [r for r in read_partition(data, "ctx", p) if r.value in (b"v2", b"v5")]
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "r",
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([confluent_kafka.TopicPartition("ctx", p, 0) for p in range(3)])
    got: dict[tuple[int, bytes], bytes] = {}
    deadline = time.monotonic() + 15
    while len([k for k in got if k[1].startswith(b"k")]) < 90 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got[(msg.partition(), msg.key())] = msg.value()
    consumer.close()
    assert all(got[(p, b"k%d" % k)] == b"v4" for p in range(3) for k in range(30))
