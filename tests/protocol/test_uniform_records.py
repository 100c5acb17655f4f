"""protocol.uniform_records: the compiled-pattern record walk answers exactly as the walk.

The fast path may decline any batch (None: the caller walks it), but whatever it accepts
must get the walk's RecordsScan, and it must accept nothing the walk refuses.
"""

from __future__ import annotations

import random

import pytest

from protocol import uniform_records
from protocol.records import CorruptBatchError, Record, RecordsScan, encode_record, scan_records
from protocol.uniform_records import scan_uniform


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    uniform_records._patterns.clear()
    uniform_records._last_shape[0] = None


def _records(count: int, key_len: int, value_len: int, stamps: list[int]) -> bytes:
    return b"".join(
        encode_record(
            Record(
                i,
                stamps[i],
                None if key_len < 0 else bytes([i % 251]) * key_len,
                None if value_len < 0 else bytes([(i * 7) % 256]) * value_len,
                (),
                0,
            )
        )
        for i in range(count)
    )


def _walk(data: bytes, count: int) -> RecordsScan | str:
    try:
        return scan_records(data, count)
    except CorruptBatchError:
        return "refused"


def _twice(data: bytes, count: int) -> RecordsScan | None:
    """The first sighting of a shape only records it; the second compiles and matches."""
    assert scan_uniform(data, count) is None
    return scan_uniform(data, count)


@pytest.mark.parametrize(
    ("count", "key_len", "value_len", "stamps"),
    [
        (64, -1, 1024, [0] * 64),  # the ingest benchmark's batch
        (64, 16, 100, [i % 50 - 20 for i in range(64)]),
        (65, -1, 10, [0] * 65),  # offset delta 64 takes two bytes
        (500, 8, 100, [i * 3 for i in range(500)]),  # timestamp deltas of two bytes
        (9000, -1, 0, [0] * 9000),  # offset deltas of three bytes
        (5, 0, -1, [70000, 0, -70000, 5, 6]),  # three-byte deltas, null values, empty keys
    ],
)
def test_uniform_batches_get_the_walks_answer(
    count: int, key_len: int, value_len: int, stamps: list[int]
) -> None:
    data = _records(count, key_len, value_len, stamps)
    scan = _twice(data, count)
    assert scan is not None
    assert scan == scan_records(data, count)
    assert scan.min_timestamp_delta == min(stamps)
    assert scan.max_timestamp_delta == max(stamps)
    assert scan.keyless == (tuple(range(count)) if key_len < 0 else ())


def test_batches_it_cannot_read_are_left_to_the_walk() -> None:
    mixed = _records(3, -1, 10, [0, 0, 0]) + _records(1, -1, 11, [0])
    assert _twice(mixed, 4) is None
    with_header = encode_record(Record(0, 0, None, b"v", (("h", b"x"),), 0)) * 2
    assert _twice(with_header, 2) is None
    out_of_order = encode_record(Record(1, 0, None, b"v", (), 0)) + encode_record(
        Record(0, 0, None, b"v", (), 0)
    )
    assert _twice(out_of_order, 2) is None
    # A timestamp delta of four varint bytes.
    far = _records(2, -1, 10, [0, 1 << 22])
    assert _twice(far, 2) is None
    # Records of 61 to 65 bytes (with their deltas) take one or two length bytes: the
    # shape is not taken, rather than guessed.
    edge = _records(3, -1, 56, [0, 0, 1 << 14])
    assert _twice(edge, 3) is None
    assert scan_uniform(edge, 3) is None


def test_mutated_batches_are_never_accepted_differently_from_the_walk() -> None:
    rng = random.Random(19)
    accepted = refused = 0
    for _ in range(1500):
        count = rng.choice([2, 3, 63, 64, 65, 130])
        key_len = rng.choice([-1, 0, 3, 60])
        value_len = rng.choice([-1, 0, 1, 61, 62, 63, 64, 120])
        stamps = [rng.choice([0, rng.randint(-70, 70), rng.randint(0, 100000)])] * count
        data = bytearray(_records(count, key_len, value_len, stamps))
        mutation = rng.random()
        if mutation < 0.6:
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif mutation < 0.7:
            count += rng.choice([-1, 1])
        elif mutation < 0.8:
            del data[rng.randrange(len(data))]
        elif mutation < 0.85:
            data.append(rng.randrange(256))
        blob = bytes(data)
        uniform_records._last_shape[0] = None
        scan_uniform(blob, count)
        scan = scan_uniform(blob, count)
        walked = _walk(blob, count)
        if walked == "refused":
            refused += 1
        if scan is not None:
            accepted += 1
            assert scan == walked
    # The test means something only if both kinds of batch were seen in numbers.
    assert accepted > 300 and refused > 300, (accepted, refused)


def test_the_pattern_cache_is_bounded() -> None:
    for value_len in range(uniform_records.MAX_PATTERNS + 10):
        data = _records(2, -1, value_len, [0, 0])
        _twice(data, 2)
    assert len(uniform_records._patterns) <= uniform_records.MAX_PATTERNS
