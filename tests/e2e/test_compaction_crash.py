"""SIGKILL while the log cleaner works: 20 kills at random moments under load. After each,
recovery (the broker's own open code, run here on the killed broker's directory) leaves no
.cleaned/.swap file, every acknowledged record's latest value is there and no offset or
record is stored twice."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from protocol.records import decode_records
from storage.partition_log import PartitionLog
from tests.support.broker_process import BrokerProcess
from tests.support.compaction import leftovers

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")

KILLS = 20
KEYS = 40
SETTINGS = {"log.cleaner.backoff.ms": "20"}
TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "100",
}


def recovered(data: Path) -> dict[bytes, tuple[int, int]]:
    """Open the partition as the next start would (crash mode) and read it: key -> (latest
    version, offset); asserts offsets strictly increase."""
    plog = PartitionLog.open(data / "crash-0", "crash", 0, mode="crash")
    try:
        latest: dict[bytes, tuple[int, int]] = {}
        last_offset = -1
        for header, batch in plog.batches(0):
            assert header.base_offset > last_offset
            last_offset = header.last_offset
            if header.is_control or not header.records_count:
                continue
            for r in decode_records(batch, header):
                assert r.key is not None and r.value is not None
                version = int(r.value)
                key_offset = header.base_offset + r.offset_delta
                if r.key in latest:
                    # Compaction keeps order: a later offset never holds an older version.
                    assert version > latest[r.key][0], (r.key, version, latest[r.key])
                latest[r.key] = (version, key_offset)
        return latest
    finally:
        plog.close()


def test_sigkill_during_cleaning_loses_nothing_acknowledged(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rng = random.Random(30)
    acked: dict[bytes, int] = {}
    version = 0
    port = 0
    cleanings = 0
    lock = threading.Lock()
    for round_ in range(KILLS):
        listeners = {"listeners": f"PLAINTEXT://127.0.0.1:{port}"}
        broker = BrokerProcess(data, {**SETTINGS, **listeners}).start()
        port = broker.port
        try:
            if round_ == 0:
                admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
                new = confluent_admin.NewTopic("crash", 1, 1, config=TOPIC_CONFIGS)
                admin.create_topics([new])["crash"].result(15)
            producer = confluent_kafka.Producer(
                {
                    "bootstrap.servers": broker.bootstrap,
                    "enable.idempotence": True,
                    "linger.ms": 2,
                    "message.timeout.ms": 5000,
                }
            )

            def done(err: object, msg: object) -> None:
                if err is None:
                    key, value = msg.key(), int(msg.value())  # type: ignore[attr-defined]
                    with lock:
                        acked[key] = max(acked.get(key, -1), value)

            kill_at = time.monotonic() + rng.uniform(0.3, 1.5)
            while time.monotonic() < kill_at:
                for k in range(KEYS):
                    version += 1
                    producer.produce(
                        "crash", b"%d" % version, key=b"k%d" % k, partition=0, on_delivery=done
                    )
                producer.poll(0.005)
        finally:
            broker.kill()
        cleanings += broker.log_text().count("Cleaned log crash-0")
        producer.flush(0.5)  # deliver the reports of what was answered before the kill
        with lock:
            expected = dict(acked)
        latest = recovered(data)
        assert not leftovers(data, "crash")
        for key, v in expected.items():
            # The latest acknowledged version, or a later one that reached the log unanswered.
            assert key in latest and latest[key][0] >= v, (round_, key, v, latest.get(key))
    # The kills came while the cleaner was at work: it cleaned many times over the rounds.
    assert cleanings >= KILLS
