"""Roll by size and time, retention by time and size, producer expiration, snapshot upkeep."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import parse_header
from storage.log_config import LogConfig
from storage.partition_log import AppendResult, OffsetOutOfRangeError, PartitionLog
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
    # Producer 9 has no record left: it is unknown, so any sequence is accepted (KIP-360).
    assert plog.producers.get(9) is None
    assert produce(plog, ts=10_000, pid=9, seq=77).base_offset == 6
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


def test_producers_with_records_left_keep_their_state(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=2 * BATCH, retention_ms=-1)
    produce(plog, ts=0, pid=1, seq=0)  # offsets 0-1
    produce(plog, ts=0, pid=2, seq=0)  # 2-3
    produce(plog, ts=0, pid=2, seq=2)  # 4-5, second segment
    produce(plog, ts=0, pid=3, seq=0)  # 6-7
    assert plog.apply_retention(now_ms=0, retention_bytes=2 * BATCH) == 1
    assert plog.producers.get(1) is None
    assert produce(plog, ts=0, pid=1, seq=500).error == ErrorCode.NONE
    # Producer 2's last batch survives: its state too, including the deleted batch.
    assert produce(plog, ts=0, pid=2, seq=0).base_offset == 2
    assert produce(plog, ts=0, pid=2, seq=8).error == OOO
    plog.close()
    plog = open_log(tmp_path, segment_bytes=2 * BATCH, retention_ms=-1)
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
    assert list_snapshots(tmp_path) == [12, 14]
    plog.close()
    assert list_snapshots(tmp_path) == [12, 14, 16]


def test_expire_producers_after_idle_time(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    produce(plog, ts=0, now_ms=1_000, pid=1, seq=0)
    produce(plog, ts=0, now_ms=5_000, pid=2, seq=0)
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
