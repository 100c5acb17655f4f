"""One log segment: ``<20-digit base offset>.log`` plus its sparse ``.index`` and ``.timeindex``.

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

The time index (storage.time_index) follows the same two strengths: a trusting open believes
it (with the tail walk it gives the segment's max timestamp without reading the rest of the
log); when it is missing, torn or names offsets the log does not hold, or after a full scan,
it is rebuilt from the batch headers.
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
    decode_records,
    iter_batches,
    parse_header,
)

from .atomic_file import fsync_dir
from .offset_index import INDEX_SUFFIX, OffsetIndex
from .time_index import NO_TIMESTAMP, TIME_INDEX_SUFFIX, TimeIndex, TimestampOffset

LOG_SUFFIX = ".log"
# Kafka's LogFileUtils.DELETED_FILE_SUFFIX: a segment's files renamed when it leaves its log,
# removed file.delete.delay.ms later, and at the next open if still there.
DELETED_SUFFIX = ".deleted"
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
    max_timestamp: int  # the running max (from the starting state), -1 if none
    offset_of_max: int  # last offset of the first batch carrying it
    time_entries: list[TimestampOffset]  # time index entries found after the starting point


class Segment:
    def __init__(
        self,
        directory: Path,
        base_offset: int,
        fd: int,
        index: OffsetIndex,
        interval: int,
        created_ms: int | None = None,
        time_index: TimeIndex | None = None,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index = index
        self.time_index = (
            time_index
            if time_index is not None
            else TimeIndex(directory / file_name(base_offset, TIME_INDEX_SUFFIX), base_offset)
        )
        self.index_interval_bytes = interval
        self.size = 0
        self.next_offset = base_offset
        # Bytes cut off the end of the file by open(); 0 when the file was clean.
        self.truncated_bytes = 0
        self.truncation: Truncation | None = None
        # True when open() had to write index entries the file lacked or rewrite it.
        self.index_rebuilt = False
        # True when open() had to rebuild the time index (missing, damaged or stale).
        self.time_index_rebuilt = False
        # True when open() read every batch (CRCs too, if asked).
        self.fully_scanned = False
        # Kafka's LogSegment.created: wall time the object was made (reset by a reload).
        self.created_ms = int(time.time() * 1000) if created_ms is None else created_ms
        self._fd = fd
        self._log_suffix = ""  # DELETED_SUFFIX once the log file is renamed for deletion
        self._bytes_since_index = 0
        # Writes and flushes are counted rather than flagged so that a flush running in
        # another thread never marks as durable a write it did not cover.
        self._write_gen = 0
        self._flushed_gen = 0
        # Largest batch max_timestamp (-1: none) and the last offset of the first batch that
        # carried it (Kafka's maxTimestampAndOffsetSoFar); always known, thanks to the time
        # index, without reading the whole log at a trusting open.
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max = -1
        self._first_timestamp: int | None = None

    @property
    def log_path(self) -> Path:
        return self.directory / (file_name(self.base_offset, LOG_SUFFIX) + self._log_suffix)

    @property
    def index_path(self) -> Path:
        return self.index.path

    @property
    def time_index_path(self) -> Path:
        return self.time_index.path

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
        *,
        sync_dir: bool = True,
        suffix: str = "",
    ) -> Segment:
        """Start an empty segment. An existing empty file (crash during a roll) is reused.

        ``sync_dir=False``: the caller makes the new names durable itself (a roll leaves it
        to the partition's next flush, before anything written to the segment counts as
        durable). ``suffix``: every file named with it (the log cleaner's ``.cleaned``
        segments, Kafka's LogSegment.open with a fileSuffix)."""
        d = Path(directory)
        path = d / (file_name(base_offset, LOG_SUFFIX) + suffix)
        if suffix:
            # A cleaning that died before its swap left these: start afresh.
            path.unlink(missing_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(fd).st_size:
            os.close(fd)
            raise FileExistsError(f"segment {path} already holds data")
        try:
            index = OffsetIndex.open(
                d / (file_name(base_offset, INDEX_SUFFIX) + suffix), base_offset
            )
        except BaseException:
            # Out of descriptors, say: no segment, and no empty file left for a later roll.
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        index.replace([])
        # A leftover time index of an earlier segment at this offset would outlive the
        # entries written over its start: the new one starts without a file.
        time_path = d / (file_name(base_offset, TIME_INDEX_SUFFIX) + suffix)
        time_path.unlink(missing_ok=True)
        seg = cls(
            d,
            base_offset,
            fd,
            index,
            index_interval_bytes,
            created_ms,
            TimeIndex(time_path, base_offset),
        )
        seg._log_suffix = suffix
        seg.fully_scanned = True
        if sync_dir:
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
        try:
            time_index = TimeIndex.open(d / file_name(base_offset, TIME_INDEX_SUFFIX), base_offset)
        except BaseException:
            index.close()
            os.close(fd)
            raise
        seg = cls(d, base_offset, fd, index, index_interval_bytes, time_index=time_index)
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
        # The time index's last entry is the max timestamp of everything before the tail
        # (an entry is proposed at every offset-index entry): the walk continues from it.
        newest = self.time_index.last_entry or TimestampOffset(NO_TIMESTAMP, -1)
        scan = self._scan(
            start_pos,
            start_offset,
            check_crc=False,
            exact_first=True,
            start_max=newest if last is not None else None,
        )
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
        if start_pos == 0:
            self.fully_scanned = True
            self._settle_time_index(scan)
        elif self._time_index_trustworthy(scan.result.next_offset):
            for entry in scan.time_entries:
                self.time_index.maybe_append(entry.timestamp, entry.offset)
            self._max_timestamp, self._offset_of_max = scan.max_timestamp, scan.offset_of_max
        else:
            # Missing or damaged while the log is trusted: the headers are enough (no CRCs).
            self._settle_time_index(self._scan(0, self.base_offset, check_crc=False))
        return True

    def _time_index_trustworthy(self, next_offset: int) -> bool:
        """Whether a trusting open may believe the time index as it is on disk.

        A missing file is suspect once the offset index has entries: at the first of them the
        segment already proposed a time entry, which only records without timestamps skip.
        """
        ti = self.time_index
        if not ti.file_consistent or not ti.file_existed:
            return False
        newest = ti.last_entry
        return newest is None or newest.offset < next_offset

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
        self.fully_scanned = True
        if self.index.replace(scan.entries):
            self.index_rebuilt = True
            self.index.flush()
        self._settle_time_index(scan)
        if self.time_index_rebuilt:
            self.time_index.flush()

    def _settle_time_index(self, scan: _Scan) -> None:
        """Make the time index what a walk from position 0 proposes; keep it if it already is.

        A file that also holds the final entry a roll adds (the segment's max timestamp) is
        what an inactive segment looks like, and is kept as well.
        """
        self._max_timestamp, self._offset_of_max = scan.max_timestamp, scan.offset_of_max
        computed = scan.time_entries
        current = self.time_index.entries()
        top = computed[-1].timestamp if computed else NO_TIMESTAMP
        sealed = [*computed, TimestampOffset(scan.max_timestamp, scan.offset_of_max)]
        if self.time_index.file_consistent and (
            current == computed or (scan.max_timestamp > top and current == sealed)
        ):
            return
        if self.time_index.replace(computed):
            self.time_index_rebuilt = True
            self.index_rebuilt = True

    # -- scanning ------------------------------------------------------------------------

    def scan(self, check_crc: bool = False) -> ScanResult:
        """Walk the whole file from position 0 and report how much of it is valid.

        Checks that every header is a magic-2 batch with offsets increasing from the
        segment's base offset, and optionally each CRC. Changes nothing.
        """
        return self._scan(0, self.base_offset, check_crc=check_crc).result

    def _scan(
        self,
        start: int,
        next_offset: int,
        *,
        check_crc: bool,
        exact_first: bool = False,
        start_max: TimestampOffset | None = None,
    ) -> _Scan:
        """Walk from ``start`` (a batch boundary whose batch begins at ``next_offset``).

        Index entries are proposed by Kafka's rule (LogSegment.append), assuming an entry (or
        the segment start) at ``start``; time index entries at the same points, when the
        running max timestamp (starting from ``start_max``) rose above the last one. With
        ``exact_first`` the first batch must begin exactly at ``next_offset`` (it is the
        batch an index entry names).
        """
        file_size = os.fstat(self._fd).st_size
        count = 0
        entries: list[tuple[int, int]] = []
        time_entries: list[TimestampOffset] = []
        since = 0
        max_ts, max_offset = start_max if start_max is not None else (NO_TIMESTAMP, -1)
        last_time = max_ts
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
                if header.max_timestamp > max_ts:
                    max_ts, max_offset = header.max_timestamp, header.last_offset
                if since > interval:
                    entries.append((header.base_offset, pos))
                    if max_ts > last_time:
                        time_entries.append(TimestampOffset(max_ts, max_offset))
                        last_time = max_ts
                    since = 0
                since += header.size
                count += 1
                next_offset = header.next_offset
                pos += header.size
        except CorruptBatchError as exc:
            problem = str(exc)
        if problem is None and pos < file_size:
            problem = "partial batch at the end"
        return _Scan(
            ScanResult(pos, count, next_offset, problem),
            entries,
            since,
            max_ts,
            max_offset,
            time_entries,
        )

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

        Known without reading the log: a trusting open takes it from the time index's last
        entry and the tail it walks anyway (Kafka's LogSegment.maxTimestampSoFar).
        """
        return self._max_timestamp

    def max_timestamp_and_offset(self) -> TimestampOffset:
        """(max timestamp, last offset of the first batch carrying it); (-1, -1) if none."""
        return TimestampOffset(self._max_timestamp, self._offset_of_max)

    def seal_time_index(self) -> bool:
        """Add the segment's max timestamp as the final time index entry, if it is not yet.

        Done when the segment stops being the active one (Kafka's onBecomeInactiveSegment), so
        the last entry of every inactive segment is its largest timestamp.
        """
        if self._max_timestamp <= self.time_index.last_timestamp:
            return False
        self._write_gen += 1  # the new entry needs a flush like any other write
        return self.time_index.maybe_append(self._max_timestamp, self._offset_of_max)

    def find_offset_by_timestamp(
        self, timestamp: int, start_offset: int = 0
    ) -> TimestampOffset | None:
        """The first record at or above ``start_offset`` whose timestamp is >= ``timestamp``.

        Kafka's LogSegment.findOffsetByTimestamp: the time index narrows the start, batch
        headers are skipped while their max_timestamp is below the target, and the one batch
        that holds the answer is decoded, because record timestamps inside a batch need not
        be ordered (the batch header only has the max). None when no record qualifies.
        """
        if self._max_timestamp < timestamp:
            return None
        below = self.time_index.lookup_below(timestamp)
        from_offset = max(below.offset + 1 if below is not None else 0, start_offset)
        from_offset = max(from_offset, self.base_offset)
        for pos, header, _ in self._walk(self.lookup(from_offset), self.size):
            if header.max_timestamp < timestamp or header.last_offset < from_offset:
                continue
            for ts, offset in _record_timestamps(self._pread(header.size, pos), header):
                if ts >= timestamp and offset >= from_offset:
                    return TimestampOffset(ts, offset)
        return None

    def find_max_timestamp(self) -> TimestampOffset | None:
        """(max timestamp, offset of the first record carrying it), None if no timestamps.

        Kafka (KIP-734, and KAFKA-16310 for the record rather than the batch offset): the
        batch named by the segment's max-timestamp bookkeeping is decoded to find the record.
        """
        ts, last_offset = self._max_timestamp, self._offset_of_max
        if ts < 0:
            return None
        for pos, header, _ in self._walk(self.lookup(last_offset), self.size):
            if header.max_timestamp != ts:
                continue
            for record_ts, offset in _record_timestamps(self._pread(header.size, pos), header):
                if record_ts == ts:
                    return TimestampOffset(ts, offset)
        return None

    def largest_timestamp(self) -> int:
        """Kafka's LogSegment.largestTimestamp: max timestamp, else the file's mtime."""
        ts = self.max_timestamp()
        if ts >= 0:
            return ts
        return int(os.fstat(self._fd).st_mtime * 1000)

    def last_modified_ms(self) -> int:
        """The log file's mtime (Kafka's LogSegment.lastModified)."""
        return int(os.fstat(self._fd).st_mtime * 1000)

    def set_last_modified(self, ms: int) -> None:
        """Kafka's LogSegment.setLastModified: the cleaner gives a cleaned segment the mtime
        of the last segment it replaces."""
        os.utime(self._fd, ns=(ms * 1_000_000, ms * 1_000_000))

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

    def truncate_to(self, offset: int) -> int:
        """LogSegment.truncateTo: cut the file before the batch holding ``offset`` (durably),
        rebuild the indexes from what stays; the bytes cut."""
        pos = self.lookup(offset)
        if pos >= self.size:
            return 0
        cut = self.size - pos
        os.ftruncate(self._fd, pos)
        os.fsync(self._fd)
        self._recover(check_crc=False)
        self.index.flush()
        self.time_index.flush()
        return cut

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

    def locate(
        self, offset: int, max_bytes: int, min_one_message: bool = True
    ) -> tuple[int, int, int]:
        """(position, length, size of the first batch) of what a fetch at ``offset`` returns,
        without reading it; the first batch's size is 0 when the segment ends before it.

        As Kafka's LogSegment.read: from the batch holding ``offset``, up to ``max_bytes``,
        which may end inside a batch (clients drop a partial trailing batch); with
        ``min_one_message`` never less than the whole first batch, so a consumer always makes
        progress.
        """
        pos = self.lookup(offset)
        if pos >= self.size:
            return pos, 0, 0
        first = parse_header(self._pread(HEADER_SIZE, pos))
        limit = max(max_bytes, first.size) if min_one_message else max_bytes
        return pos, min(self.size - pos, limit), first.size

    def read_at(self, position: int, length: int) -> bytes:
        return self._pread(length, position)

    def dup_fd(self) -> int:
        """A duplicate of the log file's descriptor, for zero-copy sends that may outlive a
        roll, retention or deletion of this segment (the inode stays readable)."""
        if self._fd < 0:
            raise OSError(f"segment {self.log_path} is closed")
        return os.dup(self._fd)

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
        index_due = self._bytes_since_index > self.index_interval_bytes
        if index_due and max(max_timestamp, self._max_timestamp) > self.time_index.last_timestamp:
            # The time index's file is opened before the batch is written: a failure to open
            # it (no descriptor free) leaves the segment as it was.
            self.time_index.ensure_file()
        written = os.pwrite(self._fd, batch, pos)
        if written < n:
            # A short write (a full disk, a signal): the rest, from where it stopped.
            view = memoryview(batch)
            while written < n:
                written += os.pwrite(self._fd, view[written:], pos + written)
        self._write_gen += 1
        if max_timestamp > self._max_timestamp:
            self._max_timestamp, self._offset_of_max = max_timestamp, last_offset
        # Kafka's rule (LogSegment.append): index the batch once more than
        # index.interval.bytes were appended since the last entry, and at the same moment
        # record the max timestamp so far in the time index if it rose.
        if index_due:
            self.index.append(first_offset, pos)
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max)
            self._bytes_since_index = 0
        self._bytes_since_index += n
        self.size = pos + n
        self.next_offset = last_offset + 1
        if pos == 0:
            self._first_timestamp = max_timestamp
        return pos

    # -- durability ----------------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        """True when something was written since the last completed flush."""
        return self._write_gen != self._flushed_gen

    def flush_handles(self) -> tuple[list[int], int] | None:
        """([log fd, index fd, time index fd if it has a file], write generation) for a flush
        done elsewhere, None if clean.

        The fds are duplicates owned by the caller (close them after the fsync): the segment
        may be closed and deleted meanwhile without the fsync hitting a reused fd number.
        """
        if not self.dirty or self._fd < 0:
            return None
        gen = self._write_gen
        fds: list[int] = []
        try:
            for fd in (self._fd, self.index.fileno(), self.time_index.fileno()):
                if fd >= 0:
                    fds.append(os.dup(fd))
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return fds, gen

    def mark_flushed(self, generation: int) -> None:
        """Record that every write up to ``generation`` reached the disk."""
        self._flushed_gen = max(self._flushed_gen, generation)

    def flush(self) -> None:
        """fsync the log and the index if anything was written since the last flush."""
        if self.dirty and self._fd >= 0:
            gen = self._write_gen
            os.fsync(self._fd)
            self.index.flush()
            self.time_index.flush()
            self.mark_flushed(gen)

    def force_flush(self) -> None:
        """fsync even if this object wrote nothing (data written by a previous process)."""
        if self._fd >= 0:
            gen = self._write_gen
            os.fsync(self._fd)
            self.index.flush()
            self.time_index.flush()
            self.mark_flushed(gen)

    def close(self, flush: bool = True) -> None:
        if self._fd >= 0:
            if flush:
                self.flush()
            os.close(self._fd)
            self._fd = -1
        self.index.close()
        self.time_index.close()

    def mark_deleted(self) -> None:
        """Rename the segment's files ``*.deleted`` (Kafka's LogSegment.changeFileSuffixes("",
        ".deleted")) when it leaves its log; ``delete`` removes them later.

        The descriptors stay open, so reads (a fetch response being sent from this segment)
        go on; the next open of the partition removes any ``*.deleted`` file it finds. Each
        path changes only once its rename succeeded, so ``delete`` finds every file.
        """
        if not self._log_suffix:
            os.rename(self.log_path, self.log_path.with_name(self.log_path.name + DELETED_SUFFIX))
            self._log_suffix = DELETED_SUFFIX
        for index in (self.index, self.time_index):
            if not index.path.name.endswith(DELETED_SUFFIX):
                index.rename_to(index.path.with_name(index.path.name + DELETED_SUFFIX))

    def change_file_suffixes(self, old: str, new: str) -> None:
        """Kafka's LogSegment.changeFileSuffixes: the log, then each index, renamed from
        ``old`` to ``new`` (the cleaner's ``.cleaned`` -> ``.swap`` -> ``""``); the
        descriptors stay open."""
        if self._log_suffix != old:
            raise ValueError(f"{self.log_path} does not end with {old!r}")
        stem = file_name(self.base_offset, LOG_SUFFIX)
        os.rename(self.directory / (stem + old), self.directory / (stem + new))
        self._log_suffix = new
        for index in (self.index, self.time_index):
            name = index.path.name
            base = name[: len(name) - len(old)] if old else name
            index.rename_to(index.path.with_name(base + new))

    @property
    def marked_deleted(self) -> bool:
        return bool(self._log_suffix)

    def delete(self) -> None:
        """Close without flushing and remove its files, under whatever names they have now
        (Kafka's LogSegment.deleteIfExists)."""
        self.close(flush=False)
        for path in (self.log_path, self.index_path, self.time_index_path):
            path.unlink(missing_ok=True)

    @property
    def closed(self) -> bool:
        return self._fd < 0


def _record_timestamps(batch: bytes, header: BatchHeader) -> Iterator[tuple[int, int]]:
    """(timestamp, offset) of each record of one batch, in order.

    In a LogAppendTime batch every record's timestamp is the batch's max_timestamp (Kafka's
    DefaultRecordBatch); otherwise it is the base timestamp plus the record's delta.
    """
    for record in decode_records(batch, header):
        if header.log_append_time:
            ts = header.max_timestamp
        else:
            ts = header.base_timestamp + record.timestamp_delta
        yield ts, header.base_offset + record.offset_delta


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
