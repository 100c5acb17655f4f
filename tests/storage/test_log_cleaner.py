"""The log cleaner on a storage PartitionLog: Kafka's Cleaner semantics, one pass at a time."""

from __future__ import annotations

import os
from pathlib import Path

from storage.partition_log import PartitionLog

from .cleaner_helpers import clean_once, open_compacted, put, records


def _fill(plog: PartitionLog, keys: int, versions: int) -> None:
    for v in range(versions):
        for k in range(keys):
            put(plog, [(b"k%d" % k, b"v%d-%d" % (k, v))])


def test_keeps_the_latest_version_of_each_key_with_offsets_and_gaps(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path, segment_bytes=2000)
    _fill(plog, 20, 5)
    plog.roll()
    put(plog, [(b"active", b"x")])
    active = plog.active_segment
    end = clean_once(plog)
    assert end == active.base_offset
    got = records(plog)
    latest = {key: (off, val) for off, key, val in got}
    assert len([r for r in got if r[1] != b"active"]) == 20
    for k in range(20):
        off, val = latest[b"k%d" % k]
        assert val == b"v%d-4" % k and off == 80 + k  # original offsets
    assert plog.log_start_offset == 0
    assert plog.segments[0].base_offset == 0
    assert plog.active_segment is active
    # Groups are sized by the segments as they were (groupSegmentsBySize): full ones are
    # cleaned one by one, and the next pass merges what they became into one.
    assert len(plog.segments) == 5
    plog.roll()
    put(plog, [(b"newer", b"y")])
    clean_once(plog, checkpoint=end)
    assert len(plog.segments) == 2
    assert records(plog) == [*got, (101, b"newer", b"y")]
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".cleaned", ".swap"))]


def test_tombstones_stay_until_the_delete_horizon_of_the_cleaning_that_reached_them(
    tmp_path: Path,
) -> None:
    plog = open_compacted(tmp_path, segment_bytes=1000, delete_retention_ms=3000)
    _fill(plog, 5, 2)
    put(plog, [(b"k0", None)])
    plog.roll()
    put(plog, [(b"z", b"z")])
    clean_once(plog, now_ms=10_000)
    kept = records(plog)
    assert (10, b"k0", None) in kept
    assert not [r for r in kept if r[1] == b"k0" and r[2] is not None]
    tomb = next(h for h, _ in plog.batches(0) if h.base_offset == 10)
    assert tomb.delete_horizon_ms == 13_000
    clean_once(plog, now_ms=12_999)
    assert (10, b"k0", None) in records(plog)
    clean_once(plog, now_ms=13_000)
    assert [r for r in records(plog) if r[1] == b"k0"] == []


def test_a_small_offset_map_cleans_in_several_passes(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path, segment_bytes=1500)
    _fill(plog, 30, 3)
    plog.roll()
    put(plog, [(b"z", b"z")])
    end = clean_once(plog, map_entries=12)  # 10 keys a pass (load factor 0.9)
    assert 0 < end < 90
    passes = 1
    while end < plog.active_segment.base_offset:
        end = clean_once(plog, checkpoint=end, map_entries=12)
        passes += 1
    assert passes > 1
    got = {key: val for _, key, val in records(plog) if key != b"z"}
    assert got == {b"k%d" % k: b"v%d-2" % k for k in range(30)}
    assert len(records(plog)) == 31


def test_compressed_batches_are_rebuilt_with_their_codec(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path, segment_bytes=4000)
    for v in range(3):
        put(plog, [(b"a", b"a%d" % v), (b"b", b"b%d" % v), (b"c", b"c%d" % v)], codec=1)
    put(plog, [(b"a", b"last")], codec=1)
    plog.roll()
    put(plog, [(b"z", b"z")])
    clean_once(plog)
    assert records(plog)[:3] == [(7, b"b", b"b2"), (8, b"c", b"c2"), (9, b"a", b"last")]
    headers = [h for h, _ in plog.batches(0)]
    assert all(h.compression == 1 for h in headers[:-1])
    rebuilt = headers[0]
    assert (rebuilt.base_offset, rebuilt.last_offset_delta) == (6, 2)


def test_the_last_batch_of_an_idempotent_producer_survives_empty(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path, segment_bytes=1000)
    put(plog, [(b"a", b"1")], pid=5, epoch=0, seq=0)
    put(plog, [(b"a", b"2")], pid=5, epoch=0, seq=1)
    put(plog, [(b"a", b"3")])  # supersedes the producer's last record
    plog.roll()
    put(plog, [(b"z", b"z")])
    clean_once(plog)
    batches = [h for h, _ in plog.batches(0)]
    empty = next(h for h in batches if h.producer_id == 5)
    assert (empty.base_offset, empty.records_count, empty.base_sequence) == (1, 0, 1)
    assert empty.last_sequence == 1
    plog.close_unclean()
    reopened = open_compacted(tmp_path, segment_bytes=1000)
    entry = reopened.producers.get(5)
    assert entry is not None and entry.last_seq == 1
    reopened.close()


