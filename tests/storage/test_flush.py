"""Flush policy (flush.messages / flush.ms, rolled segments) and flushing from a thread."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from protocol.records import parse_header
from storage import partition_log as partition_log_module
from storage.log_config import LogConfig
from storage.partition_log import PartitionLog
from tests.storage.test_segment import make_batch

BATCH = len(make_batch(3))


def open_log(path: Path, **config: int) -> PartitionLog:
    return PartitionLog.open(path, "f", 0, config=LogConfig(**config))


def produce(plog: PartitionLog, n: int = 3) -> None:
    batch = make_batch(n)
    plog.append(batch, parse_header(batch), now_ms=0)


def test_default_policy_never_asks_for_a_flush(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    for _ in range(100):
        produce(plog)
    assert plog.unflushed_messages == 300
    assert not plog.needs_flush(now_ms=plog.last_flush_ms + 10**12)
    plog.close()


def test_flush_messages_counts_records(tmp_path: Path) -> None:
    plog = open_log(tmp_path, flush_messages=7)
    produce(plog)
    produce(plog)
    assert not plog.needs_flush(now_ms=0)
    produce(plog)
    assert plog.unflushed_messages == 9 and plog.needs_flush(now_ms=0)
    plog.flush(now_ms=123)
    assert (plog.unflushed_messages, plog.last_flush_ms, plog.recovery_point) == (0, 123, 9)
    assert not plog.needs_flush(now_ms=0)
    plog.close()


def test_flush_ms_counts_from_the_last_flush(tmp_path: Path) -> None:
    plog = open_log(tmp_path, flush_ms=1000)
    plog.flush(now_ms=5_000)
    assert not plog.needs_flush(now_ms=10_000)  # nothing unflushed
    produce(plog)
    assert not plog.needs_flush(now_ms=5_999)
    assert plog.needs_flush(now_ms=6_000)
    plog.flush(now_ms=6_000)
    assert not plog.needs_flush(now_ms=6_000)
    plog.close()


def test_a_rolled_segment_asks_for_a_flush_whatever_the_policy(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=2 * BATCH)
    produce(plog)
    produce(plog)
    assert not plog.needs_flush(now_ms=0)
    produce(plog)  # rolls
    assert plog.needs_flush(now_ms=0)
    first = plog.segments[0]
    assert first.dirty
    plog.flush()
    assert not first.dirty and not plog.active_segment.dirty
    assert not plog.needs_flush(now_ms=0)
    plog.close()


def test_appends_during_the_fsync_stay_unflushed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends and even retention may run while another thread is inside the fsync."""
    plog = open_log(tmp_path, segment_bytes=2 * BATCH, retention_ms=-1)
    for _ in range(3):
        produce(plog)
    real_fsync = os.fsync
    interleaved = False

    def fsync(fd: int) -> None:
        nonlocal interleaved
        if not interleaved:
            interleaved = True
            produce(plog)  # the event loop appends meanwhile...
            produce(plog)  # ...rolls...
            assert plog.apply_retention(now_ms=0, retention_bytes=2 * BATCH) == 1  # ...deletes
        real_fsync(fd)

    monkeypatch.setattr(partition_log_module.os, "fsync", fsync)
    plog.flush()
    monkeypatch.setattr(partition_log_module.os, "fsync", real_fsync)
    assert interleaved
    # Only what existed when the flush began counts as flushed.
    assert plog.recovery_point == 9
    assert plog.unflushed_messages == 6
    assert plog.needs_flush(now_ms=0)  # the newest rolled segment is not on disk yet
    plog.flush()
    assert plog.unflushed_messages == 0
    assert not any(s.dirty for s in plog.segments)
    plog.close()


def test_flush_from_a_worker_thread_while_appending(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=20 * BATCH)
    done = threading.Event()
    errors: list[BaseException] = []

    def flusher() -> None:
        try:
            while not done.is_set():
                plog.flush()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    worker = threading.Thread(target=flusher)
    worker.start()
    try:
        for _ in range(100):
            produce(plog)
    finally:
        done.set()
        worker.join()
    assert errors == []
    plog.flush()
    assert plog.unflushed_messages == 0 and plog.recovery_point == 300
    plog.close()
    plog = open_log(tmp_path, segment_bytes=20 * BATCH)
    assert plog.log_end_offset == 300
    plog.close()


def test_flush_after_close_is_harmless(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    produce(plog)
    plog.close()
    plog.flush()
