"""PartitionLog recovery at open: torn tails, corrupt or missing snapshots and indexes,
and the five-batch duplicate window surviving clean and unclean restarts."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import parse_header
from storage import segment as segment_module
from storage.log_config import LogConfig
from storage.partition_log import AppendResult, PartitionLog, RecoveryMode
from storage.segment import file_name
from storage.snapshot import list_snapshots, snapshot_path, write_snapshot
from tests.storage.test_segment import make_batch

OOO = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
PID = 4000


def open_log(
    path: Path, mode: RecoveryMode = "crash", segment_bytes: int = 1 << 20, interval: int = 256
) -> PartitionLog:
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval)
    return PartitionLog.open(path, "t", 0, config=config, mode=mode)


def produce(plog: PartitionLog, n: int = 2, *, pid: int = PID, seq: int = 0) -> AppendResult:
    batch = make_batch(n, producer_id=pid, epoch=0 if pid >= 0 else -1, base_seq=seq)
    return plog.append(batch, parse_header(batch), now_ms=1_000)


def produce_window(plog: PartitionLog, batches: int, first_seq: int = 0) -> list[int]:
    """``batches`` idempotent batches of 2 records; returns their base offsets."""
    return [produce(plog, 2, seq=first_seq + 2 * i).base_offset for i in range(batches)]


def assert_window(plog: PartitionLog, offsets: list[int], first_seq: int) -> None:
    """The last five batches are duplicates with their offsets; the sixth-oldest is refused."""
    n = len(offsets)
    for i in range(n - 5, n):
        dup = produce(plog, 2, seq=first_seq + 2 * i)
        assert (dup.error, dup.base_offset) == (ErrorCode.NONE, offsets[i])
    assert produce(plog, 2, seq=first_seq + 2 * (n - 6)).error == OOO
    assert plog.log_end_offset == offsets[-1] + 2  # nothing was written twice


def active_log_file(path: Path) -> Path:
    return path / sorted(n for n in os.listdir(path) if n.endswith(".log"))[-1]


# -- the five-batch window across restarts -------------------------------------------------


@pytest.mark.parametrize("segment_bytes", [1 << 20, 300])
def test_window_survives_clean_restart_from_the_snapshot_alone(
    tmp_path: Path, segment_bytes: int
) -> None:
    plog = open_log(tmp_path, segment_bytes=segment_bytes)
    offsets = produce_window(plog, 8)
    plog.close()
    plog = open_log(tmp_path, "clean", segment_bytes=segment_bytes)
    # Nothing replayed: the whole window came from the snapshot (Kafka's holds one batch).
    assert plog.recovery.snapshot_offset == plog.log_end_offset
    assert plog.recovery.replayed_batches == 0
    assert plog.recovery.crc_checked_bytes == 0
    assert_window(plog, offsets, 0)
    assert produce(plog, 2, seq=16).base_offset == 16
    plog.close()


@pytest.mark.parametrize("mode", ["crash", "clean"])
def test_window_survives_a_crash_without_any_snapshot_by_replay(
    tmp_path: Path, mode: RecoveryMode
) -> None:
    plog = open_log(tmp_path)
    offsets = produce_window(plog, 7)
    plog.close_unclean()
    assert list_snapshots(tmp_path) == []
    plog = open_log(tmp_path, mode)
    assert plog.recovery.snapshot_offset is None and plog.recovery.replayed_batches == 7
    assert list_snapshots(tmp_path) == [14]  # recovery ends with a snapshot
    assert_window(plog, offsets, 0)
    plog.close_unclean()


def test_window_after_crash_combines_snapshot_and_replay(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    offsets = produce_window(plog, 3)
    assert plog.maybe_snapshot(now_ms=5)
    assert not plog.maybe_snapshot(now_ms=6)  # nothing changed since
    offsets += produce_window(plog, 4, first_seq=6)
    plog.close_unclean()
    plog = open_log(tmp_path)
    assert (plog.recovery.snapshot_offset, plog.recovery.replayed_batches) == (6, 4)
    assert_window(plog, offsets, 0)
    plog.close()


def test_window_spanning_a_dropped_object_without_close(tmp_path: Path) -> None:
    """A crash as the lead simulates it: objects dropped, files never closed."""
    first = open_log(tmp_path, segment_bytes=400)
    offsets = produce_window(first, 9)
    second = open_log(tmp_path, segment_bytes=400)
    assert_window(second, offsets, 0)
    second.close()
    first.close_unclean()


# -- torn and corrupt tails --------------------------------------------------------------


@pytest.mark.parametrize("damage", ["cut-mid-batch", "garbage", "flipped-byte", "zeros"])
def test_torn_tail_is_truncated_reported_and_appends_resume(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    plog = open_log(tmp_path)
    offsets = produce_window(plog, 6)
    plog.flush()
    plog.close_unclean()
    seg = active_log_file(tmp_path)
    data = seg.read_bytes()
    last = len(make_batch(2))
    good = len(data) - last
    if damage == "cut-mid-batch":
        seg.write_bytes(data[: good + 40])
    elif damage == "garbage":
        seg.write_bytes(data + b"\x13\x37" * 50)
        good = len(data)
    elif damage == "flipped-byte":
        bad = bytearray(data)
        bad[good + 70] ^= 0x01  # inside the last batch's records: only the CRC notices
        seg.write_bytes(bytes(bad))
    else:
        seg.write_bytes(data + bytes(300))  # a crash after the size grew, before the data
        good = len(data)
    damaged_size = seg.stat().st_size
    caplog.set_level(logging.WARNING, "storage.partition_log")
    plog = open_log(tmp_path)
    [cut] = plog.recovery.truncations
    assert (cut.file, cut.position, cut.bytes_cut) == (seg.name, good, damaged_size - good)
    assert seg.stat().st_size == good
    lost = 1 if damage in ("cut-mid-batch", "flipped-byte") else 0
    assert cut.offset == plog.log_end_offset == offsets[-1] + 2 - 2 * lost
    [record] = [r for r in caplog.records if "truncated" in r.getMessage()]
    assert f"t-0: truncated {cut.bytes_cut} bytes at byte position {good}" in record.getMessage()
    assert f"(offset {cut.offset})" in record.getMessage()
    if lost:
        # The lost batch is gone; its retry is a fresh append at the same offset, and the
        # older four are still duplicates.
        assert produce(plog, 2, seq=10).base_offset == offsets[-1]
    assert_window(plog, offsets, 0)
    plog.close()


def test_clean_mode_still_cuts_a_torn_tail(tmp_path: Path) -> None:
    """A tail that does not parse is noticed even when the marker says clean."""
    plog = open_log(tmp_path)
    produce_window(plog, 3)
    plog.close()
    seg = active_log_file(tmp_path)
    data = seg.read_bytes()
    seg.write_bytes(data[:-10])
    plog = open_log(tmp_path, "clean")
    assert len(plog.recovery.truncations) == 1
    assert plog.log_end_offset == 4
    # The snapshot at 6 describes a batch that is gone: it was deleted, state replayed.
    assert plog.recovery.snapshot_offset is None
    assert produce(plog, 2, seq=4).base_offset == 4
    plog.close()


def test_truncation_in_an_older_segment_drops_the_later_ones(tmp_path: Path) -> None:
    size = len(make_batch(2))
    plog = open_log(tmp_path, segment_bytes=2 * size)
    produce_window(plog, 6)
    assert [s.base_offset for s in plog.segments] == [0, 4, 8]
    plog.close_unclean()
    for name in os.listdir(tmp_path):
        if name.endswith(".snapshot"):
            (tmp_path / name).unlink()  # no recovery point: every segment is checked
    middle = tmp_path / file_name(4, ".log")
    data = bytearray(middle.read_bytes())
    data[size + 70] ^= 0xFF
    middle.write_bytes(bytes(data))
    plog = open_log(tmp_path, segment_bytes=2 * size)
    assert plog.log_end_offset == 6
    assert plog.recovery.segments_dropped == 1
    assert not (tmp_path / file_name(8, ".log")).exists()
    assert produce(plog, 2, seq=6).base_offset == 6
    plog.close()


def test_crash_checks_only_segments_from_the_recovery_point(tmp_path: Path) -> None:
    size = len(make_batch(2))
    plog = open_log(tmp_path, segment_bytes=3 * size)
    produce_window(plog, 8)
    assert plog.needs_flush(now_ms=0)  # two rolled segments are not on disk yet
    plog.flush()
    assert not plog.needs_flush(now_ms=0) and plog.recovery_point == 16
    produce_window(plog, 1, first_seq=16)
    plog.maybe_snapshot(now_ms=0)
    plog.close_unclean()
    plog = open_log(tmp_path, segment_bytes=3 * size)
    assert plog.recovery.checked_segments == 1
    assert plog.recovery.crc_checked_bytes == 3 * size
    plog.close()


# -- indexes and snapshots ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["crash", "clean"])
@pytest.mark.parametrize("damage", ["missing", "garbage", "stale-last-entry"])
def test_missing_or_damaged_index_is_rebuilt(
    tmp_path: Path, mode: RecoveryMode, damage: str
) -> None:
    plog = open_log(tmp_path, interval=100)
    offsets = produce_window(plog, 30)
    plog.close()
    index = tmp_path / file_name(0, ".index")
    good = index.read_bytes()
    assert len(good) >= 8 * 10
    if damage == "missing":
        index.unlink()
    elif damage == "garbage":
        index.write_bytes(b"\x00\x00\x00\x05\x7f\xff\xff\xff" + b"\x01\x02\x03")
    else:
        entry = bytearray(good[-8:])
        entry[3] ^= 0x01  # the last entry names another offset than the batch it points at
        index.write_bytes(good[:-8] + bytes(entry))
    plog = open_log(tmp_path, mode, interval=100)
    assert plog.recovery.indexes_rebuilt == 1
    assert index.read_bytes() == good
    for offset in offsets:
        assert parse_header(plog.read(offset + 1, 1)).base_offset == offset
    assert_window(plog, offsets, 0)
    plog.close()


@pytest.mark.parametrize("mode", ["crash", "clean"])
def test_corrupt_snapshot_is_set_aside_and_an_older_one_used(
    tmp_path: Path, mode: RecoveryMode
) -> None:
    plog = open_log(tmp_path)
    offsets = produce_window(plog, 4)
    plog.take_snapshot()
    offsets += produce_window(plog, 3, first_seq=8)
    plog.close()
    assert list_snapshots(tmp_path) == [8, 14]
    newest = snapshot_path(tmp_path, 14)
    data = bytearray(newest.read_bytes())
    data[-3] ^= 0x10
    newest.write_bytes(bytes(data))
    plog = open_log(tmp_path, mode)
    assert plog.recovery.snapshots_set_aside == [14]
    assert (plog.recovery.snapshot_offset, plog.recovery.replayed_batches) == (8, 3)
    assert (tmp_path / (newest.name + ".corrupt")).read_bytes() == data
    assert list_snapshots(tmp_path) == [8, 14]  # a fresh one written after recovery
    assert_window(plog, offsets, 0)
    plog.close()


def test_missing_snapshot_means_replay_from_the_log_start(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    offsets = produce_window(plog, 6)
    plog.close()
    for offset in list_snapshots(tmp_path):
        snapshot_path(tmp_path, offset).unlink()
    plog = open_log(tmp_path, "clean")
    assert (plog.recovery.snapshot_offset, plog.recovery.replayed_batches) == (None, 6)
    assert_window(plog, offsets, 0)
    plog.close()


def test_snapshot_above_the_log_end_is_deleted(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    offsets = produce_window(plog, 6)
    plog.close_unclean()
    # Written by a process whose last batches never reached the disk.
    write_snapshot(tmp_path, 50, 0, [])
    plog = open_log(tmp_path)
    assert 50 not in list_snapshots(tmp_path)
    assert plog.recovery.replayed_batches == 6
    assert_window(plog, offsets, 0)
    plog.close()


def test_leftovers_of_interrupted_writes_are_removed(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    produce_window(plog, 2)
    plog.close()
    (tmp_path / "00000000000000000004.snapshot.tmp").write_bytes(b"half")
    (tmp_path / file_name(99, ".index")).write_bytes(b"")  # its .log was already deleted
    plog = open_log(tmp_path)
    assert sorted(os.listdir(tmp_path)) == [
        file_name(0, ".index"),
        file_name(0, ".log"),
        file_name(4, ".snapshot"),
    ]
    plog.close()


@pytest.mark.parametrize("mode", ["crash", "clean"])
def test_snapshot_of_a_producer_with_epoch_minus_one_is_loaded_not_set_aside(
    tmp_path: Path, mode: RecoveryMode
) -> None:
    plog = open_log(tmp_path)
    batches = [make_batch(2, producer_id=PID, epoch=-1, base_seq=2 * i) for i in range(3)]
    for b in batches:
        assert plog.append(b, parse_header(b), now_ms=1_000).error == ErrorCode.NONE
    plog.close()
    assert list_snapshots(tmp_path) == [6]
    plog = open_log(tmp_path, mode)
    assert plog.recovery.snapshots_set_aside == []
    assert (plog.recovery.snapshot_offset, plog.recovery.replayed_batches) == (6, 0)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".corrupt")]
    entry = plog.producers.get(PID)
    assert entry is not None and (entry.epoch, entry.last_seq) == (-1, 5)
    retry = make_batch(2, producer_id=PID, epoch=-1, base_seq=2)
    assert plog.append(retry, parse_header(retry), now_ms=1_000).base_offset == 2
    plog.close()


def test_corrupt_snapshot_leftovers_are_removed_at_open(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    offsets = produce_window(plog, 2)
    plog.close()
    # Set aside by an earlier open (kept for inspection until the next one).
    (tmp_path / (file_name(2, ".snapshot") + ".corrupt")).write_bytes(b"bad")
    (tmp_path / (file_name(9, ".snapshot") + ".corrupt")).write_bytes(b"")
    plog = open_log(tmp_path)
    assert sorted(os.listdir(tmp_path)) == [
        file_name(0, ".index"),
        file_name(0, ".log"),
        file_name(4, ".snapshot"),
    ]
    assert produce(plog, 2, seq=2).base_offset == offsets[1]
    plog.close()


def test_clean_open_reads_only_the_tail_of_a_big_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plog = open_log(tmp_path, interval=4096)
    for _ in range(400):
        produce(plog, 20, pid=-1)
    plog.close()
    size = os.path.getsize(tmp_path / file_name(0, ".log"))
    read = 0
    real = segment_module.Segment._pread

    def counting(self: segment_module.Segment, length: int, pos: int) -> bytes:
        nonlocal read
        data = real(self, length, pos)
        read += len(data)
        return data

    monkeypatch.setattr(segment_module.Segment, "_pread", counting)
    plog = open_log(tmp_path, "clean", interval=4096)
    assert plog.log_end_offset == 8000
    assert read < 4096 + 2 * segment_module._CHUNK < size
    plog.close()
    read = 0
    plog = open_log(tmp_path, "crash", interval=4096)
    assert read >= size  # crash mode reads (and CRC-checks) the active segment whole
    plog.close()
