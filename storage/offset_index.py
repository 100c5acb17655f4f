"""Sparse offset index of one segment: ``<20-digit base offset>.index``.

Entries are 8 bytes, (relative_offset int32, position int32), big-endian as in Kafka's
OffsetIndex. An entry maps the base offset of a batch to the byte position where that batch
starts in the ``.log`` file; entries are added at most once every ``index_interval_bytes``
of log (Kafka's index.interval.bytes), so a lookup lands on an indexed batch and then scans
at most about that many bytes of headers.

Nothing is read when a segment opens but the file's size and last entry (Kafka's LazyIndex
and OffsetIndex.sanityCheck): a restart with many segments reads none of their entries. The
entries are loaded into memory (two machine-int arrays) on first use and appended to the file
as the index grows. The segment rebuilds the index from the log when it cannot be trusted,
so the file is an accelerator, never the truth.
"""

from __future__ import annotations

import bisect
import contextlib
import operator
import os
import struct
import sys
import threading
from array import array
from collections.abc import Callable
from pathlib import Path

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size
INDEX_SUFFIX = ".index"


Order = Callable[[int, int], bool]


def well_formed_prefix(first: array[int], second: array[int], ok_a: Order, ok_b: Order) -> int:
    """How many leading entries keep ``ok_a(prev, next)`` and ``ok_b(prev, next)`` pairwise,
    nothing negative (C-speed comparisons; the slow walk only when something breaks)."""
    n = len(first)
    if n == 0 or first[0] < 0 or second[0] < 0:
        return 0
    if all(map(ok_a, first, first[1:])) and all(map(ok_b, second, second[1:])):
        return n
    for i in range(1, n):
        if not (ok_a(first[i - 1], first[i]) and ok_b(second[i - 1], second[i])):
            return i
    return n


def big_endian_ints(data: bytes, code: str) -> array[int]:
    values = array(code)
    values.frombytes(data)
    if sys.byteorder == "little":
        values.byteswap()
    return values


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int, fd: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd = fd
        self._offsets: array[int] = array("i")  # relative offsets, strictly increasing
        self._positions: array[int] = array("i")
        self._loaded = True
        self._load_lock = threading.Lock()
        self._file_size = 0
        self._last: tuple[int, int] | None = None  # the file's last entry, while not loaded
        # False when the file holds bytes that cannot be used (torn or stale tail, bad entry).
        self.file_consistent = True

    @classmethod
    def open(cls, path: Path, base_offset: int) -> OffsetIndex:
        """Open (creating if needed) reading only the size and the last entry; the entries
        are loaded on first use, their well-formed prefix kept."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        index = cls(path, base_offset, fd)
        size = os.fstat(fd).st_size
        if size == 0:
            return index
        index._loaded = False
        index._file_size = size
        whole = size - size % ENTRY_SIZE
        if whole:
            rel, pos = ENTRY.unpack(os.pread(fd, ENTRY_SIZE, whole - ENTRY_SIZE))
            index._last = (rel, pos)
            # Kafka's sanityCheck: whole entries and a plausible last one; the rest is
            # checked when loaded.
            index.file_consistent = whole == size and rel >= 0 and pos >= 0
            if not index.file_consistent:
                index._load()
        else:
            index.file_consistent = False
            index._loaded = True
        return index

    def _load(self) -> None:
        """The entries, read once: the well-formed prefix of the file (a shorter prefix than
        the file means the file is not consistent)."""
        with self._load_lock:
            if self._loaded:
                return
            size = self._file_size
            data = os.pread(self._fd, size - size % ENTRY_SIZE, 0)
            pairs = big_endian_ints(data, "i")
            offsets, positions = pairs[0::2], pairs[1::2]
            keep = well_formed_prefix(offsets, positions, operator.lt, operator.lt)
            if keep < len(offsets):
                del offsets[keep:]
                del positions[keep:]
            self.file_consistent = keep * ENTRY_SIZE == size
            self._offsets, self._positions = offsets, positions
            self._last = None
            self._loaded = True

    def fileno(self) -> int:
        return self._fd

    @property
    def last_entry(self) -> tuple[int, int] | None:
        """(absolute offset, position) of the last entry, None when empty."""
        if not self._loaded and self._last is not None:
            return self.base_offset + self._last[0], self._last[1]
        if not self._offsets:
            return None
        return self.base_offset + self._offsets[-1], self._positions[-1]

    def __bool__(self) -> bool:
        """Whether there are entries, known without loading them."""
        return self._last is not None if not self._loaded else bool(self._offsets)

    def __len__(self) -> int:
        self._load()
        return len(self._offsets)

    def entries(self) -> list[tuple[int, int]]:
        """(absolute offset, position) pairs, in order."""
        self._load()
        return [
            (self.base_offset + r, p) for r, p in zip(self._offsets, self._positions, strict=True)
        ]

    def append(self, offset: int, position: int) -> None:
        self._load()
        rel = offset - self.base_offset
        if self._offsets and (rel <= self._offsets[-1] or position <= self._positions[-1]):
            raise ValueError(f"index entry {offset}@{position} not after the last one")
        os.pwrite(self._fd, ENTRY.pack(rel, position), len(self._offsets) * ENTRY_SIZE)
        self._offsets.append(rel)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below ``offset``; (base, 0) if none."""
        self._load()
        i = bisect.bisect_right(self._offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._offsets[i], self._positions[i]

    def upper_bound_offset(self, position: int) -> int | None:
        """Offset of the first entry at or after ``position`` (Kafka's
        OffsetIndex.fetchUpperBoundOffset); None when every entry lies before it."""
        self._load()
        i = bisect.bisect_left(self._positions, position)
        if i >= len(self._positions):
            return None
        return self.base_offset + self._offsets[i]

    def replace(self, entries: list[tuple[int, int]]) -> bool:
        """Make the index hold exactly ``entries``; rewrite the file only if it differs.

        Returns True when the file had to be rewritten.
        """
        self._load()
        offsets = array("i", [o - self.base_offset for o, _ in entries])
        positions = array("i", [p for _, p in entries])
        size = os.fstat(self._fd).st_size
        same = offsets == self._offsets and positions == self._positions
        if same and size == len(offsets) * ENTRY_SIZE:
            return False
        data = b"".join(ENTRY.pack(r, p) for r, p in zip(offsets, positions, strict=True))
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)
        self._offsets = offsets
        self._positions = positions
        self.file_consistent = True
        return True

    def rename_to(self, path: Path) -> None:
        """Move the file to ``path`` (Kafka's AbstractIndex.renameTo); the open descriptor keeps
        working. A file that does not exist only changes its future name."""
        with contextlib.suppress(FileNotFoundError):
            os.rename(self.path, path)
        self.path = path

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
