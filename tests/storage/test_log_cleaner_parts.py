"""The log cleaner's parts: offset map, throttle, checkpoint file, batch filter, selection."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from protocol.records import (
    CorruptBatchError,
    Record,
    build_batch,
    decode_records,
    encode_records,
    parse_header,
)
from storage import cleaner_checkpoint, record_walk
from storage.batch_filter import BatchRetention, filter_batch
from storage.cleaner_selection import log_to_clean
from storage.io_throttle import Throttler
from storage.offset_map import BYTES_PER_ENTRY, OffsetMap

from .cleaner_helpers import open_compacted, put


def test_offset_map_slots_latest_offset_and_overwrites() -> None:
    m = OffsetMap(10 * BYTES_PER_ENTRY + 5)
    assert m.slots == 10
    m.put(b"a", 3)
    m.put(b"b", 4)
    m.put(b"a", 7)
    assert (m.size, m.get(b"a"), m.get(b"b"), m.get(b"c")) == (2, 7, 4, -1)
    assert m.latest_offset == 7 and m.utilization == 0.2
    m.clear()
    assert (m.size, m.latest_offset) == (0, -1)


def test_record_walks_read_one_two_and_longer_varints_as_the_decoder_does() -> None:
    # Key lengths, values and deltas whose varints take one, two and three or more bytes.
    records = [
        Record(0, 0, b"", b"v", ()),
        Record(1, -1, None, None, ()),
        Record(70, 63, b"k" * 63, b"x" * 64, ()),
        Record(300, -65, b"k" * 64, None, (("h", b"1"),)),
        Record(9_000, 8_192, b"k" * 8_191, b"y" * 8_192, ()),
        Record(70_000, -(2**40), b"k" * 8_192, b"z" * 20_000, ()),
    ]
    data = encode_records(records)
    walked = record_walk.walk(data, len(records))
    keys, deltas = record_walk.keys_and_offset_deltas(data, len(records))
    assert walked.keys == keys == [r.key for r in records]
    assert walked.offset_deltas == deltas == [r.offset_delta for r in records]
    assert walked.ts_deltas == [r.timestamp_delta for r in records]
    assert walked.has_value == [r.value is not None for r in records]
    assert walked.starts[0] == 0 and walked.ends[-1] == len(data)
    assert walked.ends[:-1] == walked.starts[1:]
    # Kept records spliced back with their timestamps re-based decode as the originals.
    spliced = record_walk.splice(data, walked, [2, 4], 5)
    again = record_walk.walk(spliced, 2)
    assert again.keys == [records[2].key, records[4].key]
    assert again.ts_deltas == [63 - 5, 8_192 - 5]
    for cut in (1, len(data) // 2, len(data) - 1):
        with pytest.raises(CorruptBatchError):
            record_walk.walk(data[:cut], len(records))
        with pytest.raises(CorruptBatchError):
            record_walk.keys_and_offset_deltas(data[:cut], len(records))


def test_throttler_holds_io_to_the_rate() -> None:
    throttler = Throttler(1_000_000)
    started = time.monotonic()
    for _ in range(40):  # 2 MB, 0.4 s of work unthrottled
        throttler.maybe_throttle(50_000)
        time.sleep(0.01)
    assert time.monotonic() - started >= 1.5


def test_checkpoint_file_round_trip(tmp_path: Path) -> None:
    cleaner_checkpoint.write(tmp_path, {("t", 0): 42, ("other.topic", 3): 7})
    text = (tmp_path / "cleaner-offset-checkpoint").read_text()
    assert text.splitlines()[:2] == ["0", "2"]
    assert cleaner_checkpoint.read(tmp_path) == {("t", 0): 42, ("other.topic", 3): 7}
    (tmp_path / "cleaner-offset-checkpoint").write_text("garbage")
    assert cleaner_checkpoint.read(tmp_path) == {}


def test_an_emptied_batch_keeps_offsets_sequence_and_producer() -> None:
    batch = build_batch(
        [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")],
        base_offset=10,
        producer_id=4,
        producer_epoch=2,
        base_sequence=7,
        base_timestamp=5_000,
    )
    header = parse_header(batch)
    out = filter_batch(
        batch, header, BatchRetention.RETAIN_EMPTY, False, lambda k, v, o: False, 0, 0
    )
    assert out.data is not None
    empty = parse_header(out.data)
    assert (empty.base_offset, empty.last_offset, empty.records_count) == (10, 12, 0)
    assert (empty.producer_id, empty.producer_epoch, empty.base_sequence) == (4, 2, 7)
    assert empty.last_sequence == 9 and empty.max_timestamp == 5_000
    assert (
        filter_batch(
            batch, header, BatchRetention.DELETE_EMPTY, False, lambda k, v, o: False, 0, 0
        ).data
        is None
    )


def test_a_tombstone_batch_gets_a_delete_horizon_and_keeps_timestamps() -> None:
    batch = build_batch([(b"a", b"1"), (b"b", None)], base_offset=0, base_timestamp=5_000)
    header = parse_header(batch)
    out = filter_batch(
        batch, header, BatchRetention.DELETE_EMPTY, False, lambda k, v, o: o == 1, 9_000, 500
    )
    assert out.data is not None
    rebuilt = parse_header(out.data)
    assert rebuilt.delete_horizon_ms == 9_500 and rebuilt.last_offset_delta == 1
    (record,) = decode_records(out.data, rebuilt)
    assert record.offset_delta == 1 and record.value is None
    assert rebuilt.base_timestamp + record.timestamp_delta == 5_000


def test_dirty_ratio_and_compaction_lags(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path, segment_bytes=300, min_compaction_lag_ms=1000)
    for i in range(6):
        put(plog, [(b"k", b"v%d" % i)], ts=1_000 + i * 1_000)
    plog.roll()
    put(plog, [(b"z", b"z")], ts=20_000)
    everything = log_to_clean(plog, None, 100_000)
    assert everything.first_uncleanable_offset == plog.active_segment.base_offset
    assert everything.cleanable_ratio == 1.0
    # min.compaction.lag.ms: segments with a record younger than the lag stay dirty.
    young = log_to_clean(plog, None, 6_500)
    assert 0 < young.first_uncleanable_offset < everything.first_uncleanable_offset
    # A checkpoint: the part below it is clean.
    half = log_to_clean(plog, young.first_uncleanable_offset, 100_000)
    assert 0 < half.cleanable_ratio < 1 and half.clean_bytes > 0
    assert not half.need_compaction_now
    plog.config = plog.config.__class__(
        **{
            **{f: getattr(plog.config, f) for f in plog.config.__slots__},
            "max_compaction_lag_ms": 10,
        }
    )
    assert log_to_clean(plog, None, 100_000).need_compaction_now
    # A checkpoint past the log end is reset to the log start.
    reset = log_to_clean(plog, 10_000, 100_000)
    assert reset.first_dirty_offset == 0 and reset.force_update_checkpoint
    plog.close()
