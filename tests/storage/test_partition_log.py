"""PartitionLog: offsets, rolling, idempotent appends, reads, and state after reopening."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import crc_ok, iter_batches, parse_header
from storage.partition_log import AppendResult, OffsetOutOfRangeError, PartitionLog
from storage.segment import file_name
from tests.storage.test_segment import make_batch

OOO = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
PID = 4000


def open_log(path: Path, segment_bytes: int = 1 << 20) -> PartitionLog:
    return PartitionLog.open(path, "t", 0, segment_bytes=segment_bytes, index_interval_bytes=256)


def produce(
    plog: PartitionLog,
    n: int = 1,
    *,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    now_ms: int = 1,
    leader_epoch: int = 0,
) -> AppendResult:
    batch = make_batch(n, producer_id=pid, epoch=epoch, base_seq=seq, value_size=40)
    return plog.append(batch, parse_header(batch), now_ms, leader_epoch)


def log_bytes(path: Path) -> bytes:
    """Every .log file of the partition, in base-offset order."""
    return b"".join((path / n).read_bytes() for n in sorted(os.listdir(path)) if n.endswith(".log"))


def stored_headers(path: Path) -> list[tuple[int, int, int]]:
    """(base_offset, records, producer base_sequence) of every batch on disk."""
    data = log_bytes(path)
    return [(h.base_offset, h.records_count, h.base_sequence) for _, h in iter_batches(data)]


def test_open_creates_directory_and_first_segment(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    assert (plog.log_start_offset, plog.log_end_offset, plog.high_watermark) == (0, 0, 0)
    plog.close()
    assert sorted(os.listdir(path)) == [file_name(0, ".index"), file_name(0, ".log")]


def test_append_assigns_offsets_and_patches_only_offset_and_epoch(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    client = [make_batch(n, value_size=40) for n in (1, 3, 2)]
    results = []
    for b in client:
        sent = bytearray(b)
        results.append(plog.append(sent, parse_header(sent), now_ms=1, leader_epoch=7))
    assert [r.base_offset for r in results] == [0, 1, 4]
    assert all(r == AppendResult(ErrorCode.NONE, r.base_offset, -1, 0) for r in results)
    assert plog.log_end_offset == plog.high_watermark == 6
    plog.close()
    data = log_bytes(path)
    stored = list(iter_batches(data))
    assert [h.base_offset for _, h in stored] == [0, 1, 4]
    for (pos, h), original in zip(stored, client, strict=True):
        raw = data[pos : pos + h.size]
        assert h.partition_leader_epoch == 7
        # The client's bytes are kept as sent apart from base offset and leader epoch,
        # which lie before the CRC'd range, so the stored CRC is still right.
        assert raw[8:12] == original[8:12] and raw[16:] == original[16:]
        assert crc_ok(raw)


def test_rolls_segments_at_segment_bytes(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    size = len(make_batch(1, value_size=40))
    plog = open_log(path, segment_bytes=3 * size)
    for _ in range(10):
        assert produce(plog).error == ErrorCode.NONE
    assert [s.base_offset for s in plog.segments] == [0, 3, 6, 9]
    plog.close()
    logs = sorted(n for n in os.listdir(path) if n.endswith(".log"))
    assert logs == [file_name(o, ".log") for o in (0, 3, 6, 9)]
    assert [(path / n).stat().st_size for n in logs] == [3 * size] * 3 + [size]
    plog = open_log(path, segment_bytes=3 * size)
    assert plog.log_end_offset == 10
    assert [h.base_offset for h, _ in plog.batches(4)] == list(range(4, 10))
    assert produce(plog).base_offset == 10
    plog.close()
    assert stored_headers(path) == [(o, 1, -1) for o in range(11)]


def test_batch_larger_than_segment_bytes_gets_its_own_segment(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path, segment_bytes=200)
    produce(plog)
    big = make_batch(5, value_size=100)
    assert plog.append(big, parse_header(big), 1).base_offset == 1
    produce(plog)
    assert [(s.base_offset, s.next_offset) for s in plog.segments] == [(0, 1), (1, 6), (6, 7)]
    plog.close()


def test_read_across_segments_and_bounds(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    size = len(make_batch(2, value_size=40))
    plog = open_log(path, segment_bytes=2 * size)
    for _ in range(5):
        produce(plog, 2)
    plog.close()
    data = log_bytes(path)
    plog = open_log(path, segment_bytes=2 * size)
    for offset in range(10):
        start = (offset // 2) * size
        got = plog.read(offset, size)
        assert got == data[start : start + size]
    # One read stays within a segment, as in Kafka.
    assert plog.read(0, 10 * size) == data[: 2 * size]
    assert plog.read(10, 1000) == b""
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(11, 1000)
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(-1, 1000)
    plog.close()


def test_idempotent_success_and_duplicate_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    assert produce(plog).base_offset == 0  # a non-idempotent batch first
    first = produce(plog, 3, pid=PID, epoch=0, seq=0)
    assert first == AppendResult(ErrorCode.NONE, 1, -1, 0)
    plog.flush()
    size = len(log_bytes(path))
    dup = produce(plog, 3, pid=PID, epoch=0, seq=0)
    # Kafka answers a duplicate with the original batch's timestamp as log_append_time.
    original = next(h for h, _ in plog.batches(1))
    assert dup == AppendResult(ErrorCode.NONE, 1, original.max_timestamp, 0)
    plog.flush()
    assert len(log_bytes(path)) == size
    assert plog.log_end_offset == 4
    entry = plog.producers.get(PID)
    # Expiration counts from the batch's max timestamp, not the append's now_ms (1 here).
    assert entry is not None and entry.last_seq == 2
    assert entry.last_timestamp_ms == original.max_timestamp != 1
    plog.close()


def test_errors_answer_base_offset_minus_one_and_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    produce(plog, 2, pid=PID, epoch=3, seq=0)
    assert produce(plog, 1, pid=PID, epoch=3, seq=5) == AppendResult(OOO, -1, -1, 0)
    assert produce(plog, 1, pid=PID, epoch=2, seq=2) == AppendResult(
        ErrorCode.INVALID_PRODUCER_EPOCH, -1, -1, 0
    )
    assert produce(plog, 1, pid=PID, epoch=4, seq=1).error == OOO
    assert produce(plog, 1, pid=PID, epoch=4, seq=0).base_offset == 2
    plog.close()
    assert stored_headers(path) == [(0, 2, 0), (2, 1, 0)]


def test_seed_lost_acks_for_last_two_of_five(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    offsets = [produce(plog, 2, pid=PID, epoch=0, seq=2 * i).base_offset for i in range(5)]
    assert offsets == [0, 2, 4, 6, 8]
    # The client never saw the ACKs of the last two and resends them.
    assert produce(plog, 2, pid=PID, epoch=0, seq=6).base_offset == 6
    assert produce(plog, 2, pid=PID, epoch=0, seq=8).base_offset == 8
    assert produce(plog, 2, pid=PID, epoch=0, seq=10).base_offset == 10
    plog.close()
    assert stored_headers(path) == [(o, 2, o) for o in range(0, 12, 2)]


def test_seed_lost_batch_in_the_middle(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    produce(plog, 1, pid=PID, epoch=0, seq=0)
    # seq 1 was lost on the way; 2 and 3 arrive and are refused.
    assert produce(plog, 1, pid=PID, epoch=0, seq=2).error == OOO
    assert produce(plog, 1, pid=PID, epoch=0, seq=3).error == OOO
    for seq in (1, 2, 3):  # the client resends in order
        assert produce(plog, 1, pid=PID, epoch=0, seq=seq).base_offset == seq
    plog.close()
    assert stored_headers(path) == [(i, 1, i) for i in range(4)]


def test_seed_six_in_flight_oldest_resent_is_not_stored_twice(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    for seq in range(6):
        produce(plog, 1, pid=PID, epoch=0, seq=seq)
    assert produce(plog, 1, pid=PID, epoch=0, seq=0).error == OOO
    assert produce(plog, 1, pid=PID, epoch=0, seq=1).base_offset == 1  # still cached
    plog.close()
    assert stored_headers(path) == [(i, 1, i) for i in range(6)]


def test_sequence_wrap_is_accepted(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    assert produce(plog, 3, pid=PID, epoch=0, seq=2147483645).error == ErrorCode.NONE
    assert produce(plog, 2, pid=PID, epoch=0, seq=0).base_offset == 3
    plog.close()


def test_producer_state_rebuilt_on_reopen(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    size = len(make_batch(2, value_size=40))
    plog = open_log(path, segment_bytes=3 * size)
    for i in range(7):
        produce(plog, 2, pid=PID, epoch=1, seq=2 * i, now_ms=50)
    produce(plog, 1, pid=PID + 1, epoch=0, seq=10)
    produce(plog)
    plog.close()
    plog = open_log(path, segment_bytes=3 * size)
    entry = plog.producers.get(PID)
    assert entry is not None
    assert (entry.epoch, entry.last_seq, entry.last_offset) == (1, 13, 13)
    assert [b.base_offset for b in entry.batches] == [4, 6, 8, 10, 12]
    other = plog.producers.get(PID + 1)
    assert other is not None and other.last_offset == 14
    assert produce(plog, 2, pid=PID, epoch=1, seq=12).base_offset == 12  # duplicate
    assert produce(plog, 2, pid=PID, epoch=1, seq=16).error == OOO
    assert produce(plog, 2, pid=PID, epoch=0, seq=14).error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert produce(plog, 2, pid=PID, epoch=1, seq=14).base_offset == 16
    plog.close()


def test_reopen_after_torn_write_rewinds_log_end(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    produce(plog, 2, pid=PID, epoch=0, seq=0)
    produce(plog, 2, pid=PID, epoch=0, seq=2)
    plog.close()
    seg_path = path / file_name(0, ".log")
    data = seg_path.read_bytes()
    seg_path.write_bytes(data[:-5])
    plog = open_log(path)
    assert plog.log_end_offset == 2
    # The torn batch is gone, so its retry is a fresh append at the same offset.
    assert produce(plog, 2, pid=PID, epoch=0, seq=2).base_offset == 2
    plog.close()
    assert seg_path.read_bytes() == data


def test_batches_from_offset(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", segment_bytes=300)
    for n in (1, 3, 2, 4):
        produce(plog, n)
    assert [h.base_offset for h, _ in plog.batches()] == [0, 1, 4, 6]
    assert [h.base_offset for h, _ in plog.batches(2)] == [1, 4, 6]
    assert [h.base_offset for h, _ in plog.batches(6)] == [6]
    assert list(plog.batches(10)) == []
    for h, data in plog.batches():
        assert parse_header(data) == h and crc_ok(data)
    plog.close()


def test_read_slice_without_min_one_message_marks_a_first_batch_that_does_not_fit(
    tmp_path: Path,
) -> None:
    """LogSegment.read: with minOneMessage off, a limit below the first batch's size reads
    nothing and says the first entry is incomplete; a limit of 0 reads nothing, complete."""
    path = tmp_path / "t-0"
    plog = open_log(path)
    produce(plog, 2)
    produce(plog, 2)
    size = len(make_batch(2, value_size=40))
    whole = plog.read_slice(0, 1)
    assert (whole.length, whole.first_entry_incomplete) == (size, False)
    cut = plog.read_slice(0, size - 1, min_one_message=False)
    assert (cut.length, cut.first_entry_incomplete) == (0, True)
    empty = plog.read_slice(2, 0, min_one_message=False)
    assert (empty.length, empty.first_entry_incomplete) == (0, False)
    # A fitting first batch may be followed by part of the next one, as Kafka sends it.
    partial = plog.read_slice(0, size + 10, min_one_message=False)
    assert (partial.length, partial.first_entry_incomplete) == (size + 10, False)
    assert plog.read_slice(4, 1000, min_one_message=False).length == 0
    plog.close()
