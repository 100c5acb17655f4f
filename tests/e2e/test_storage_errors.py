"""A full disk takes the partition offline, as Kafka's LogDirFailureChannel does (issue 13).

The data directory lives on a small tmpfs made for the test. Once a write fails, appends
whose durability is unknown are not accepted any more: every produce to the partition gets
KAFKA_STORAGE_ERROR, even after space returns, until a restart (Kafka, too, brings a failed
log dir back only with a restart). Reads of what was stored keep being served, nothing
acknowledged is lost, and after the restart the partition accepts appends again.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.produce import (
    batch,
    create_topic,
    fetch_partition,
    init_producer,
    produce,
    stored,
)
from tests.support.raw_client import RawClient

KAFKA_STORAGE_ERROR = 56
RECORD_BYTES = 16 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _grow(mount_point: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", "tmpfs", str(mount_point)], check=True)


def _big_batch(pid: int, sequence: int) -> bytes:
    return batch(pid, 0, sequence, count=1, tag="x" * RECORD_BYTES)


def test_a_full_disk_answers_storage_error_serves_reads_and_recovers_after_restart(
    small_disk: Path,
) -> None:
    data_dir = small_disk / "data"
    broker = BrokerProcess(data_dir).start()
    acknowledged: list[tuple[int, int]] = []  # (base offset, base sequence)
    try:
        with RawClient(broker.port) as client:
            create_topic(client, "full")
            pid = init_producer(client)
            sequence = 0
            for _ in range(1000):  # 4 MiB / 16 KiB: full long before this
                answer = produce(client, "full", _big_batch(pid, sequence))
                if answer.error_code != 0:
                    break
                acknowledged.append((answer.base_offset, sequence))
                sequence += 1
            assert answer.error_code == KAFKA_STORAGE_ERROR, answer
            assert acknowledged, "nothing fitted on the disk"
            broker.wait_for_log(r"full-0.*offline")

            # Space returns, but the partition stays offline until a restart, as in Kafka.
            _grow(small_disk, "64m")
            retry = produce(client, "full", _big_batch(pid, sequence))
            assert retry.error_code == KAFKA_STORAGE_ERROR, retry

            # What was acknowledged is still served, up to the last acknowledged batch.
            for offset in (0, len(acknowledged) - 1):
                part = fetch_partition(client, "full", offset)
                assert (part.error_code, part.high_watermark) == (0, len(acknowledged)), part
                assert part.records, f"no records at offset {offset}"
        broker.stop()
        broker = BrokerProcess(data_dir).start()
        with RawClient(broker.port) as client:
            after = produce(client, "full", _big_batch(pid, sequence))
            assert after.error_code == 0, after
            assert after.base_offset == len(acknowledged)
    finally:
        broker.stop() if broker.is_running() else broker.kill()
    # Every acknowledged batch is in the segment files once, in order, then the new one.
    batches = stored(data_dir, "full")
    assert [(h.base_offset, h.base_sequence) for h, _ in batches] == [
        *acknowledged,
        (len(acknowledged), sequence),
    ]
