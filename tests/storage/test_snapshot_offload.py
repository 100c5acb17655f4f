"""The periodic producer-state snapshot in two halves (issue 13): encoded on the owner's
thread (PartitionLog.prepare_snapshot), written on a worker thread (PendingSnapshot.write),
settled on the owner's thread (finish_snapshot). Checked on the files and through recovery."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.records import parse_header
from storage import partition_log, segment
from storage import snapshot as snapshots
from storage.partition_log import PartitionLog, PendingSnapshot
from storage.snapshot import list_snapshots
from tests.storage.test_recovery import PID, assert_window, open_log, produce, produce_window
from tests.storage.test_segment import make_batch

RETENTION_MS = 3_600_000
OLD = 1_000_000
# Just inside the log's own retention.ms (7 days) from the old batches.
NOW = OLD + 7 * 86_400_000


def test_the_snapshot_holds_the_state_when_prepared_and_recovery_replays_the_rest(
    tmp_path: Path,
) -> None:
    plog = open_log(tmp_path)
    offsets = produce_window(plog, 3)
    pending = plog.prepare_snapshot()
    assert pending is not None and plog.prepare_snapshot() is None  # one in flight
    offsets += produce_window(plog, 4, first_seq=6)  # appends go on meanwhile
    writer = threading.Thread(target=pending.write)
    writer.start()
    writer.join()
    plog.finish_snapshot(pending)
    assert list_snapshots(tmp_path) == [6]
    plog.close_unclean()
    plog = open_log(tmp_path)
    assert (plog.recovery.snapshot_offset, plog.recovery.replayed_batches) == (6, 4)
    assert_window(plog, offsets, 0)
    plog.close()


def test_a_failed_write_is_tried_again_by_the_next_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plog = open_log(tmp_path)
    produce_window(plog, 2)
    pending = plog.prepare_snapshot()
    assert pending is not None

    def full(dir_fd: int, offset: int, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshots, "write_snapshot_at", full)
    with pytest.raises(OSError):
        pending.write()
    plog.finish_snapshot(pending)
    monkeypatch.undo()
    again = plog.prepare_snapshot()
    assert again is not None and again.offset == 4
    again.write()
    plog.finish_snapshot(again)
    assert list_snapshots(tmp_path) == [4] and plog.prepare_snapshot() is None
    plog.close()


def test_take_snapshot_waits_for_the_write_in_flight(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    produce_window(plog, 2)
    pending = plog.prepare_snapshot()
    assert pending is not None
    timer = threading.Timer(0.05, pending.write)
    timer.start()
    assert not plog.take_snapshot()  # the same snapshot: written once, by the worker
    assert pending.done.is_set() and pending.settled
    assert list_snapshots(tmp_path) == [4]
    plog.close()


def test_a_directory_renamed_meanwhile_gets_the_file_not_a_new_one_at_its_old_name(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t-0"
    path.mkdir()
    plog = open_log(path)
    produce_window(plog, 2)
    pending = plog.prepare_snapshot()
    assert pending is not None
    os.rename(path, tmp_path / "t-0.abc-delete")  # DeleteTopics
    path.mkdir()  # the topic created again
    pending.write()
    assert list_snapshots(path) == []
    assert list_snapshots(tmp_path / "t-0.abc-delete") == [4]
    plog.close_unclean()


def test_with_a_writer_a_roll_hands_its_snapshot_over_instead_of_writing_it(
    tmp_path: Path,
) -> None:
    plog = open_log(tmp_path, segment_bytes=300)
    handed: list[PendingSnapshot] = []
    plog.snapshot_writer = handed.append
    offsets = produce_window(plog, 6)  # rolls at least once
    assert handed and list_snapshots(tmp_path) == []  # nothing written on the append path
    first = handed[0]
    first.write()
    plog.finish_snapshot(first)
    assert list_snapshots(tmp_path) == [first.offset]
    for job in handed[1:]:
        job.write()
        plog.finish_snapshot(job)
    plog.close_unclean()
    plog = open_log(tmp_path, segment_bytes=300)
    assert plog.recovery.snapshot_offset == handed[-1].offset
    assert_window(plog, offsets, 0)
    plog.close()


def test_an_owner_that_needs_a_snapshot_written_does_not_wait_for_a_busy_worker(
    tmp_path: Path,
) -> None:
    plog = open_log(tmp_path)
    produce_window(plog, 2)
    pending = plog.prepare_snapshot()
    assert pending is not None
    plog.close()  # its closing snapshot writes the pending one in line: no worker ever ran
    assert pending.done.is_set() and list_snapshots(tmp_path) == [4]
    pending.write()  # the worker, late: nothing left to do
    assert list_snapshots(tmp_path) == [4]


def test_a_roll_leaves_the_directory_fsync_to_the_next_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plog = open_log(tmp_path, segment_bytes=300)
    plog.snapshot_writer = lambda pending: None  # not written here
    synced: list[Path] = []
    real = partition_log.fsync_dir

    def counting(path: Path) -> None:
        synced.append(Path(path))
        real(path)

    monkeypatch.setattr(partition_log, "fsync_dir", counting)
    monkeypatch.setattr(segment, "fsync_dir", counting)
    produce_window(plog, 6)  # rolls
    assert synced == []  # nothing on the append path
    plog.flush()
    assert synced == [tmp_path]
    plog.flush()
    assert synced == [tmp_path]  # once per roll, not per flush
    plog.close()


def _produce_at(plog: PartitionLog, ts: int) -> int:
    """An idempotent batch of 2 records (PID's next sequence) with max timestamp ``ts``."""
    seq = plog.log_end_offset  # one producer from offset 0: its sequence is the offset
    batch = make_batch(2, producer_id=PID, epoch=0, base_seq=seq, timestamp=ts - 1)
    return plog.append(batch, parse_header(batch), ts).base_offset


def _expired_log(tmp_path: Path) -> PartitionLog:
    """Old batches fill the first segment; the next ones, recent, keep the rest in."""
    plog = open_log(tmp_path, segment_bytes=300)
    while len(plog.segments) < 2:
        _produce_at(plog, OLD)
    while len(plog.segments) < 3:
        _produce_at(plog, NOW)
    return plog


def _count_inline_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    written: list[int] = []
    real = snapshots.write_snapshot

    def counting(directory: Path, offset: int, recovery_point: int, producers: Any) -> Path:
        written.append(offset)
        return real(directory, offset, recovery_point, producers)

    monkeypatch.setattr(snapshots, "write_snapshot", counting)
    return written


def test_retention_writes_no_snapshot_in_line_when_one_at_or_above_the_new_start_is_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plog = _expired_log(tmp_path)
    assert plog.retention_due(now_ms=NOW + 1)  # the log's retention.ms: 7 days
    pending = plog.prepare_snapshot()  # what the retention pass does first, on the loop
    assert pending is not None
    end = pending.offset
    threading.Thread(target=pending.write).start()
    pending.done.wait()
    plog.finish_snapshot(pending)
    appended = _produce_at(plog, NOW)  # after the snapshot: stays in the log, replayed
    inline = _count_inline_writes(monkeypatch)
    assert plog.apply_retention(now_ms=NOW, retention_ms=RETENTION_MS) == 1
    assert inline == [] and plog.log_start_offset == plog.segments[0].base_offset <= end
    assert end in list_snapshots(tmp_path)
    plog.close_unclean()
    monkeypatch.undo()
    plog = open_log(tmp_path, segment_bytes=300)
    assert (plog.recovery.snapshot_offset, plog.recovery.replayed_batches) == (end, 1)
    assert produce(plog, 2, seq=end).base_offset == appended  # a duplicate (replayed)
    assert produce(plog, 2, seq=end - 2).base_offset == end - 2  # known from the snapshot
    assert produce(plog, 2, seq=77).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    plog.close()


def test_retention_writes_the_snapshot_in_line_when_the_ones_before_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(dir_fd: int, offset: int, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshots, "write_snapshot_at", full)
    plog = open_log(tmp_path, segment_bytes=300)
    handed: list[PendingSnapshot] = []
    plog.snapshot_writer = handed.append
    while len(plog.segments) < 2:
        _produce_at(plog, OLD)
    _produce_at(plog, NOW)
    end = plog.log_end_offset
    assert len(handed) == 1
    with pytest.raises(OSError):
        handed[0].write()  # the roll's snapshot
    plog.finish_snapshot(handed[0])
    pending = plog.prepare_snapshot()  # the retention pass's
    assert pending is not None and pending.offset == end
    with pytest.raises(OSError):
        pending.write()
    plog.finish_snapshot(pending)
    assert list_snapshots(tmp_path) == []
    monkeypatch.undo()
    inline = _count_inline_writes(monkeypatch)
    assert plog.apply_retention(now_ms=NOW, retention_ms=RETENTION_MS) == 1
    assert inline == [end] and list_snapshots(tmp_path) == [end]
    plog.close()


def test_retention_due_changes_nothing_and_agrees_with_apply_retention(tmp_path: Path) -> None:
    plog = _expired_log(tmp_path)
    before = ([s.base_offset for s in plog.segments], list_snapshots(tmp_path))
    assert not plog.retention_due(now_ms=NOW)  # the log's retention.ms: 7 days
    assert plog.retention_due(now_ms=NOW + 1)
    assert ([s.base_offset for s in plog.segments], list_snapshots(tmp_path)) == before
    assert plog.apply_retention(now_ms=NOW) == 0
    assert plog.apply_retention(now_ms=NOW + 1) == 1
    plog.close()
