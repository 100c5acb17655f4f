"""The time index: Kafka's append rule, timestamp lookups, rebuild at open, truncation and
retention."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from protocol.records import Record, build_batch, decode_records, parse_header
from storage import segment as segment_module
from storage.log_config import LogConfig
from storage.partition_log import PartitionLog, RecoveryMode
from storage.segment import Segment, file_name
from storage.time_index import ENTRY, TimeIndex, TimestampOffset

TIMEINDEX = ".timeindex"


def batch(timestamps: list[int], base: int | None = None, value: bytes = b"v" * 20) -> bytes:
    """One uncompressed batch whose records carry exactly ``timestamps`` (any order)."""
    first = min(timestamps) if base is None else base
    records = [Record(i, ts - first, None, value, ()) for i, ts in enumerate(timestamps)]
    return build_batch(records, base_timestamp=first)


def open_log(
    path: Path,
    mode: RecoveryMode = "crash",
    *,
    segment_bytes: int = 1 << 20,
    interval: int = 0,
    retention_ms: int = -1,
) -> PartitionLog:
    config = LogConfig(
        segment_bytes=segment_bytes, index_interval_bytes=interval, retention_ms=retention_ms
    )
    return PartitionLog.open(path, "t", 0, config=config, mode=mode)


def append(plog: PartitionLog, timestamps: list[int]) -> int:
    data = bytearray(batch(timestamps))
    result = plog.append(data, parse_header(data), now_ms=0)
    return result.base_offset


def all_records(plog: PartitionLog) -> list[tuple[int, int]]:
    """(offset, timestamp) of every stored record, decoded the slow way."""
    out = []
    for header, data in plog.batches(plog.log_start_offset):
        for r in decode_records(data, header):
            out.append(
                (header.base_offset + r.offset_delta, header.base_timestamp + r.timestamp_delta)
            )
    return [(o, t) for o, t in out if o >= plog.log_start_offset]


def expected_for(records: list[tuple[int, int]], target: int) -> TimestampOffset | None:
    for offset, ts in records:
        if ts >= target:
            return TimestampOffset(ts, offset)
    return None


def expected_max(records: list[tuple[int, int]]) -> TimestampOffset | None:
    if not records:
        return None
    top = max(ts for _, ts in records)
    return TimestampOffset(top, next(o for o, ts in records if ts == top))


def random_log(path: Path, seed: int, **kw: int) -> PartitionLog:
    """Batches with jittery, mostly rising timestamps, records out of order inside batches."""
    rng = random.Random(seed)
    plog = open_log(path, **kw)
    now = 1_000_000
    for _ in range(120):
        now += rng.randint(-30, 60)
        append(plog, [now + rng.randint(-40, 40) for _ in range(rng.randint(1, 6))])
    return plog


# -- TimeIndex on its own -----------------------------------------------------------------


def test_entries_only_when_the_timestamp_rises_and_the_file_is_lazy(tmp_path: Path) -> None:
    path = tmp_path / file_name(100, TIMEINDEX)
    index = TimeIndex.open(path, 100)
    assert not path.exists() and index.last_entry is None
    assert not index.maybe_append(-1, 100)  # NO_TIMESTAMP is never indexed (Kafka)
    assert not path.exists()
    assert index.maybe_append(50, 101)
    assert not index.maybe_append(50, 105)
    assert not index.maybe_append(40, 106)
    assert index.maybe_append(70, 106)
    with pytest.raises(ValueError):
        index.maybe_append(80, 105)  # offsets never go back
    assert path.read_bytes() == ENTRY.pack(50, 1) + ENTRY.pack(70, 6)
    index.close()
    again = TimeIndex.open(path, 100)
    assert again.entries() == [(50, 101), (70, 106)] and again.file_consistent
    assert again.lookup_below(50) is None
    assert again.lookup_below(51) == (50, 101)
    assert again.lookup_below(70) == (50, 101)
    assert again.lookup_below(10**12) == (70, 106)
    again.close()


def test_a_torn_or_disordered_tail_is_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / file_name(0, TIMEINDEX)
    path.write_bytes(ENTRY.pack(5, 1) + ENTRY.pack(9, 3) + ENTRY.pack(8, 4) + b"\x00\x01")
    index = TimeIndex.open(path, 0)
    assert index.entries() == [(5, 1), (9, 3)]
    assert not index.file_consistent
    assert index.replace(index.entries())
    assert path.read_bytes() == ENTRY.pack(5, 1) + ENTRY.pack(9, 3)
    assert not index.replace(index.entries())  # already so: not rewritten
    index.close()


# -- the append rule (Kafka's LogSegment.append) ------------------------------------------


def test_segment_proposes_an_entry_per_index_interval_when_the_max_rose(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 0, index_interval_bytes=0)
    offset = 0
    for ts in (100, 50, 200, 200, 300, 250):
        data = batch([ts, ts - 5])
        seg.append(data, offset, offset + 1, parse_header(data).max_timestamp)
        offset += 2
    # The first batch starts the interval; at each later one the running max (and the last
    # offset of the first batch that reached it) is recorded if it rose.
    assert seg.time_index.entries() == [(100, 1), (200, 5), (300, 9)]
    size = len(batch([0, 0]))
    assert seg.index.entries() == [(o, o // 2 * size) for o in range(2, 12, 2)]
    assert seg.max_timestamp_and_offset() == (300, 9)
    assert seg.seal_time_index() is False  # already ends with the max
    seg.close()


def test_no_entry_before_the_first_interval_and_then_no_file(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 0, index_interval_bytes=4096)
    data = batch([10, 20])
    seg.append(data, 0, 1, 20)
    assert len(seg.time_index) == 0
    assert not seg.time_index_path.exists()
    assert seg.seal_time_index()  # what a roll does: the final entry holds the max
    assert seg.time_index.entries() == [(20, 1)]
    seg.close()


def test_roll_seals_the_old_segment_with_its_max_timestamp(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=200, interval=4096)
    for ts in (500, 900, 700, 1200, 1100, 1000):
        append(plog, [ts])
    segments = plog.segments
    assert len(segments) > 2
    for seg in segments[:-1]:
        last = seg.time_index.last_entry
        assert last is not None and last.timestamp == seg.max_timestamp()
    plog.close()


# -- lookups ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("segment_bytes", [700, 1 << 20])
def test_lookup_finds_the_first_record_at_or_after_the_target(
    tmp_path: Path, seed: int, segment_bytes: int
) -> None:
    plog = random_log(tmp_path, seed, segment_bytes=segment_bytes, interval=150)
    records = all_records(plog)
    stamps = sorted({ts for _, ts in records})
    targets = [0, stamps[0] - 1, *stamps, stamps[-1] + 1, *(t + 1 for t in stamps[::7])]
    for target in targets:
        assert plog.offset_for_timestamp(target) == expected_for(records, target), target
    assert plog.max_timestamp_offset() == expected_max(records)
    plog.close()


def test_equal_timestamps_answer_the_first_record_carrying_them(tmp_path: Path) -> None:
    plog = open_log(tmp_path, interval=0)
    for _ in range(10):
        append(plog, [5_000, 5_000])
    append(plog, [6_000])
    assert plog.offset_for_timestamp(5_000) == (5_000, 0)
    assert plog.offset_for_timestamp(5_001) == (6_000, 20)
    assert plog.max_timestamp_offset() == (6_000, 20)
    plog.close()


def test_the_record_not_the_batch_answers_inside_an_unordered_batch(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    append(plog, [100, 300, 200, 300])
    assert plog.offset_for_timestamp(150) == (300, 1)
    assert plog.offset_for_timestamp(250) == (300, 1)
    assert plog.offset_for_timestamp(200) == (300, 1)
    assert plog.offset_for_timestamp(301) is None
    assert plog.max_timestamp_offset() == (300, 1)
    plog.close()


def test_empty_log_has_no_answers(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    assert plog.offset_for_timestamp(0) is None
    assert plog.max_timestamp_offset() is None
    plog.close()


# -- recovery -----------------------------------------------------------------------------


def timeindex_files(path: Path) -> dict[str, bytes]:
    return {n: (path / n).read_bytes() for n in sorted(os.listdir(path)) if n.endswith(TIMEINDEX)}


@pytest.mark.parametrize("mode", ["clean", "crash"])
@pytest.mark.parametrize("damage", ["missing", "garbage", "stale", "all-missing"])
def test_missing_or_damaged_time_index_is_rebuilt(
    tmp_path: Path, mode: RecoveryMode, damage: str
) -> None:
    plog = random_log(tmp_path, 7, segment_bytes=1500, interval=150)
    records = all_records(plog)
    plog.close()
    good = timeindex_files(tmp_path)
    assert len(good) >= 3
    names = sorted(good)
    victim = tmp_path / names[1]
    if damage == "missing":
        victim.unlink()
    elif damage == "garbage":
        victim.write_bytes(b"\x7f" * 12 + b"\x01\x02")
    elif damage == "stale":
        # A last entry naming an offset beyond the segment (left from before a truncation).
        victim.write_bytes(good[names[1]] + ENTRY.pack(2**40, 10**6))
    else:
        for name in names:
            (tmp_path / name).unlink()  # a data directory from before time indexes
    plog = open_log(tmp_path, mode, segment_bytes=1500, interval=150)
    assert timeindex_files(tmp_path) == good
    assert plog.recovery.indexes_rebuilt >= 1
    for target in sorted({ts for _, ts in records})[::5]:
        assert plog.offset_for_timestamp(target) == expected_for(records, target)
    assert plog.max_timestamp_offset() == expected_max(records)
    plog.close()


def test_clean_open_trusts_the_time_index_and_reads_only_tails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plog = random_log(tmp_path, 11, segment_bytes=3000, interval=150)
    expected = [s.max_timestamp() for s in plog.segments]
    records = all_records(plog)
    plog.close()
    before = timeindex_files(tmp_path)
    size = sum(p.stat().st_size for p in tmp_path.glob("*.log"))
    read = 0
    real = segment_module.Segment._pread

    def counting(self: Segment, length: int, pos: int) -> bytes:
        nonlocal read
        data = real(self, length, pos)
        read += len(data)
        return data

    monkeypatch.setattr(segment_module.Segment, "_pread", counting)
    plog = open_log(tmp_path, "clean", segment_bytes=3000, interval=150)
    assert plog.recovery.indexes_rebuilt == 0
    assert [s.max_timestamp() for s in plog.segments] == expected
    assert timeindex_files(tmp_path) == before  # nothing rewritten
    # Retention's question (the newest timestamp of each segment) costs no log reads.
    opened = read
    plog.apply_retention(now_ms=expected[0] + 10**9, retention_ms=10**12)
    assert read == opened
    assert plog.max_timestamp_offset() == expected_max(records)
    plog.close()
    assert opened < size


def test_truncation_drops_time_entries_for_lost_records(tmp_path: Path) -> None:
    plog = open_log(tmp_path, interval=0)
    for i in range(10):
        append(plog, [1_000 + 100 * i])
    active = plog.active_segment.log_path
    plog.close_unclean()
    with open(active, "r+b") as f:
        f.truncate(os.path.getsize(active) - 10)  # tear the last batch
    plog = open_log(tmp_path, "crash", interval=0)
    assert plog.log_end_offset == 9
    last = plog.active_segment.time_index.last_entry
    assert last is not None and last.offset < 9 and last.timestamp <= 1_800
    assert plog.offset_for_timestamp(1_850) is None
    assert plog.offset_for_timestamp(1_800) == (1_800, 8)
    assert plog.max_timestamp_offset() == (1_800, 8)
    plog.close()


# -- retention ----------------------------------------------------------------------------


def test_retention_deletes_the_time_index_with_its_segment(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=100, interval=0)  # one batch per segment
    for ts in (1_000, 2_000, 3_000, 4_000):
        append(plog, [ts])
    assert (tmp_path / file_name(0, TIMEINDEX)).exists()
    deleted = plog.apply_retention(now_ms=3_500, retention_ms=1_000)
    assert deleted == 2
    assert plog.log_start_offset == 2
    assert not (tmp_path / file_name(0, TIMEINDEX)).exists()
    assert not (tmp_path / file_name(1, TIMEINDEX)).exists()
    # Lookups now start at the new log start.
    assert plog.offset_for_timestamp(0) == (3_000, 2)
    assert plog.max_timestamp_offset() == (4_000, 3)
    plog.close()


def test_leftover_time_index_files_do_not_survive(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    append(plog, [1_000])
    plog.close()
    (tmp_path / file_name(99, TIMEINDEX)).write_bytes(ENTRY.pack(5, 0))  # its .log is gone
    plog = open_log(tmp_path)
    assert not (tmp_path / file_name(99, TIMEINDEX)).exists()
    plog.close()
    stale = tmp_path / "fresh"
    stale.mkdir()
    (stale / file_name(0, TIMEINDEX)).write_bytes(ENTRY.pack(10**12, 50) * 3)
    seg = Segment.create(stale, 0, index_interval_bytes=0)
    assert not (stale / file_name(0, TIMEINDEX)).exists()
    seg.close()
