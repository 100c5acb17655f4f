"""Roll by size and time, retention by time and size, producer expiration, snapshot upkeep."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import parse_header
from storage.log_config import LogConfig
from storage.partition_log import AppendResult, OffsetOutOfRangeError, PartitionLog, RecoveryMode
from storage.segment import file_name
from storage.snapshot import list_snapshots
from tests.storage.test_segment import make_batch

OOO = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
BATCH = len(make_batch(2))
DAY = 86_400_000


def open_log(path: Path, **config: int) -> PartitionLog:
    return PartitionLog.open(path, "r", 0, config=LogConfig(**config))


def produce(
    plog: PartitionLog, *, ts: int, now_ms: int = 0, pid: int = -1, seq: int = -1
) -> AppendResult:
    """Two records; ``ts`` is the batch's max_timestamp."""
    epoch = 0 if pid >= 0 else -1
    batch = make_batch(2, producer_id=pid, epoch=epoch, base_seq=seq, timestamp=ts - 1)
    return plog.append(batch, parse_header(batch), now_ms)


def bases(plog: PartitionLog) -> list[int]:
    return [s.base_offset for s in plog.segments]


def test_log_config_defaults_are_kafkas() -> None:
    c = LogConfig()
    assert (c.segment_bytes, c.segment_ms, c.index_interval_bytes) == (2**30, 7 * DAY, 4096)
    assert (c.retention_ms, c.retention_bytes) == (7 * DAY, -1)
    assert c.flush_messages == c.flush_ms == 2**63 - 1
    with pytest.raises(ValueError):
        LogConfig(segment_bytes=0)
    with pytest.raises(ValueError):
        LogConfig(retention_ms=-2)


def test_roll_by_time_compares_batch_timestamps_with_the_first(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_ms=1000)
    produce(plog, ts=10_000)
    produce(plog, ts=11_000)  # waited exactly segment.ms: not yet (Kafka: strictly more)
    assert bases(plog) == [0]
    produce(plog, ts=11_001)
    assert bases(plog) == [0, 4]
    assert list_snapshots(tmp_path) == [4]  # a snapshot on every roll
    produce(plog, ts=11_500, pid=7, seq=0)
    produce(plog, ts=12_002, pid=7, seq=2)
    assert bases(plog) == [0, 4, 8]
    assert list_snapshots(tmp_path) == [4, 8]
    plog.close()


def test_roll_by_time_without_timestamps_uses_segment_creation(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_ms=1000)
    created = plog.active_segment.created_ms
    produce(plog, ts=-1, now_ms=created + 5)
    produce(plog, ts=-1, now_ms=created + 1000)
    assert bases(plog) == [0]
    produce(plog, ts=-1, now_ms=created + 1001)
    assert bases(plog) == [0, 4]
    plog.close()


def test_retention_by_time_deletes_old_segments_and_moves_the_start(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=2 * BATCH)
    for ts in (100, 200, 300, 400, 500, 600):
        produce(plog, ts=ts)
    assert bases(plog) == [0, 4, 8]
    assert plog.apply_retention(now_ms=1_000, retention_ms=801) == 0
    # Segment [0, 4) has newest timestamp 200: older than 1000 - 799.
    assert plog.apply_retention(now_ms=1_000, retention_ms=799) == 1
    assert (bases(plog), plog.log_start_offset, plog.log_end_offset) == ([4, 8], 4, 12)
    assert not (tmp_path / file_name(0, ".log")).exists()
    assert not (tmp_path / file_name(0, ".index")).exists()
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(3, 100)
    assert parse_header(plog.read(4, 100)).base_offset == 4
    plog.close()
    plog = open_log(tmp_path, segment_bytes=2 * BATCH)
    assert (plog.log_start_offset, plog.log_end_offset) == (4, 12)
    plog.close()


