"""Offset and time indexes read lazily (Kafka's LazyIndex): an open reads the size and the
last entry only, the entries on first use; a bad middle entry found then keeps the prefix."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from protocol.records import build_batch
from storage import offset_index as offset_index_module
from storage import time_index as time_index_module
from storage.offset_index import ENTRY as OFFSET_ENTRY
from storage.offset_index import OffsetIndex
from storage.segment import Segment
from storage.time_index import ENTRY as TIME_ENTRY
from storage.time_index import TimeIndex, TimestampOffset


class ReadCounter:
    """Counts the bytes one module reads with os.pread (unit-test spy on that module)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: object) -> None:
        self.bytes = 0
        real = os.pread

        def counting(fd: int, n: int, offset: int) -> bytes:
            data = real(fd, n, offset)
            self.bytes += len(data)
            return data

        fake_os = type("FakeOs", (), {})()
        for name in dir(os):
            if not name.startswith("__"):
                setattr(fake_os, name, getattr(os, name))
        fake_os.pread = counting  # type: ignore[attr-defined]
        monkeypatch.setattr(module, "os", fake_os)


def write_offset_index(path: Path, entries: list[tuple[int, int]]) -> None:
    path.write_bytes(b"".join(OFFSET_ENTRY.pack(r, p) for r, p in entries))


def test_open_reads_only_the_last_offset_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "00000000000000001000.index"
    entries = [(i * 3, i * 4096) for i in range(50_000)]
    write_offset_index(path, entries)
    reads = ReadCounter(monkeypatch, offset_index_module)
    index = OffsetIndex.open(path, 1000)
    assert reads.bytes == OFFSET_ENTRY.size
    assert index.last_entry == (1000 + 149_997, 49_999 * 4096)
    assert index.file_consistent
    assert reads.bytes == OFFSET_ENTRY.size  # the last entry came from the open
    assert index.lookup(1000 + 300 + 1) == (1300, 100 * 4096)
    assert reads.bytes == OFFSET_ENTRY.size + len(entries) * OFFSET_ENTRY.size
    assert len(index) == 50_000 and index.entries()[-1] == (1000 + 149_997, 49_999 * 4096)
    index.append(1000 + 150_000, 50_000 * 4096)
    index.close()
    again = OffsetIndex.open(path, 1000)
    assert again.last_entry == (1000 + 150_000, 50_000 * 4096)
    assert again.upper_bound_offset(49_999 * 4096 + 1) == 1000 + 150_000
    again.close()


def test_a_bad_middle_offset_entry_found_on_load_keeps_the_prefix(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    write_offset_index(path, [(1, 100), (2, 200), (2, 300), (5, 500)])
    index = OffsetIndex.open(path, 0)
    # Kafka's sanity check looks at the size and the last entry only.
    assert index.file_consistent and index.last_entry == (5, 500)
    assert index.lookup(9) == (2, 200)  # loaded: only the well-formed prefix
    assert not index.file_consistent and index.last_entry == (2, 200)
    assert index.replace(index.entries())
    assert path.read_bytes() == OFFSET_ENTRY.pack(1, 100) + OFFSET_ENTRY.pack(2, 200)
    index.close()


def test_a_torn_offset_index_is_loaded_at_open(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(OFFSET_ENTRY.pack(1, 100) + OFFSET_ENTRY.pack(3, 300) + b"\x00\x07")
    index = OffsetIndex.open(path, 0)
    assert not index.file_consistent
    assert index.entries() == [(1, 100), (3, 300)]
    index.close()


def test_concurrent_first_uses_load_once_and_agree(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    write_offset_index(path, [(i, i * 10) for i in range(1, 20_001)])
    index = OffsetIndex.open(path, 0)
    answers: list[tuple[int, int]] = []
    threads = [
        threading.Thread(target=lambda: answers.append(index.lookup(15_000))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    index.append(20_001, 200_010)
    for t in threads:
        t.join(10)
    assert answers == [(15_000, 150_000)] * 4
    assert len(index) == 20_001 and index.last_entry == (20_001, 200_010)
    index.close()


def test_time_index_open_reads_only_the_last_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "00000000000000000100.timeindex"
    path.write_bytes(b"".join(TIME_ENTRY.pack(1_000 + i, i) for i in range(10_000)))
    reads = ReadCounter(monkeypatch, time_index_module)
    index = TimeIndex.open(path, 100)
    assert reads.bytes == TIME_ENTRY.size
    assert index.last_entry == TimestampOffset(10_999, 100 + 9_999)
    assert index.last_timestamp == 10_999 and index.file_consistent
    assert index.lookup_below(1_005) == TimestampOffset(1_004, 104)
    assert reads.bytes == TIME_ENTRY.size * 10_001
    assert index.maybe_append(20_000, 100 + 10_000)
    index.close()


def test_a_bad_middle_time_entry_found_on_load_keeps_the_prefix(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.timeindex"
    path.write_bytes(TIME_ENTRY.pack(5, 1) + TIME_ENTRY.pack(4, 2) + TIME_ENTRY.pack(9, 3))
    index = TimeIndex.open(path, 0)
    assert index.file_consistent and index.last_timestamp == 9
    assert index.entries() == [(5, 1)]
    assert not index.file_consistent and index.last_timestamp == 5
    index.close()


def test_a_trusting_segment_open_reads_no_index_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A closed segment opened as after a clean shutdown reads the last index entries and
    the log past them, not the indexes' entries; reads through it still find every batch."""
    seg = Segment.create(tmp_path, 0, index_interval_bytes=0)
    for offset in range(2_000):
        data = build_batch([(None, b"v")], base_offset=offset, base_timestamp=1_000 + offset)
        seg.append(data, offset, offset, 1_000 + offset)
    seg.seal_time_index()
    seg.close()
    offsets_read = ReadCounter(monkeypatch, offset_index_module)
    times_read = ReadCounter(monkeypatch, time_index_module)
    again = Segment.open(tmp_path, 0, index_interval_bytes=0, trust_index=True)
    assert offsets_read.bytes == OFFSET_ENTRY.size
    assert times_read.bytes == TIME_ENTRY.size
    assert again.next_offset == 2_000 and not again.index_rebuilt
    assert again.find_offset_by_timestamp(1_000 + 1_234) == (1_000 + 1_234, 1_234)
    again.close()
