"""Sparse offset index of one segment: ``<20-digit base offset>.index``.

Entries are 8 bytes, (relative_offset int32, position int32), big-endian as in Kafka's
OffsetIndex. An entry maps the base offset of a batch to the byte position where that batch
starts in the ``.log`` file; entries are added at most once every ``index_interval_bytes``
of log (Kafka's index.interval.bytes), so a lookup lands on an indexed batch and then scans
at most about that many bytes of headers.

The whole index is kept in memory (two lists) and appended to the file as it grows. The
segment rebuilds it from the log on open, so the file is an accelerator, never the truth.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
from pathlib import Path

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size
INDEX_SUFFIX = ".index"


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int, fd: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd = fd
        self._offsets: list[int] = []  # relative offsets, strictly increasing
        self._positions: list[int] = []
        # False when open() found bytes it could not use (torn or stale tail, bad entry).
        self.file_consistent = True

    @classmethod
    def open(cls, path: Path, base_offset: int) -> OffsetIndex:
        """Open (creating if needed) and load the entries that are well formed."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        index = cls(path, base_offset, fd)
        size = os.fstat(fd).st_size
        data = os.pread(fd, size - size % ENTRY_SIZE, 0) if size else b""
        offsets, positions = index._offsets, index._positions
        for rel, pos in ENTRY.iter_unpack(data):
            if offsets and (rel <= offsets[-1] or pos <= positions[-1]):
                break
            if rel < 0 or pos < 0:
                break
            offsets.append(rel)
            positions.append(pos)
        index.file_consistent = len(offsets) * ENTRY_SIZE == size
        return index

    def fileno(self) -> int:
        return self._fd

    @property
    def last_entry(self) -> tuple[int, int] | None:
        """(absolute offset, position) of the last entry, None when empty."""
        if not self._offsets:
            return None
        return self.base_offset + self._offsets[-1], self._positions[-1]

    def __len__(self) -> int:
        return len(self._offsets)

    def entries(self) -> list[tuple[int, int]]:
        """(absolute offset, position) pairs, in order."""
        return [
            (self.base_offset + r, p) for r, p in zip(self._offsets, self._positions, strict=True)
        ]

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if self._offsets and (rel <= self._offsets[-1] or position <= self._positions[-1]):
            raise ValueError(f"index entry {offset}@{position} not after the last one")
        os.pwrite(self._fd, ENTRY.pack(rel, position), len(self._offsets) * ENTRY_SIZE)
        self._offsets.append(rel)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below ``offset``; (base, 0) if none."""
        i = bisect.bisect_right(self._offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._offsets[i], self._positions[i]

    def upper_bound_offset(self, position: int) -> int | None:
        """Offset of the first entry at or after ``position`` (Kafka's
        OffsetIndex.fetchUpperBoundOffset); None when every entry lies before it."""
        i = bisect.bisect_left(self._positions, position)
        if i >= len(self._positions):
            return None
        return self.base_offset + self._offsets[i]

    def replace(self, entries: list[tuple[int, int]]) -> bool:
        """Make the index hold exactly ``entries``; rewrite the file only if it differs.

        Returns True when the file had to be rewritten.
        """
        offsets = [o - self.base_offset for o, _ in entries]
        positions = [p for _, p in entries]
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
