"""Segment files: wire bytes on disk, sparse index, lookup/read, recovery of a torn tail."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import pytest

from protocol.records import crc_ok, iter_batches, parse_header, set_base_offset
from storage.offset_index import ENTRY
from storage.segment import Segment, file_name, parse_file_name

_BATCH_HEAD = struct.Struct(">qiibIhiqqqhii")


def _varint(value: int) -> bytes:
    """Zigzag varint, as in Kafka's record encoding."""
    v = (value << 1) ^ (value >> 63)
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def make_batch(
    n_records: int = 1,
    *,
    producer_id: int = -1,
    epoch: int = -1,
    base_seq: int = -1,
    value_size: int = 10,
    timestamp: int = 1_000,
    fill: bytes = b"v",
) -> bytearray:
    """An uncompressed RecordBatch v2 exactly as a client sends it (base offset 0)."""
    records = bytearray()
    for i in range(n_records):
        value = (fill * value_size)[:value_size]
        body = (
            b"\x00"  # record attributes
            + _varint(i)  # timestamp delta
            + _varint(i)  # offset delta
            + _varint(-1)  # null key
            + _varint(len(value))
            + value
            + _varint(0)  # no headers
        )
        records += _varint(len(body)) + body
    batch = bytearray(
        _BATCH_HEAD.pack(
            0,
            49 + len(records),
            -1,
            2,
            0,
            0,
            n_records - 1,
            timestamp,
            timestamp + n_records - 1,
            producer_id,
            epoch,
            base_seq,
            n_records,
        )
    )
    batch += records
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return batch


def placed(batch: bytearray, base_offset: int) -> bytearray:
    out = bytearray(batch)
    set_base_offset(out, base_offset)
    return out


def fill_segment(seg: Segment, sizes: list[int]) -> list[bytearray]:
    """Append one batch per entry of ``sizes`` (records per batch); returns the bytes."""
    written = []
    for n in sizes:
        b = placed(make_batch(n, value_size=20), seg.next_offset)
        seg.append(b, seg.next_offset, seg.next_offset + n - 1)
        written.append(b)
    return written


def read_index_file(path: Path) -> list[tuple[int, int]]:
    return list(ENTRY.iter_unpack(path.read_bytes()))


def test_make_batch_is_a_valid_batch() -> None:
    b = make_batch(3, producer_id=7, epoch=1, base_seq=4)
    h = parse_header(b)
    assert (h.records_count, h.last_offset_delta, h.last_sequence, h.size) == (3, 2, 6, len(b))
    assert crc_ok(b)


def test_file_names_are_20_digit_base_offsets(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 42)
    seg.close()
    assert sorted(os.listdir(tmp_path)) == [
        "00000000000000000042.index",
        "00000000000000000042.log",
    ]
    assert file_name(42, ".log") == "00000000000000000042.log"
    assert parse_file_name("00000000000000000042.log", ".log") == 42
    assert parse_file_name("42.log", ".log") is None
    assert parse_file_name("00000000000000000042.index", ".log") is None


def test_log_file_holds_appended_bytes_exactly(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 0)
    batches = fill_segment(seg, [1, 3, 2])
    positions = [0, len(batches[0]), len(batches[0]) + len(batches[1])]
    seg.close()
    data = (tmp_path / file_name(0, ".log")).read_bytes()
    assert data == b"".join(batches)
    assert [(p, h.base_offset) for p, h in iter_batches(data)] == list(
        zip(positions, [0, 1, 4], strict=True)
    )


