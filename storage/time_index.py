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
import operator
import os
import struct
import threading
from array import array
from pathlib import Path
from typing import NamedTuple

from .offset_index import well_formed_prefix

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
        self._timestamps: array[int] = array("q")  # strictly increasing
        self._offsets: array[int] = array("i")  # relative, non-decreasing
        self._loaded = True
        self._load_lock = threading.Lock()
        self._file_size = 0
        self._last: tuple[int, int] | None = None  # the file's last entry, while not loaded
        # False when the file holds bytes that cannot be used (torn or stale tail, bad entry).
        self.file_consistent = True
        # Whether the file existed when opened (a missing file may be a lost one).
        self.file_existed = False

    @classmethod
    def open(cls, path: Path, base_offset: int) -> TimeIndex:
        """Read the size and last entry (a missing file is an empty index); the entries are
        loaded on first use, their well-formed prefix kept."""
        index = cls(path, base_offset)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return index
        index._fd = fd
        index.file_existed = True
        size = os.fstat(fd).st_size
        if size == 0:
            return index
        index._loaded = False
        index._file_size = size
        whole = size - size % ENTRY_SIZE
        if whole:
            ts, rel = ENTRY.unpack(os.pread(fd, ENTRY_SIZE, whole - ENTRY_SIZE))
            index._last = (ts, rel)
            index.file_consistent = whole == size and ts >= 0 and rel >= 0
        if not index.file_consistent or not whole:
            index._load()
        return index

    def _load(self) -> None:
        with self._load_lock:
            if self._loaded:
                return
            size = self._file_size
            data = os.pread(self._fd, size - size % ENTRY_SIZE, 0)
            pairs = list(ENTRY.iter_unpack(data))
            stamps = array("q", [ts for ts, _ in pairs])
            offsets = array("i", [rel for _, rel in pairs])
            keep = well_formed_prefix(stamps, offsets, operator.lt, operator.le)
            if keep < len(stamps):
                del stamps[keep:]
                del offsets[keep:]
            self.file_consistent = keep * ENTRY_SIZE == size
            self._timestamps, self._offsets = stamps, offsets
            self._last = None
            self._loaded = True

    def ensure_file(self) -> None:
        """Open (creating) the file now, before a write that will need it."""
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def fileno(self) -> int:
        """The file's descriptor, -1 while the index has never had a file."""
        return self._fd

    def __bool__(self) -> bool:
        """Whether there are entries, known without loading them."""
        return self._last is not None if not self._loaded else bool(self._timestamps)

    def __len__(self) -> int:
        self._load()
        return len(self._timestamps)

    @property
    def last_entry(self) -> TimestampOffset | None:
        if not self._loaded and self._last is not None:
            return TimestampOffset(self._last[0], self.base_offset + self._last[1])
        if not self._timestamps:
            return None
        return TimestampOffset(self._timestamps[-1], self.base_offset + self._offsets[-1])

    @property
    def last_timestamp(self) -> int:
        last = self.last_entry
        return last.timestamp if last is not None else NO_TIMESTAMP

    def entries(self) -> list[TimestampOffset]:
        self._load()
        return [
            TimestampOffset(t, self.base_offset + r)
            for t, r in zip(self._timestamps, self._offsets, strict=True)
        ]

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Append (timestamp, offset) if the timestamp is above the last entry's."""
        if timestamp <= self.last_timestamp:
            return False  # decided by the last entry alone: no need to load the rest
        self._load()
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
        self._load()
        i = bisect.bisect_left(self._timestamps, timestamp) - 1
        if i < 0:
            return None
        return TimestampOffset(self._timestamps[i], self.base_offset + self._offsets[i])

    def replace(self, entries: list[TimestampOffset]) -> bool:
        """Make the index hold exactly ``entries``; rewrite the file only if it differs.

        Returns True when the file had to be (re)written. No entries and no file: no file.
        """
        self._load()
        stamps = array("q", [e.timestamp for e in entries])
        offsets = array("i", [e.offset - self.base_offset for e in entries])
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
