"""Sparse time index of one segment: ``<20-digit base offset>.timeindex``.

Entries are 12 bytes, (timestamp int64, relative_offset int32), big-endian as in Kafka's
TimeIndex. An entry (t, o) says "the largest batch max_timestamp among the batches up to and
including the one whose last offset is o is t": every record at or below offset o has a
timestamp <= t. Entries are strictly increasing in timestamp (an entry is only added when the
segment's max timestamp rose, Kafka's TimeIndex.maybeAppend) and non-decreasing in offset.

The segment proposes an entry at the same moments it adds an offset-index entry (at most one
per index.interval.bytes, Kafka's LogSegment.append) and once more when the segment stops being
the active one (roll; Kafka's onBecomeInactiveSegment), so the last entry of an inactive
segment holds its largest timestamp and retention need not read the log.

The file is created lazily, with the first entry: a segment whose records never carried a
timestamp, or that is still smaller than one index interval, has none. Like the offset index,
it is an accelerator rebuilt from the log whenever it cannot be trusted.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
from pathlib import Path
from typing import NamedTuple

ENTRY = struct.Struct(">qi")
ENTRY_SIZE = ENTRY.size
TIME_INDEX_SUFFIX = ".timeindex"
# Kafka's RecordBatch.NO_TIMESTAMP: an empty index behaves as if it held (-1, base offset), so
# only timestamps >= 0 are ever appended.
NO_TIMESTAMP = -1


class TimestampOffset(NamedTuple):
    """A (timestamp, absolute offset) pair: an index entry or a lookup answer."""

    timestamp: int
    offset: int


class TimeIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd = -1
        self._timestamps: list[int] = []  # strictly increasing
        self._offsets: list[int] = []  # relative, non-decreasing
        # False when open() found bytes it could not use (torn or stale tail, bad entry).
        self.file_consistent = True
        # Whether the file existed when opened (a missing file may be a lost one).
        self.file_existed = False

    @classmethod
    def open(cls, path: Path, base_offset: int) -> TimeIndex:
        """Load the well-formed prefix of the file; a missing file is an empty index."""
        index = cls(path, base_offset)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return index
        index._fd = fd
        index.file_existed = True
        size = os.fstat(fd).st_size
        data = os.pread(fd, size - size % ENTRY_SIZE, 0) if size else b""
        stamps, offsets = index._timestamps, index._offsets
        for ts, rel in ENTRY.iter_unpack(data):
            if ts < 0 or rel < 0:
                break
            if stamps and (ts <= stamps[-1] or rel < offsets[-1]):
                break
            stamps.append(ts)
            offsets.append(rel)
        index.file_consistent = len(stamps) * ENTRY_SIZE == size
        return index

    def ensure_file(self) -> None:
        """Open (creating) the file now, before a write that will need it."""
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def fileno(self) -> int:
        """The file's descriptor, -1 while the index has never had a file."""
        return self._fd

    def __len__(self) -> int:
        return len(self._timestamps)

    @property
    def last_entry(self) -> TimestampOffset | None:
        if not self._timestamps:
            return None
        return TimestampOffset(self._timestamps[-1], self.base_offset + self._offsets[-1])

    @property
    def last_timestamp(self) -> int:
        return self._timestamps[-1] if self._timestamps else NO_TIMESTAMP

    def entries(self) -> list[TimestampOffset]:
        return [
            TimestampOffset(t, self.base_offset + r)
            for t, r in zip(self._timestamps, self._offsets, strict=True)
        ]

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Append (timestamp, offset) if the timestamp is above the last entry's."""
        if timestamp <= self.last_timestamp:
            return False
        rel = offset - self.base_offset
        if rel < 0 or (self._offsets and rel < self._offsets[-1]):
            raise ValueError(f"time index entry {timestamp}@{offset} goes back in offsets")
        self.ensure_file()
        os.pwrite(self._fd, ENTRY.pack(timestamp, rel), len(self._timestamps) * ENTRY_SIZE)
        self._timestamps.append(timestamp)
        self._offsets.append(rel)
        return True

    def lookup_below(self, timestamp: int) -> TimestampOffset | None:
        """The last entry whose timestamp is strictly below ``timestamp``, None if none.

        Every record at or below its offset is older than ``timestamp``, so the first record
        at or after ``timestamp`` lies above it. (Kafka's TimeIndex.lookup takes the last
        entry <= the target, which can step over earlier records carrying exactly the target
        timestamp; strictly below never does.)
        """
        i = bisect.bisect_left(self._timestamps, timestamp) - 1
        if i < 0:
            return None
        return TimestampOffset(self._timestamps[i], self.base_offset + self._offsets[i])

    def replace(self, entries: list[TimestampOffset]) -> bool:
        """Make the index hold exactly ``entries``; rewrite the file only if it differs.

        Returns True when the file had to be (re)written. No entries and no file: no file.
        """
        stamps = [e.timestamp for e in entries]
        offsets = [e.offset - self.base_offset for e in entries]
        same = stamps == self._timestamps and offsets == self._offsets
        if self._fd < 0:
            if same:  # both empty: nothing to write, and no file to create
                return False
        elif same and os.fstat(self._fd).st_size == len(stamps) * ENTRY_SIZE:
            return False
        self.ensure_file()
        data = b"".join(ENTRY.pack(t, r) for t, r in zip(stamps, offsets, strict=True))
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)
        self._timestamps = stamps
        self._offsets = offsets
        self.file_consistent = True
        return True

    def rename_to(self, path: Path) -> None:
        """Move the file to ``path`` (Kafka's AbstractIndex.renameTo); the open descriptor keeps
        working. A file that does not exist only changes its future name."""
        with contextlib.suppress(FileNotFoundError):
            os.rename(self.path, path)
        self.path = path

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