def test_short_writes_are_continued_where_they_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pwrite may write less than asked (a signal, a nearly full disk): the append goes on
    from there until the whole batch is in the file."""
    real_pwrite = os.pwrite
    calls: list[int] = []

    def seven_bytes_at_a_time(fd: int, data: bytes, offset: int) -> int:
        calls.append(offset)
        return real_pwrite(fd, bytes(memoryview(data)[:7]), offset)

    seg = Segment.create(tmp_path, 0)
    monkeypatch.setattr(os, "pwrite", seven_bytes_at_a_time)
    batches = fill_segment(seg, [1, 3])
    monkeypatch.undo()
    seg.close()
    data = (tmp_path / file_name(0, ".log")).read_bytes()
    assert data == b"".join(batches)
    assert len(calls) == sum(-(-len(b) // 7) for b in batches)
    assert [h.base_offset for _, h in iter_batches(data)] == [0, 1]


def test_reopen_recovers_size_and_next_offset(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 10)
    batches = fill_segment(seg, [2, 5])
    seg.close()
    seg = Segment.open(tmp_path, 10)
    assert (seg.size, seg.next_offset, seg.truncated_bytes) == (sum(map(len, batches)), 17, 0)
    fill_segment(seg, [1])
    seg.close()
    seg = Segment.open(tmp_path, 10)
    assert seg.next_offset == 18
    seg.close()


def test_empty_segment_next_offset_is_base(tmp_path: Path) -> None:
    Segment.create(tmp_path, 7).close()
    seg = Segment.open(tmp_path, 7)
    assert (seg.size, seg.next_offset) == (0, 7)
    assert seg.read(7, 1000) == b""
    seg.close()


def test_sparse_index_follows_interval_on_disk(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 100, index_interval_bytes=200)
    batches = fill_segment(seg, [1] * 30)
    seg.close()
    # Kafka's rule: an entry for a batch once more than interval bytes came since the last.
    expected, since, pos, offset = [], 0, 0, 100
    for b in batches:
        if since > 200:
            expected.append((offset - 100, pos))
            since = 0
        since += len(b)
        pos += len(b)
        offset += 1
    on_disk = read_index_file(tmp_path / file_name(100, ".index"))
    assert on_disk == expected
    assert len(on_disk) >= 5
    data = (tmp_path / file_name(100, ".log")).read_bytes()
    for rel, p in on_disk:
        assert parse_header(data, p).base_offset == 100 + rel


def test_index_is_rebuilt_when_missing_or_wrong(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 0, index_interval_bytes=100)
    fill_segment(seg, [2] * 20)
    seg.close()
    index_path = tmp_path / file_name(0, ".index")
    good = index_path.read_bytes()
    assert good
    index_path.write_bytes(ENTRY.pack(5, 999_999) + b"\x01\x02")
    Segment.open(tmp_path, 0, index_interval_bytes=100).close()
    assert index_path.read_bytes() == good
    index_path.unlink()
    seg = Segment.open(tmp_path, 0, index_interval_bytes=100)
    assert index_path.read_bytes() == good
    assert seg.index.entries() == [(rel, p) for rel, p in ENTRY.iter_unpack(good)]
    seg.close()


def test_lookup_and_read_every_offset_after_reopen(tmp_path: Path) -> None:
    sizes = [1, 4, 2, 7, 1, 3, 5, 1, 1, 2] * 3
    seg = Segment.create(tmp_path, 50, index_interval_bytes=150)
    batches = fill_segment(seg, sizes)
    seg.close()
    seg = Segment.open(tmp_path, 50, index_interval_bytes=150)
    pos = 0
    offset = 50
    for b, n in zip(batches, sizes, strict=True):
        for o in range(offset, offset + n):
            assert seg.lookup(o) == pos
            assert seg.read(o, len(b)) == bytes(b)
        pos += len(b)
        offset += n
    assert seg.lookup(offset) == seg.size
    assert seg.read(offset, 10_000) == b""
    seg.close()


def test_read_returns_whole_batches_up_to_max_bytes(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 0)
    batches = fill_segment(seg, [1, 1, 1, 1])
    seg.close()
    seg = Segment.open(tmp_path, 0)
    one = len(batches[0])
    assert seg.read(0, 2 * one + one // 2) == bytes(batches[0] + batches[1])
    assert seg.read(1, 10_000) == b"".join(batches[1:])
    # At least one whole batch, however small max_bytes is.
    assert seg.read(2, 1) == bytes(batches[2])
    assert seg.read(2, 0) == bytes(batches[2])
    seg.close()


def test_read_returns_a_batch_larger_than_the_read_ahead(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 0)
    big = placed(make_batch(3, value_size=50_000), 0)
    seg.append(big, 0, 2)
    small = placed(make_batch(1), 3)
    seg.append(small, 3, 3)
    seg.close()
    seg = Segment.open(tmp_path, 0, check_crc=True)
    assert seg.truncated_bytes == 0
    assert seg.read(1, 100) == bytes(big)
    assert seg.read(3, 100) == bytes(small)
    assert [h.base_offset for _, h, _ in seg.batches()] == [0, 3]
    seg.close()


@pytest.mark.parametrize("cut", [1, 30, 61, 70])
def test_open_truncates_a_torn_last_batch(tmp_path: Path, cut: int) -> None:
    seg = Segment.create(tmp_path, 0)
    batches = fill_segment(seg, [2, 2, 3])
    seg.close()
    path = tmp_path / file_name(0, ".log")
    good = len(batches[0]) + len(batches[1])
    with path.open("r+b") as f:
        f.truncate(good + cut)
    seg = Segment.open(tmp_path, 0)
    assert (seg.size, seg.next_offset, seg.truncated_bytes) == (good, 4, cut)
    seg.close()
    assert path.stat().st_size == good
    assert path.read_bytes() == bytes(batches[0] + batches[1])


def test_open_truncates_at_a_header_that_cannot_be_a_batch(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 0)
    batches = fill_segment(seg, [1, 1])
    seg.close()
    path = tmp_path / file_name(0, ".log")
    with path.open("ab") as f:
        f.write(b"\xff" * 100)  # negative length
    seg = Segment.open(tmp_path, 0)
    assert seg.truncated_bytes == 100
    seg.close()
    assert path.read_bytes() == b"".join(batches)


def test_open_truncates_at_bad_magic_and_offsets_going_backwards(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 0)
    batches = fill_segment(seg, [1, 1])
    seg.close()
    path = tmp_path / file_name(0, ".log")
    bad_magic = placed(make_batch(1), 2)
    bad_magic[16] = 1
    path.write_bytes(b"".join(batches) + bad_magic)
    seg = Segment.open(tmp_path, 0)
    assert (seg.size, seg.truncated_bytes) == (sum(map(len, batches)), len(bad_magic))
    seg.close()
    backwards = placed(make_batch(1), 0)
    path.write_bytes(b"".join(batches) + backwards)
    seg = Segment.open(tmp_path, 0)
    assert (seg.next_offset, seg.truncated_bytes) == (2, len(backwards))
    seg.close()


def test_scan_checks_crc_only_when_asked_and_changes_nothing(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 0)
    batches = fill_segment(seg, [1, 2, 1])
    seg.close()
    path = tmp_path / file_name(0, ".log")
    data = bytearray(path.read_bytes())
    data[len(batches[0]) + 70] ^= 0xFF  # a record byte of the second batch
    path.write_bytes(data)
    seg = Segment.open(tmp_path, 0)
    assert seg.scan(check_crc=False) == (len(data), 3, 4, None)
    result = seg.scan(check_crc=True)
    assert (result.valid_bytes, result.batches, result.next_offset) == (len(batches[0]), 1, 1)
    assert result.problem is not None and "CRC" in result.problem
    seg.close()
    assert path.read_bytes() == data
    seg = Segment.open(tmp_path, 0, check_crc=True)
    assert seg.size == len(batches[0])
    seg.close()
    assert path.read_bytes() == bytes(batches[0])


def test_append_rejects_offsets_that_do_not_follow(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 10)
    with pytest.raises(ValueError):
        seg.append(placed(make_batch(1), 9), 9, 9)
    seg.append(placed(make_batch(1), 10), 10, 10)
    with pytest.raises(ValueError):
        seg.append(placed(make_batch(1), 10), 10, 10)
    seg.close()


def test_create_refuses_a_segment_with_data(tmp_path: Path) -> None:
    seg = Segment.create(tmp_path, 0)
    fill_segment(seg, [1])
    seg.close()
    with pytest.raises(FileExistsError):
        Segment.create(tmp_path, 0)
    Segment.create(tmp_path, 5).close()
    Segment.create(tmp_path, 5).close()  # an empty leftover of a crashed roll is reused
