"""One log segment: ``<20-digit base offset>.log`` plus its sparse ``.index``.

The ``.log`` file is the concatenation of RecordBatch v2 wire bytes exactly as appended (base
offset and leader epoch already patched), so Fetch can serve them unchanged (KAFKA_NOTES §4).
Sizes and positions are int32 as in Kafka, which caps a segment at 2 GiB.

Opening comes in two strengths, as in Kafka's LogLoader:

- ``trust_index=True`` (after a clean shutdown, or below the recovery point): trust the index
  and the file size; only the batches after the last index entry are walked to find the log
  end, so a 1 GiB segment opens in a few reads. Any disagreement (index entry pointing at
  something that is not the batch it names, a partial batch at the end) falls back to a
  full scan.
- otherwise: walk every batch header from position 0 (and check every CRC when asked),
  cut the file at the first torn or implausible batch, and rebuild the index.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from protocol.records import (
    HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    crc_ok,
    iter_batches,
    parse_header,
)

from .atomic_file import fsync_dir
from .offset_index import INDEX_SUFFIX, OffsetIndex

LOG_SUFFIX = ".log"
INT32_MAX = 0x7FFFFFFF
DEFAULT_INDEX_INTERVAL_BYTES = 4096
_CHUNK = 64 * 1024  # read-ahead when walking headers: one pread covers many small batches
_CRC_CHUNK = 1024 * 1024  # read-ahead when every byte is needed anyway (CRC checks)
# After a batch this big, read only the next header instead of a whole chunk.
_BIG_BATCH = _CHUNK // 8


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's naming: the base offset zero-padded to 20 digits."""
    return f"{base_offset:020d}{suffix}"


def parse_file_name(name: str, suffix: str) -> int | None:
    """Base offset of ``<20 digits><suffix>``, or None for any other name."""
    if not name.endswith(suffix):
        return None
    stem = name[: -len(suffix)]
    if len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


class ScanResult(NamedTuple):
    """Outcome of walking a segment file from its start.

    ``valid_bytes`` is the length of the prefix made of whole, plausible batches; ``problem``
    says why the walk stopped before the end of the file (None when it reached the end).
    """

    valid_bytes: int
    batches: int
    next_offset: int
    problem: str | None


@dataclass(frozen=True, slots=True)
class Truncation:
    """What ``Segment.open`` cut off the end of a segment file."""

    file: str
    position: int  # byte position of the cut (the end of the last good batch)
    offset: int  # the first offset that was lost (the segment's log end after the cut)
    bytes_cut: int
    reason: str


class _Scan(NamedTuple):
    result: ScanResult
    entries: list[tuple[int, int]]  # index entries found after the starting point
    since: int  # bytes appended since the last index entry
    max_timestamp: int