def test_aborted_transactions_go_then_their_markers_after_the_horizon(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path, segment_bytes=1000, delete_retention_ms=100)
    put(plog, [(b"a", b"aborted")], pid=9, epoch=0, seq=0, transactional=True)
    plog.append_marker(9, 0, 0, commit=False, now_ms=1_000)
    put(plog, [(b"b", b"committed")], pid=9, epoch=0, seq=1, transactional=True)
    plog.append_marker(9, 0, 0, commit=True, now_ms=1_000)
    put(plog, [(b"c", b"plain")])
    plog.roll()
    put(plog, [(b"z", b"z")])
    assert [a.first_offset for a in plog.aborted_txns.entries] == [0]
    clean_once(plog, now_ms=10_000)
    assert [r[1:] for r in records(plog)][:2] == [(b"b", b"committed"), (b"c", b"plain")]
    kinds = [(h.base_offset, h.is_control) for h, _ in plog.batches(0)]
    assert (1, True) in kinds  # the ABORT marker stays while its batch was just removed
    assert [a.last_offset for a in plog.aborted_txns.entries] == [1]
    clean_once(plog, now_ms=10_000)  # no batch left: the marker gets a delete horizon
    assert plog.aborted_txns.entries == []
    marker = next(h for h, _ in plog.batches(0) if h.base_offset == 1)
    assert marker.delete_horizon_ms == 10_100
    clean_once(plog, now_ms=10_100)
    assert 1 not in [h.base_offset for h, _ in plog.batches(0)]
    assert 3 in [h.base_offset for h, _ in plog.batches(0)]  # COMMIT: its batch remains
    plog.close()
    reopened = open_compacted(tmp_path, segment_bytes=1000)
    assert reopened.aborted_txns.entries == []
    reopened.close()


def test_the_active_segment_and_open_transactions_are_never_cleaned(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path, segment_bytes=1000)
    put(plog, [(b"a", b"1")])
    put(plog, [(b"a", b"2")], pid=3, epoch=0, seq=0, transactional=True)  # stays open
    put(plog, [(b"a", b"3")])
    plog.roll()
    put(plog, [(b"a", b"4")])
    assert plog.last_stable_offset == 1
    end = clean_once(plog)
    assert end <= 1
    assert [r[2] for r in records(plog)] == [b"1", b"2", b"3", b"4"]


def test_recovery_finishes_a_swap_and_drops_cleaned_leftovers(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path, segment_bytes=600)
    _fill(plog, 4, 4)
    plog.roll()
    put(plog, [(b"z", b"z")])
    plog.flush()
    before = records(plog)
    plog.close_unclean()
    # A crash after the cleaned segment was named .swap, before the swap: the copy of the
    # log taken now is what a cleaner thread would have left.
    from storage.cleaner_selection import log_to_clean
    from storage.io_throttle import Throttler
    from storage.log_cleaner import clean
    from storage.offset_map import OffsetMap

    plog = open_compacted(tmp_path, segment_bytes=600)
    job = plog.cleaning_job(log_to_clean(plog, None, 10_000), 10_000)
    result = clean(job, OffsetMap(1 << 20), 0.9, Throttler(1e309))
    assert result.groups and all(n for n in os.listdir(tmp_path))
    plog.close_unclean()
    (tmp_path / "00000000000000099999.log.cleaned").write_bytes(b"junk")
    reopened = open_compacted(tmp_path, segment_bytes=600)
    names = os.listdir(tmp_path)
    # The .cleaned leftover sits above every .swap: the swaps complete (KAFKA-6264 drops
    # only swaps at or above the lowest .cleaned offset).
    assert not [n for n in names if n.endswith((".cleaned", ".swap"))]
    after = records(reopened)
    assert {k: v for _, k, v in after} == {k: v for _, k, v in before}
    assert len(after) == 5
    assert reopened.log_start_offset == 0
    reopened.close()


def test_recovery_discards_swaps_above_a_cleaned_file(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path, segment_bytes=600)
    _fill(plog, 4, 4)
    plog.roll()
    put(plog, [(b"z", b"z")])
    before = records(plog)
    plog.close_unclean()
    (tmp_path / "00000000000000000000.log.swap").write_bytes(
        (tmp_path / "00000000000000000000.log").read_bytes()[:0]
    )
    (tmp_path / "00000000000000000000.index.cleaned").write_bytes(b"")
    reopened = open_compacted(tmp_path, segment_bytes=600)
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".cleaned", ".swap"))]
    assert records(reopened) == before
    reopened.close()


def test_a_log_changed_under_the_cleaning_keeps_its_segments(tmp_path: Path) -> None:
    from storage.cleaner_selection import log_to_clean
    from storage.io_throttle import Throttler
    from storage.log_cleaner import clean
    from storage.offset_map import OffsetMap

    plog = open_compacted(tmp_path, segment_bytes=600)
    _fill(plog, 4, 4)
    plog.roll()
    put(plog, [(b"z", b"z")])
    before = records(plog)
    job = plog.cleaning_job(log_to_clean(plog, None, 10_000), 10_000)
    result = clean(job, OffsetMap(1 << 20), 0.9, Throttler(1e309))
    # DeleteRecords meanwhile took the first segment away: no swap, the files go.
    plog.delete_records_before(plog.segments[1].base_offset)
    assert not plog.replace_segments(result.groups[0])
    for group in result.groups:
        group.discard()
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".cleaned", ".swap"))]
    assert records(plog) == [r for r in before if r[0] >= plog.log_start_offset]
    plog.close()
