"""The log cleaner's bounded map of key -> latest offset (Kafka's SkimpyOffsetMap).

Kafka keys it by the key's MD5 digest (16 bytes; two keys with one digest are taken for the
same key) and sizes it from ``log.cleaner.dedupe.buffer.size`` divided among the cleaner
threads: one slot per 24 bytes (digest + 8-byte offset). The cleaner fills it only up to
``log.cleaner.io.buffer.load.factor`` (0.9) of its slots; a dirty section with more keys is
cleaned in several passes, each up to the offset where the map filled. Here the same slot
count bounds a dict of digests.
"""

from __future__ import annotations

import hashlib

# SkimpyOffsetMap: an MD5 digest plus a long offset per entry.
DIGEST_BYTES = 16
BYTES_PER_ENTRY = DIGEST_BYTES + 8


class OffsetMap:
    def __init__(self, memory: int) -> None:
        self.slots = memory // BYTES_PER_ENTRY
        self._map: dict[bytes, int] = {}
        # The last offset the map covers (Kafka's latestOffset), -1 when empty.
        self.latest_offset = -1

    @property
    def size(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self._map[hashlib.md5(key, usedforsecurity=False).digest()] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``; -1 when absent (Kafka's OffsetMap.get)."""
        return self._map.get(hashlib.md5(key, usedforsecurity=False).digest(), -1)

    def put_records(
        self, keys: list[bytes | None], base: int, deltas: list[int], start: int, limit: int
    ) -> int:
        """``put`` of each record's key at ``base + delta`` (keyless records and offsets below
        ``start`` skipped), stopping at the record that would find ``limit`` entries already
        there; returns how many records were consumed (``len(keys)``: all of them). One call
        a batch: the per-record calls were a third of the offset map's pass."""
        entries = self._map
        md5 = hashlib.md5
        for i, key in enumerate(keys):
            offset = base + deltas[i]
            if key is not None and offset >= start:
                if len(entries) >= limit:
                    return i
                entries[md5(key, usedforsecurity=False).digest()] = offset
                self.latest_offset = offset
        return len(keys)

    def get_all(self, keys: list[bytes | None]) -> list[int]:
        """``get`` of each key (-1 for none or absent)."""
        entries = self._map
        md5 = hashlib.md5
        return [
            -1 if key is None else entries.get(md5(key, usedforsecurity=False).digest(), -1)
            for key in keys
        ]

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = offset

    @property
    def utilization(self) -> float:
        return self.size / self.slots if self.slots else 0.0
