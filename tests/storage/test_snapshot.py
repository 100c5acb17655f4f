"""Snapshot files: layout, checks, atomic naming, and setting a corrupt one aside."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import pytest

from storage.producer_state import BatchMetadata, ProducerEntry
from storage.snapshot import (
    CorruptSnapshotError,
    decode,
    encode,
    list_snapshots,
    read_snapshot,
    set_aside,
    write_snapshot,
)


def entry(pid: int, epoch: int, windows: list[tuple[int, int, int, int]]) -> ProducerEntry:
    """A producer with batches given as (first_seq, last_seq, base_offset, last_offset)."""
    e = ProducerEntry(pid, epoch, last_timestamp_ms=1_700_000_000_000 + pid)
    for first, last, base, end in windows:
        e.batches.append(BatchMetadata(first, last, base, end, 5_000 + base))
    return e


def sample() -> list[ProducerEntry]:
    five = [(2 * i, 2 * i + 1, 10 + 2 * i, 11 + 2 * i) for i in range(5)]
    wrapped = [(2147483646, 0, 30, 32)]  # sequences wrap after 2^31 - 1
    return [entry(1000, 3, five), entry(7, 0, wrapped), entry(99, 32767, [])]


def as_tuple(entries: list[ProducerEntry]) -> list[tuple[object, ...]]:
    return [(e.producer_id, e.epoch, e.last_timestamp_ms, list(e.batches)) for e in entries]


def test_round_trip_keeps_all_five_batches_of_each_producer() -> None:
    snap = decode(encode(40, 12, sample()), 40)
    assert (snap.offset, snap.recovery_point) == (40, 12)
    assert as_tuple(snap.producers) == as_tuple(sample())
    assert len(snap.producers[0].batches) == 5


def test_layout_is_as_documented() -> None:
    """docs/SNAPSHOT_FORMAT.md version 2, byte for byte, for one producer with one batch."""
    one = entry(5, 2, [(0, 3, 8, 11)])
    one.coordinator_epoch, one.current_txn_first_offset = 4, 10
    body = (
        struct.pack(">qqi", 12, 8, 1)
        + struct.pack(">qhqiqh", 5, 2, 1_700_000_000_005, 4, 10, 1)
        + struct.pack(">iiqiq", 0, 3, 8, 3, 5_008)
    )
    assert encode(12, 8, [one]) == struct.pack(">hI", 2, crc32c.crc32c(body)) + body


def test_version_1_files_are_still_read_with_no_open_transaction() -> None:
    body = (
        struct.pack(">qqi", 12, 8, 1)
        + struct.pack(">qhqh", 5, 2, 1_700_000_000_005, 1)
        + struct.pack(">iiqiq", 0, 3, 8, 3, 5_008)
    )
    snap = decode(struct.pack(">hI", 1, crc32c.crc32c(body)) + body, 12)
    (producer,) = snap.producers
    assert (producer.producer_id, producer.epoch, producer.last_seq) == (5, 2, 3)
    assert (producer.coordinator_epoch, producer.current_txn_first_offset) == (-1, -1)


def test_open_transaction_at_or_above_the_snapshot_offset_is_corrupt() -> None:
    one = entry(5, 2, [])
    one.current_txn_first_offset = 12
    with pytest.raises(CorruptSnapshotError):
        decode(encode(12, 8, [one]), 12)


def test_every_flipped_byte_is_detected() -> None:
    data = encode(40, 12, sample())
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x40
        with pytest.raises(CorruptSnapshotError):
            decode(bytes(bad), 40)


@pytest.mark.parametrize("cut", [0, 1, 5, 6, 20, 30, -1])
def test_truncated_files_are_corrupt(cut: int) -> None:
    data = encode(40, 12, sample())
    with pytest.raises(CorruptSnapshotError):
        decode(data[:cut], 40)


def _resealed(body: bytes, version: int = 2) -> bytes:
    return struct.pack(">hI", version, crc32c.crc32c(body)) + body


def test_checks_beyond_the_crc() -> None:
    good = encode(40, 12, sample())
    body = good[6:]
    with pytest.raises(CorruptSnapshotError, match="version"):
        decode(_resealed(body, version=3))
    with pytest.raises(CorruptSnapshotError, match="file name"):
        decode(good, 41)
    with pytest.raises(CorruptSnapshotError, match="after the last producer"):
        decode(_resealed(body + b"\x00"))
    # A batch at or beyond the snapshot offset cannot have been appended before it.
    with pytest.raises(CorruptSnapshotError, match="implausible"):
        decode(encode(11, 0, [entry(1, 0, [(0, 0, 11, 11)])]))
    # More batches than any producer may have in flight.
    six = b"".join(struct.pack(">iiqiq", i, i, i, 0, 0) for i in range(6))
    raw = struct.pack(">qqi", 10, 0, 1) + struct.pack(">qhqh", 1, 0, 0, 6) + six
    with pytest.raises(CorruptSnapshotError, match="batch count"):
        decode(_resealed(raw, version=1))
    # The same producer twice.
    with pytest.raises(CorruptSnapshotError, match="producer id"):
        decode(encode(10, 0, [entry(1, 0, []), entry(1, 0, [])]))
    # Recovery point beyond the offset.
    with pytest.raises(CorruptSnapshotError, match="recovery point"):
        decode(encode(10, 11, []))


def test_write_is_atomic_and_named_by_offset(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, 42, 40, sample())
    assert path.name == "00000000000000000042.snapshot"
    assert os.listdir(tmp_path) == [path.name]  # no temporary file left behind
    (tmp_path / "00000000000000000007.snapshot").write_bytes(encode(7, 0, []))
    (tmp_path / "7.snapshot").write_bytes(b"")
    (tmp_path / "00000000000000000009.snapshot.corrupt").write_bytes(b"")
    assert list_snapshots(tmp_path) == [7, 42]
    assert as_tuple(read_snapshot(tmp_path, 42).producers) == as_tuple(sample())
    write_snapshot(tmp_path, 42, 42, [])  # replaces
    assert read_snapshot(tmp_path, 42).producers == []


def test_set_aside_keeps_the_bytes_under_another_name(tmp_path: Path) -> None:
    write_snapshot(tmp_path, 5, 0, sample())
    data = (tmp_path / "00000000000000000005.snapshot").read_bytes()
    target = set_aside(tmp_path, 5)
    assert target.name == "00000000000000000005.snapshot.corrupt"
    assert target.read_bytes() == data
    assert list_snapshots(tmp_path) == []


@pytest.mark.parametrize("epoch", [-1, -32768, 0, 32767])
def test_any_int16_epoch_the_produce_path_accepts_round_trips(epoch: int) -> None:
    # Produce validates no epoch range (nor does Kafka's): a producer id with epoch -1 is
    # stored, so its snapshot must load rather than be declared corrupt.
    producers = [entry(3, epoch, [(0, 1, 0, 1)])]
    assert as_tuple(decode(encode(2, 2, producers), 2).producers) == as_tuple(producers)