class Segment:
    def __init__(
        self,
        directory: Path,
        base_offset: int,
        fd: int,
        index: OffsetIndex,
        interval: int,
        created_ms: int | None = None,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index = index
        self.index_interval_bytes = interval
        self.size = 0
        self.next_offset = base_offset
        # Bytes cut off the end of the file by open(); 0 when the file was clean.
        self.truncated_bytes = 0
        self.truncation: Truncation | None = None
        # True when open() had to write index entries the file lacked or rewrite it.
        self.index_rebuilt = False
        # True when open() read every batch (so max_timestamp is known, CRCs if asked).
        self.fully_scanned = False
        # Kafka's LogSegment.created: wall time the object was made (reset by a reload).
        self.created_ms = int(time.time() * 1000) if created_ms is None else created_ms
        self._fd = fd
        self._bytes_since_index = 0
        # Writes and flushes are counted rather than flagged so that a flush running in
        # another thread never marks as durable a write it did not cover.
        self._write_gen = 0
        self._flushed_gen = 0
        # Largest batch max_timestamp (-1: none); None until known (computed lazily).
        self._max_timestamp: int | None = -1
        self._first_timestamp: int | None = None

    @property
    def log_path(self) -> Path:
        return self.directory / file_name(self.base_offset, LOG_SUFFIX)

    @property
    def index_path(self) -> Path:
        return self.directory / file_name(self.base_offset, INDEX_SUFFIX)

    def __repr__(self) -> str:
        return f"Segment({self.log_path}, size={self.size}, next_offset={self.next_offset})"

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: str | os.PathLike[str],
        base_offset: int,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        created_ms: int | None = None,
    ) -> Segment:
        """Start an empty segment. An existing empty file (crash during a roll) is reused."""
        d = Path(directory)
        path = d / file_name(base_offset, LOG_SUFFIX)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(fd).st_size:
            os.close(fd)
            raise FileExistsError(f"segment {path} already holds data")
        index = OffsetIndex.open(d / file_name(base_offset, INDEX_SUFFIX), base_offset)
        index.replace([])
        seg = cls(d, base_offset, fd, index, index_interval_bytes, created_ms)
        seg.fully_scanned = True
        fsync_dir(d)  # the new names must survive a crash before the first flush
        return seg

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        base_offset: int,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        *,
        check_crc: bool = False,
        trust_index: bool = False,
    ) -> Segment:
        """Open an existing segment, cutting off a torn or implausible tail.

        With ``trust_index`` the index and file size are believed when they agree (see the
        module docstring); otherwise, or when they disagree, every header is walked (and
        every CRC checked if ``check_crc``), the file is cut after the last good batch and the
        index is rebuilt, so a stale or torn index never misdirects a read.
        """
        d = Path(directory)
        path = d / file_name(base_offset, LOG_SUFFIX)
        fd = os.open(path, os.O_RDWR)
        try:
            index = OffsetIndex.open(d / file_name(base_offset, INDEX_SUFFIX), base_offset)
        except BaseException:
            os.close(fd)
            raise
        seg = cls(d, base_offset, fd, index, index_interval_bytes)
        try:
            if not (trust_index and seg._open_trusting_index()):
                seg._recover(check_crc or trust_index)
        except BaseException:
            seg.close(flush=False)
            raise
        return seg

    def _open_trusting_index(self) -> bool:
        """Kafka's clean-shutdown path: believe the index, walk only past its last entry.

        Returns False (changing nothing) when the index and the file disagree.
        """
        file_size = os.fstat(self._fd).st_size
        index = self.index
        last = index.last_entry
        start_offset, start_pos = last if last is not None else (self.base_offset, 0)
        if start_pos >= file_size and last is not None:
            return False
        scan = self._scan(start_pos, start_offset, check_crc=False, exact_first=True)
        if scan.result.problem is not None or scan.result.valid_bytes != file_size:
            return False
        rewrite = not index.file_consistent
        if rewrite:
            index.replace(index.entries() + scan.entries)
        else:
            for offset, pos in scan.entries:
                index.append(offset, pos)
        self.index_rebuilt = rewrite or bool(scan.entries)
        self.size = file_size
        self.next_offset = scan.result.next_offset
        self._bytes_since_index = scan.since
        self._max_timestamp = None  # only the tail was read: computed when first needed
        if start_pos == 0:
            self._max_timestamp = scan.max_timestamp
            self.fully_scanned = True
        return True

    def _recover(self, check_crc: bool) -> None:
        scan = self._scan(0, self.base_offset, check_crc=check_crc)
        result = scan.result
        file_size = os.fstat(self._fd).st_size
        if result.valid_bytes < file_size:
            self.truncated_bytes = file_size - result.valid_bytes
            self.truncation = Truncation(
                self.log_path.name,
                result.valid_bytes,
                result.next_offset,
                self.truncated_bytes,
                result.problem or "partial batch at the end",
            )
            os.ftruncate(self._fd, result.valid_bytes)
            os.fsync(self._fd)
        self.size = result.valid_bytes
        self.next_offset = result.next_offset
        self._bytes_since_index = scan.since
        self._max_timestamp = scan.max_timestamp
        self.fully_scanned = True
        if self.index.replace(scan.entries):
            self.index_rebuilt = True
            self.index.flush()

    # -- scanning ------------------------------------------------------------------------

    def scan(self, check_crc: bool = False) -> ScanResult:
        """Walk the whole file from position 0 and report how much of it is valid.

        Checks that every header is a magic-2 batch with offsets increasing from the
        segment's base offset, and optionally each CRC. Changes nothing.
        """
        return self._scan(0, self.base_offset, check_crc=check_crc).result

    def _scan(
        self, start: int, next_offset: int, *, check_crc: bool, exact_first: bool = False
    ) -> _Scan:
        """Walk from ``start`` (a batch boundary whose batch begins at ``next_offset``).

        Index entries are proposed by Kafka's rule (LogSegment.append), assuming an entry (or
        the segment start) at ``start``. With ``exact_first`` the first batch must begin
        exactly at ``next_offset`` (it is the batch an index entry names).
        """
        file_size = os.fstat(self._fd).st_size
        count = 0
        entries: list[tuple[int, int]] = []
        since = 0
        max_ts = -1
        pos = start
        problem: str | None = None
        interval = self.index_interval_bytes
        walker = self._walk(start, file_size, with_bytes=check_crc)
        try:
            for pos, header, data in walker:
                if exact_first and count == 0 and header.base_offset != next_offset:
                    problem = f"index names offset {next_offset}, batch has {header.base_offset}"
                else:
                    problem = _implausible(header, next_offset, self.base_offset)
                if problem is None and data is not None and not crc_ok(data, header):
                    problem = f"CRC mismatch in batch at offset {header.base_offset}"
                if problem is not None:
                    break
                if since > interval:
                    entries.append((header.base_offset, pos))
                    since = 0
                since += header.size
                count += 1
                if header.max_timestamp > max_ts:
                    max_ts = header.max_timestamp
                next_offset = header.next_offset
                pos += header.size
        except CorruptBatchError as exc:
            problem = str(exc)
        if problem is None and pos < file_size:
            problem = "partial batch at the end"
        return _Scan(ScanResult(pos, count, next_offset, problem), entries, since, max_ts)

    def _pread(self, length: int, pos: int) -> bytes:
        return os.pread(self._fd, length, pos)

    def _walk(
        self, start: int, end: int, with_bytes: bool = False
    ) -> Iterator[tuple[int, BatchHeader, memoryview | None]]:
        """Yield (position, header, bytes if asked) of whole batches in [start, end).

        Reads ahead in chunks so small batches cost one syscall per chunk, not per batch;
        after a big batch only the next header is read. Stops at a partial batch; raises
        CorruptBatchError at a header that cannot be one.
        """
        pos = start
        buf = b""
        buf_start = start
        chunk = _CRC_CHUNK if with_bytes else _CHUNK
        last_size = 0
        while end - pos >= HEADER_SIZE:
            off = pos - buf_start
            if off + HEADER_SIZE > len(buf):
                want = chunk if with_bytes or last_size < _BIG_BATCH else HEADER_SIZE
                buf = self._pread(min(want, end - pos), pos)
                buf_start, off = pos, 0
            header = parse_header(buf, off)
            size = last_size = header.size
            if end - pos < size:
                return
            data: memoryview | None = None
            if with_bytes:
                if off + size <= len(buf):
                    data = memoryview(buf)[off : off + size]
                else:
                    data = memoryview(self._pread(size, pos))
            yield pos, header, data
            pos += size

    # -- timestamps (retention.ms and segment.ms) ----------------------------------------

    def max_timestamp(self) -> int:
        """Largest batch max_timestamp in the segment, -1 if none has one.

        Kafka reads it from the time index; we have none, so after a trusting open it is
        found by walking the headers once, when retention first asks.
        """
        if self._max_timestamp is None:
            best = -1
            for _, header, _ in self._walk(0, self.size):
                best = max(best, header.max_timestamp)
            self._max_timestamp = best
        return self._max_timestamp

    def largest_timestamp(self) -> int:
        """Kafka's LogSegment.largestTimestamp: max timestamp, else the file's mtime."""
        ts = self.max_timestamp()
        if ts >= 0:
            return ts
        return int(os.fstat(self._fd).st_mtime * 1000)

    def first_batch_timestamp(self) -> int:
        """max_timestamp of the first batch (Kafka's rollingBasedTimestamp), -1 if none."""
        if self._first_timestamp is None:
            if self.size == 0:
                return -1
            self._first_timestamp = parse_header(self._pread(HEADER_SIZE, 0)).max_timestamp
        return self._first_timestamp

    # -- reading and writing -------------------------------------------------------------

    def lookup(self, offset: int) -> int:
        """Position of the first batch whose last offset is >= ``offset`` (``size`` if none).

        For an offset inside the segment that is the batch holding it. The index gives the
        last indexed batch at or below the offset; headers are walked from there.
        """
        if offset >= self.next_offset:
            return self.size
        _, start = self.index.lookup(offset)
        for pos, header, _ in self._walk(start, self.size):
            if header.last_offset >= offset:
                return pos
        return self.size

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes``.

        At least one whole batch is returned when there is one, however large, so a consumer
        can always make progress (Kafka does the same for the first batch of a fetch).
        """
        pos = self.lookup(offset)
        if pos >= self.size:
            return b""
        data = self._pread(min(max(max_bytes, 0), self.size - pos), pos)
        end = 0
        for p, header in iter_batches(data):
            end = p + header.size
        if end == 0:
            first = parse_header(self._pread(HEADER_SIZE, pos))
            return self._pread(first.size, pos)
        return data if end == len(data) else data[:end]

    def batches(self, start_position: int = 0) -> Iterator[tuple[int, BatchHeader, bytes]]:
        """(position, header, batch bytes) of every batch from ``start_position``."""
        for pos, header, data in self._walk(start_position, self.size, with_bytes=True):
            assert data is not None
            yield pos, header, bytes(data)

    def headers(self, start_position: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of every batch from ``start_position``, reading headers only."""
        for pos, header, _ in self._walk(start_position, self.size):
            yield pos, header

    def append(
        self,
        batch: bytes | bytearray | memoryview,
        first_offset: int,
        last_offset: int,
        max_timestamp: int = -1,
    ) -> int:
        """Write one batch (offsets already patched) at the end; returns its position."""
        n = len(batch)
        if first_offset < self.next_offset or last_offset < first_offset:
            raise ValueError(
                f"offsets {first_offset}..{last_offset} do not follow {self.next_offset}"
            )
        if last_offset - self.base_offset > INT32_MAX or self.size + n > INT32_MAX:
            # Index entries hold int32 relative offsets and positions.
            raise ValueError("batch does not fit this segment; roll first")
        pos = self.size
        view = memoryview(batch)
        written = 0
        while written < n:
            written += os.pwrite(self._fd, view[written:], pos + written)
        self._write_gen += 1
        # Kafka's rule (LogSegment.append): index the batch once more than
        # index.interval.bytes were appended since the last entry.
        if self._bytes_since_index > self.index_interval_bytes:
            self.index.append(first_offset, pos)
            self._bytes_since_index = 0
        self._bytes_since_index += n
        self.size = pos + n
        self.next_offset = last_offset + 1
        if pos == 0:
            self._first_timestamp = max_timestamp
        if self._max_timestamp is not None and max_timestamp > self._max_timestamp:
            self._max_timestamp = max_timestamp
        return pos

    # -- durability ----------------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        """True when something was written since the last completed flush."""
        return self._write_gen != self._flushed_gen

    def flush_handles(self) -> tuple[int, int, int] | None:
        """(log fd, index fd, write generation) for a flush done elsewhere, None if clean.

        The fds are duplicates owned by the caller (close them after the fsync): the segment
        may be closed and deleted meanwhile without the fsync hitting a reused fd number.
        """
        if not self.dirty or self._fd < 0:
            return None
        gen = self._write_gen
        log_fd = os.dup(self._fd)
        try:
            index_fd = os.dup(self.index.fileno())
        except BaseException:
            os.close(log_fd)
            raise
        return log_fd, index_fd, gen

    def mark_flushed(self, generation: int) -> None:
        """Record that every write up to ``generation`` reached the disk."""
        self._flushed_gen = max(self._flushed_gen, generation)

    def flush(self) -> None:
        """fsync the log and the index if anything was written since the last flush."""
        if self.dirty and self._fd >= 0:
            gen = self._write_gen
            os.fsync(self._fd)
            self.index.flush()
            self.mark_flushed(gen)

    def force_flush(self) -> None:
        """fsync even if this object wrote nothing (data written by a previous process)."""
        if self._fd >= 0:
            gen = self._write_gen
            os.fsync(self._fd)
            self.index.flush()
            self.mark_flushed(gen)

    def close(self, flush: bool = True) -> None:
        if self._fd >= 0:
            if flush:
                self.flush()
            os.close(self._fd)
            self._fd = -1
        self.index.close()

    def delete(self) -> None:
        """Close without flushing and remove both files (retention)."""
        self.close(flush=False)
        for path in (self.log_path, self.index_path):
            path.unlink(missing_ok=True)

    @property
    def closed(self) -> bool:
        return self._fd < 0


def _implausible(header: BatchHeader, next_offset: int, base_offset: int) -> str | None:
    """Why this header cannot continue the segment, or None if it can."""
    if header.magic != 2:
        return f"magic {header.magic} at offset {header.base_offset}"
    if header.last_offset_delta < 0:
        return f"negative last_offset_delta at offset {header.base_offset}"
    if header.base_offset < next_offset:
        return f"batch offset {header.base_offset} below expected {next_offset}"
    if header.last_offset - base_offset > INT32_MAX:
        return f"batch offset {header.last_offset} too far from segment base {base_offset}"
    return None
