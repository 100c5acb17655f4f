"""One log segment: ``<20-digit base offset>.log`` plus its sparse ``.index``.

The ``.log`` file is the concatenation of RecordBatch v2 wire bytes exactly as appended (base
offset and leader epoch already patched), so Fetch can serve them unchanged (KAFKA_NOTES §4).
Sizes and positions are int32 as in Kafka, which caps a segment at 2 GiB.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
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

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INT32_MAX = 0x7FFFFFFF
DEFAULT_INDEX_INTERVAL_BYTES = 4096
_CHUNK = 64 * 1024  # read-ahead when walking headers: one pread covers many small batches


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


class Segment:
    def __init__(
        self, directory: Path, base_offset: int, fd: int, index: OffsetIndex, interval: int
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index = index
        self.index_interval_bytes = interval
        self.size = 0
        self.next_offset = base_offset
        # Bytes cut off the end of the file by open(); 0 when the file was clean.
        self.truncated_bytes = 0
        self._fd = fd
        self._bytes_since_index = 0
        self._dirty = False

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
        seg = cls(d, base_offset, fd, index, index_interval_bytes)
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
    ) -> Segment:
        """Open an existing segment, cutting off a torn or implausible tail.

        The index is rebuilt from the batch headers and rewritten if the file disagrees, so a
        stale or torn index never misdirects a read.
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
            result, entries, since = seg._scan(check_crc)
            file_size = os.fstat(fd).st_size
            if result.valid_bytes < file_size:
                seg.truncated_bytes = file_size - result.valid_bytes
                log.warning(
                    "segment %s: truncating %d bytes after position %d (%s)",
                    path,
                    seg.truncated_bytes,
                    result.valid_bytes,
                    result.problem,
                )
                os.ftruncate(fd, result.valid_bytes)
                os.fsync(fd)
            seg.size = result.valid_bytes
            seg.next_offset = result.next_offset
            seg._bytes_since_index = since
            if index.replace(entries):
                index.flush()
        except BaseException:
            seg.close()
            raise
        return seg

    # -- scanning ------------------------------------------------------------------------

    def scan(self, check_crc: bool = False) -> ScanResult:
        """Walk the whole file from position 0 and report how much of it is valid.

        Checks that every header is a magic-2 batch with offsets increasing from the
        segment's base offset, and optionally each CRC. Changes nothing.
        """
        return self._scan(check_crc)[0]

    def _scan(self, check_crc: bool) -> tuple[ScanResult, list[tuple[int, int]], int]:
        file_size = os.fstat(self._fd).st_size
        next_offset = self.base_offset
        count = 0
        entries: list[tuple[int, int]] = []
        since = 0
        pos = 0
        problem: str | None = None
        walker = self._walk(0, file_size, with_bytes=check_crc)
        try:
            for pos, header, data in walker:
                problem = _implausible(header, next_offset, self.base_offset)
                if problem is None and data is not None and not crc_ok(data, header):
                    problem = f"CRC mismatch in batch at offset {header.base_offset}"
                if problem is not None:
                    break
                if since > self.index_interval_bytes:
                    entries.append((header.base_offset, pos))
                    since = 0
                since += header.size
                count += 1
                next_offset = header.next_offset
                pos += header.size
        except CorruptBatchError as exc:
            problem = str(exc)
        if problem is None and pos < file_size:
            problem = "partial batch at the end"
        return ScanResult(pos, count, next_offset, problem), entries, since

    def _pread(self, length: int, pos: int) -> bytes:
        return os.pread(self._fd, length, pos)

    def _walk(
        self, start: int, end: int, with_bytes: bool = False
    ) -> Iterator[tuple[int, BatchHeader, memoryview | None]]:
        """Yield (position, header, bytes if asked) of whole batches in [start, end).

        Reads ahead in chunks so small batches cost one syscall per chunk, not per batch.
        Stops at a partial batch; raises CorruptBatchError at a header that cannot be one.
        """
        pos = start
        buf = b""
        buf_start = start
        while end - pos >= HEADER_SIZE:
            off = pos - buf_start
            if off + HEADER_SIZE > len(buf):
                buf = self._pread(min(_CHUNK, end - pos), pos)
                buf_start, off = pos, 0
            header = parse_header(buf, off)
            size = header.size
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
        self, batch: bytes | bytearray | memoryview, first_offset: int, last_offset: int
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
        self._dirty = True
        # Kafka's rule (LogSegment.append): index the batch once more than
        # index.interval.bytes were appended since the last entry.
        if self._bytes_since_index > self.index_interval_bytes:
            self.index.append(first_offset, pos)
            self._bytes_since_index = 0
        self._bytes_since_index += n
        self.size = pos + n
        self.next_offset = last_offset + 1
        return pos

    def flush(self) -> None:
        """fsync the log and the index if anything was written since the last flush."""
        if self._dirty and self._fd >= 0:
            os.fsync(self._fd)
            self.index.flush()
            self._dirty = False

    def close(self) -> None:
        if self._fd >= 0:
            self.flush()
            os.close(self._fd)
            self._fd = -1
        self.index.close()

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