def test_expired_active_segment_is_rolled_then_deleted(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=2 * BATCH)
    for ts in (100, 200, 300):
        produce(plog, ts=ts, pid=9, seq=2 * (ts // 100 - 1))
    assert plog.apply_retention(now_ms=10_000, retention_ms=1_000) == 2
    assert (bases(plog), plog.log_start_offset, plog.log_end_offset) == ([6], 6, 6)
    assert plog.active_segment.size == 0
    # An empty active segment is never deleted.
    assert plog.apply_retention(now_ms=10_000, retention_ms=0) == 0
    plog.close()


def test_retention_in_steps_deletes_the_oldest_first_and_finishes(tmp_path: Path) -> None:
    """``max_segments`` bounds one call (the broker serves others between steps); the steps
    end where one unbounded call would, expired active segment included, size limit after."""
    plog = open_log(tmp_path, segment_bytes=2 * BATCH)
    for ts in range(100, 1_100, 100):
        produce(plog, ts=ts)
    assert bases(plog) == [0, 4, 8, 12, 16]
    assert plog.apply_retention(now_ms=10_000, retention_ms=1_000, max_segments=2) == 2
    assert (bases(plog), plog.log_start_offset) == ([8, 12, 16], 8)
    assert not (tmp_path / file_name(4, ".log")).exists()
    assert plog.apply_retention(now_ms=10_000, retention_ms=1_000, max_segments=2) == 2
    assert plog.apply_retention(now_ms=10_000, retention_ms=1_000, max_segments=2) == 1
    assert (bases(plog), plog.log_start_offset, plog.log_end_offset) == ([20], 20, 20)
    assert plog.apply_retention(now_ms=10_000, retention_ms=1_000, max_segments=2) == 0
    for ts in range(100, 700, 100):
        produce(plog, ts=10_000 + ts)
    assert bases(plog) == [20, 24, 28]
    # By size: 2 segments too many, one per step.
    args = {"now_ms": 10_000, "retention_ms": -1, "retention_bytes": 2 * BATCH}
    assert plog.apply_retention(**args, max_segments=1) == 1
    assert plog.apply_retention(**args, max_segments=1) == 1
    assert plog.apply_retention(**args, max_segments=1) == 0
    assert (bases(plog), plog.log_start_offset) == ([28], 28)
    plog.close()


@pytest.mark.parametrize("mode", ["clean", "crash"])
def test_retention_keeps_the_state_of_producers_with_no_record_left(
    tmp_path: Path, mode: RecoveryMode
) -> None:
    """KAFKA-7190: onLogStartOffsetIncremented forgets no producer; expiration alone does."""
    plog = open_log(tmp_path, segment_bytes=2 * BATCH)
    for ts in (100, 200, 300):
        produce(plog, ts=ts, pid=9, seq=2 * (ts // 100 - 1))
    assert plog.apply_retention(now_ms=10_000, retention_ms=1_000) == 2
    assert plog.log_start_offset == plog.log_end_offset == 6
    entry = plog.producers.get(9)
    assert entry is not None and (entry.last_seq, entry.last_offset) == (5, 5)
    assert produce(plog, ts=10_000, pid=9, seq=2).base_offset == 2  # duplicate
    assert produce(plog, ts=10_000, pid=9, seq=77).error == OOO
    if mode == "clean":
        plog.close()
    else:
        plog.close_unclean()
    plog = PartitionLog.open(tmp_path, "r", 0, config=LogConfig(segment_bytes=2 * BATCH), mode=mode)
    assert plog.log_start_offset == plog.log_end_offset == 6
    assert produce(plog, ts=10_000, pid=9, seq=4).base_offset == 4
    assert produce(plog, ts=10_000, pid=9, seq=77).error == OOO
    assert produce(plog, ts=10_000, pid=9, seq=6).base_offset == 6
    plog.close()


@pytest.mark.parametrize("mode", ["clean", "crash"])
def test_delete_records_keeps_the_state_of_producers_with_no_record_left(
    tmp_path: Path, mode: RecoveryMode
) -> None:
    plog = open_log(tmp_path, segment_bytes=2 * BATCH)
    produce(plog, ts=100, pid=9, seq=0)  # offsets 0-1
    produce(plog, ts=200, pid=9, seq=2)  # 2-3
    produce(plog, ts=300, pid=8, seq=0)  # 4-5, second segment
    assert plog.delete_records_before(6) == 6
    assert produce(plog, ts=400, pid=9, seq=2).base_offset == 2
    assert produce(plog, ts=400, pid=8, seq=0).base_offset == 4
    assert produce(plog, ts=400, pid=9, seq=6).error == OOO
    if mode == "clean":
        plog.close()
    else:
        plog.close_unclean()
    plog = PartitionLog.open(tmp_path, "r", 0, config=LogConfig(segment_bytes=2 * BATCH), mode=mode)
    plog.restore_log_start_offset(6)  # the store's log-start-offset checkpoint
    assert plog.log_start_offset == plog.log_end_offset == 6
    assert produce(plog, ts=400, pid=9, seq=2).base_offset == 2
    assert produce(plog, ts=400, pid=8, seq=0).base_offset == 4
    assert produce(plog, ts=400, pid=9, seq=6).error == OOO
    assert produce(plog, ts=400, pid=9, seq=4).base_offset == 6
    plog.close()


def test_retention_minus_one_keeps_everything(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=BATCH)
    for _ in range(4):
        produce(plog, ts=1)
    assert plog.apply_retention(now_ms=10**12, retention_ms=-1, retention_bytes=-1) == 0
    # Defaults: 7 days, size unlimited. All four expired: roll, then delete them all.
    assert plog.apply_retention(now_ms=10**12) == 4
    assert (bases(plog), plog.log_start_offset, plog.log_end_offset) == ([8], 8, 8)
    plog.close()


def test_retention_by_size_deletes_oldest_while_over_the_limit(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=2 * BATCH, retention_ms=-1)
    for _ in range(7):
        produce(plog, ts=0)
    assert bases(plog) == [0, 4, 8, 12]
    assert plog.size == 7 * BATCH
    # Kafka's rule: delete while size - segment.size >= retention.bytes.
    assert plog.apply_retention(now_ms=0, retention_bytes=5 * BATCH + 1) == 0
    assert plog.apply_retention(now_ms=0, retention_bytes=5 * BATCH) == 1
    assert plog.apply_retention(now_ms=0, retention_bytes=2 * BATCH) == 1
    assert (bases(plog), plog.log_start_offset) == ([8, 12], 8)
    assert plog.apply_retention(now_ms=0, retention_bytes=0) == 2  # even the active one
    assert (bases(plog), plog.log_start_offset, plog.log_end_offset) == ([14], 14, 14)
    plog.close()


def test_retention_by_size_keeps_every_producers_state(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=2 * BATCH, retention_ms=-1)
    produce(plog, ts=0, pid=1, seq=0)  # offsets 0-1
    produce(plog, ts=0, pid=2, seq=0)  # 2-3
    produce(plog, ts=0, pid=2, seq=2)  # 4-5, second segment
    produce(plog, ts=0, pid=3, seq=0)  # 6-7
    assert plog.apply_retention(now_ms=0, retention_bytes=2 * BATCH) == 1
    # Producer 1 has no record left and is still known: its retry is a duplicate.
    assert produce(plog, ts=0, pid=1, seq=0).base_offset == 0
    assert produce(plog, ts=0, pid=1, seq=500).error == OOO
    # Producer 2's window still holds its deleted batch.
    assert produce(plog, ts=0, pid=2, seq=0).base_offset == 2
    assert produce(plog, ts=0, pid=2, seq=8).error == OOO
    plog.close()
    plog = open_log(tmp_path, segment_bytes=2 * BATCH, retention_ms=-1)
    assert produce(plog, ts=0, pid=1, seq=0).base_offset == 0
    assert produce(plog, ts=0, pid=2, seq=2).base_offset == 4
    assert produce(plog, ts=0, pid=2, seq=8).error == OOO
    plog.close()


def test_snapshots_below_the_start_go_and_only_a_few_are_kept(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=BATCH, retention_ms=-1)
    for i in range(8):
        produce(plog, ts=0, pid=5, seq=2 * i)
    assert list_snapshots(tmp_path) == [10, 12, 14]
    assert plog.apply_retention(now_ms=0, retention_bytes=2 * BATCH) == 6
    assert plog.log_start_offset == 12
    # 12 and 14 (the rolls') are at or above the new start: no other is needed before it
    # moves, so the producer state on disk never lies wholly below the log start.
    assert list_snapshots(tmp_path) == [12, 14]
    plog.close()  # the closing snapshot at the log end
    assert list_snapshots(tmp_path) == [12, 14, 16]


def test_expire_producers_after_idle_time(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    # The clock is the batch's max timestamp, not the time of the append (Kafka's
    # ProducerStateEntry.lastTimestamp).
    produce(plog, ts=1_000, now_ms=9_999_999, pid=1, seq=0)
    produce(plog, ts=5_000, now_ms=9_999_999, pid=2, seq=0)
    assert plog.expire_producers(now_ms=1_000 + DAY - 1, expiration_ms=DAY) == 0
    assert plog.expire_producers(now_ms=1_000 + DAY, expiration_ms=DAY) == 1
    assert plog.producers.get(1) is None and plog.producers.get(2) is not None
    assert produce(plog, ts=0, pid=1, seq=42).error == ErrorCode.NONE
    assert plog.maybe_snapshot(now_ms=0)
    plog.close()
    plog = open_log(tmp_path)
    entry = plog.producers.get(2)
    assert entry is not None and entry.last_timestamp_ms == 5_000  # kept by the snapshot
    plog.close()


def test_expiration_clock_is_the_same_at_run_time_and_after_a_crash_replay(
    tmp_path: Path,
) -> None:
    plog = open_log(tmp_path)
    # Appended long after the batches were created (a lingering or retried batch).
    produce(plog, ts=1_000, now_ms=500_000, pid=1, seq=0)
    produce(plog, ts=3_000, now_ms=500_000, pid=1, seq=2)
    produce(plog, ts=2_000, now_ms=500_000, pid=2, seq=0)
    at_run_time = {e.producer_id: e.last_timestamp_ms for e in plog.producers}
    assert at_run_time == {1: 3_000, 2: 2_000}
    plog.close_unclean()
    assert list_snapshots(tmp_path) == []  # nothing to restore from: a full replay
    plog = open_log(tmp_path)
    assert plog.recovery.replayed_batches == 3
    assert {e.producer_id: e.last_timestamp_ms for e in plog.producers} == at_run_time
    # So a producer lives exactly as long after a crash as without one.
    assert plog.expire_producers(now_ms=2_000 + DAY - 1, expiration_ms=DAY) == 0
    assert plog.expire_producers(now_ms=2_000 + DAY, expiration_ms=DAY) == 1
    assert [e.producer_id for e in plog.producers] == [1]
    plog.close()


def test_files_on_disk_after_retention(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=BATCH, retention_ms=-1)
    for _ in range(3):
        produce(plog, ts=0)
    plog.apply_retention(now_ms=0, retention_bytes=BATCH)
    plog.close()
    assert sorted(os.listdir(tmp_path)) == [
        file_name(4, ".index"),
        file_name(4, ".log"),
        file_name(4, ".snapshot"),
        file_name(6, ".snapshot"),
    ]
