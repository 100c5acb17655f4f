"""Running out of file descriptors (EMFILE) while appending, rolling or flushing is transient:
the write is refused with a retriable error and nothing written, the partition stays
online, and the same write succeeds once a descriptor is free.

The descriptors really run out: the test lowers this process's RLIMIT_NOFILE and opens
files until the kernel refuses one.
"""

from __future__ import annotations

import errno
import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import parse_header
from storage.partition_log import AppendResult, PartitionLog
from tests.storage.test_partition_log import stored_headers
from tests.storage.test_segment import make_batch

PID = 7000


def open_log(path: Path, segment_bytes: int) -> PartitionLog:
    return PartitionLog.open(path, "t", 0, segment_bytes=segment_bytes, index_interval_bytes=100)


def append(plog: PartitionLog, seq: int, timestamp: int = 1_000) -> AppendResult:
    batch = make_batch(
        2, producer_id=PID, epoch=0, base_seq=seq, value_size=60, timestamp=timestamp
    )
    return plog.append(batch, parse_header(batch), 1)


def listing(path: Path) -> dict[str, int]:
    return {name: (path / name).stat().st_size for name in sorted(os.listdir(path))}


@contextmanager
def no_descriptor_free() -> Iterator[list[int]]:
    """Every descriptor this process may open is open; close some of the yielded ones to
    free them again. The limit is put back afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 8, hard))
    held: list[int] = []
    try:
        while True:
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                assert exc.errno == errno.EMFILE
                break
        yield held
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def free(held: list[int], count: int) -> None:
    for _ in range(count):
        os.close(held.pop())


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "t-0"


def test_a_roll_without_descriptors_is_refused_retriably_and_succeeds_later(path: Path) -> None:
    plog = open_log(path, segment_bytes=400)  # two batches of 197 bytes a segment
    assert append(plog, 0).error == ErrorCode.NONE
    assert append(plog, 2).error == ErrorCode.NONE  # the next one rolls
    before = listing(path)
    with no_descriptor_free() as held:
        refused = append(plog, 4)
        assert refused.error == ErrorCode.REQUEST_TIMED_OUT
        assert plog.offline is None
        assert plog.log_end_offset == 4
        assert len(plog.segments) == 1
        free(held, len(held))
        assert listing(path) == before  # no segment, no empty file left behind
        # The producer's retry (same sequence) is the next batch in order, not a duplicate.
        again = append(plog, 4)
    assert (again.error, again.base_offset) == (ErrorCode.NONE, 4)
    assert len(plog.segments) == 2
    assert append(plog, 6).base_offset == 6
    plog.close()
    reopened = open_log(path, segment_bytes=400)
    assert reopened.log_end_offset == 8
    reopened.close()
    assert stored_headers(path) == [(0, 2, 0), (2, 2, 2), (4, 2, 4), (6, 2, 6)]


def test_a_time_index_entry_without_descriptors_writes_nothing(path: Path) -> None:
    plog = open_log(path, segment_bytes=1 << 20)
    assert append(plog, 0).error == ErrorCode.NONE
    # A segment's time index has no file until its first entry.
    assert not plog.active_segment.time_index_path.exists()
    size = plog.active_segment.size
    with no_descriptor_free() as held:
        # An index entry is due and the timestamp rose: the time index's file is needed.
        refused = append(plog, 2, timestamp=2_000)
        assert refused.error == ErrorCode.REQUEST_TIMED_OUT
        assert (plog.offline, plog.log_end_offset, plog.active_segment.size) == (None, 2, size)
        assert os.path.getsize(plog.active_segment.log_path) == size
        free(held, len(held))
        assert append(plog, 2, timestamp=2_000).base_offset == 2
    assert plog.active_segment.time_index.entries()[-1].timestamp == 2_001  # its max
    plog.close()
    assert stored_headers(path) == [(0, 2, 0), (2, 2, 2)]


def test_a_flush_without_descriptors_fails_and_the_partition_stays_online(path: Path) -> None:
    plog = open_log(path, segment_bytes=300)
    for seq in (0, 2, 4):
        assert append(plog, seq).error == ErrorCode.NONE
    assert plog.needs_flush(1)  # a rolled segment is not on disk yet
    with no_descriptor_free() as held:
        with pytest.raises(OSError) as failed:
            plog.flush()
        assert failed.value.errno == errno.EMFILE
        assert plog.offline is None
        assert plog.recovery_point == 0
        # The new segment's name still needs its directory fsync.
        assert plog._dir_unsynced
        free(held, len(held))
        plog.flush()
    assert plog.recovery_point == 6
    assert append(plog, 6).error == ErrorCode.NONE
    plog.close()
    assert stored_headers(path) == [(0, 2, 0), (2, 2, 2), (4, 2, 4), (6, 2, 6)]


def test_a_directory_fsync_without_descriptors_does_not_take_the_partition_offline(
    path: Path,
) -> None:
    plog = open_log(path, segment_bytes=400)
    for seq in (0, 2, 4):
        assert append(plog, seq).error == ErrorCode.NONE
    # Exactly the descriptors the flush duplicates for its fsyncs: none left to open the
    # directory, whose fsync makes the rolled segment's name durable.
    duplicated = sum(2 + (seg.time_index.fileno() >= 0) for seg in plog.segments if seg.dirty)
    with no_descriptor_free() as held:
        free(held, duplicated)
        with pytest.raises(OSError) as failed:
            plog.flush()
        assert failed.value.errno == errno.EMFILE
        assert plog.offline is None
        assert plog.recovery_point == 0
        free(held, len(held))
        plog.flush()
    assert plog.recovery_point == 6
    assert append(plog, 6).error == ErrorCode.NONE
    plog.close()
    assert stored_headers(path) == [(0, 2, 0), (2, 2, 2), (4, 2, 4), (6, 2, 6)]
