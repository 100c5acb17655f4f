"""validate_batch: each of Kafka's append checks, its error code, and the order they run in."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

from protocol import compression
from protocol.errors import ErrorCode
from protocol.records import HEADER_SIZE, Record, build_batch, encode_records, write_crc
from storage.validation import Validation, validate_batch

TS = 1_700_000_000_000
MAX = 1_048_588  # Kafka's default max.message.bytes


def good(
    *,
    codec: int = 0,
    control: bool = False,
    transactional: bool = False,
    producer_id: int = 5,
    producer_epoch: int = 0,
    base_sequence: int = 0,
) -> bytearray:
    records = [(b"key", b"value %d" % i) for i in range(3)]
    batch = build_batch(
        records,
        base_timestamp=TS,
        codec=codec,
        control=control,
        transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    return bytearray(batch)


def check(
    batch: bytes | bytearray | memoryview,
    *,
    depth: str = "header",
    allow_zstd: bool = True,
    max_message_bytes: int = MAX,
) -> Validation:
    return validate_batch(
        bytes(batch), max_message_bytes=max_message_bytes, allow_zstd=allow_zstd, depth=depth
    )


def patch(batch: bytearray, fmt: str, offset: int, value: int, *, crc: bool = True) -> bytearray:
    struct.pack_into(fmt, batch, offset, value)
    if crc:
        write_crc(batch)
    return batch


@pytest.mark.parametrize("depth", ["header", "records"])
@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_a_good_batch_passes(depth: str, codec: int) -> None:
    v = check(good(codec=codec), depth=depth)
    assert v.ok and v.error == ErrorCode.NONE and v.message is None
    assert v.header is not None and v.header.records_count == 3


def test_unknown_depth_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        check(good(), depth="deep")


def test_accepts_memoryview() -> None:
    batch = good()
    assert validate_batch(
        memoryview(batch), max_message_bytes=MAX, allow_zstd=True, depth="records"
    ).ok


# --- one check each -----------------------------------------------------------------------

CASES: list[tuple[str, Callable[[], bytes | bytearray], ErrorCode]] = [
    ("empty", lambda: b"", ErrorCode.INVALID_RECORD),
    ("under 12 bytes", lambda: good()[:11], ErrorCode.INVALID_RECORD),
    (
        "batch_length below 14",
        lambda: patch(good(), ">i", 8, 13, crc=False),
        ErrorCode.CORRUPT_MESSAGE,
    ),
    ("no magic byte", lambda: good()[:16], ErrorCode.INVALID_RECORD),
    ("magic 3", lambda: patch(good(), ">b", 16, 3), ErrorCode.CORRUPT_MESSAGE),
    ("negative magic", lambda: patch(good(), ">b", 16, -1), ErrorCode.CORRUPT_MESSAGE),
    ("length past the end", lambda: good()[:-1], ErrorCode.INVALID_RECORD),
    ("magic 1", lambda: patch(good(), ">b", 16, 1), ErrorCode.INVALID_RECORD),
    ("magic 0", lambda: patch(good(), ">b", 16, 0), ErrorCode.INVALID_RECORD),
    ("two batches", lambda: good() + good(), ErrorCode.INVALID_RECORD),
    (
        "trailing batch_length below 14",
        lambda: good() + struct.pack(">qi", 0, 13),
        ErrorCode.CORRUPT_MESSAGE,
    ),
    ("trailing magic 3", lambda: good() + good()[:16] + b"\x03", ErrorCode.CORRUPT_MESSAGE),
    ("base offset", lambda: patch(good(), ">q", 0, 7), ErrorCode.INVALID_RECORD),
    ("crc", lambda: patch(good(), ">I", 17, 1, crc=False), ErrorCode.CORRUPT_MESSAGE),
    (
        "under 61 bytes",
        lambda: patch(good()[:40], ">i", 8, 28, crc=False),
        ErrorCode.CORRUPT_MESSAGE,
    ),
    ("codec 5", lambda: patch(good(), ">h", 21, 5), ErrorCode.INVALID_RECORD),
    ("codec 7", lambda: patch(good(), ">h", 21, 7), ErrorCode.INVALID_RECORD),
    ("negative last_offset_delta", lambda: patch(good(), ">i", 23, -1), ErrorCode.INVALID_RECORD),
    (
        "count zero",
        lambda: patch(patch(good(), ">i", 57, 0), ">i", 23, -1),
        ErrorCode.INVALID_RECORD,
    ),
    ("count mismatch", lambda: patch(good(), ">i", 57, 4), ErrorCode.INVALID_RECORD),
    ("offset delta mismatch", lambda: patch(good(), ">i", 23, 3), ErrorCode.INVALID_RECORD),
    ("control batch", lambda: good(control=True), ErrorCode.INVALID_RECORD),
    ("pid without sequence", lambda: good(base_sequence=-1), ErrorCode.INVALID_RECORD),
]


@pytest.mark.parametrize(("name", "make", "error"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("depth", ["header", "records"])
def test_each_check(
    name: str, make: Callable[[], bytes | bytearray], error: ErrorCode, depth: str
) -> None:
    v = check(make(), depth=depth)
    assert v.error == error, v.message
    assert v.message


@pytest.mark.parametrize("depth", ["header", "records"])
@pytest.mark.parametrize("extra", [1, 11, 12, 17, 60])
def test_bytes_after_the_batch_that_form_no_whole_batch_are_left_out(
    depth: str, extra: int
) -> None:
    # UnifiedLog.trimInvalidBytes: Kafka's batch iterator finds no second batch there.
    batch = good()
    v = check(batch + good()[:extra], depth=depth)
    assert v.ok and v.size == len(batch)


def test_request_level_failures_are_marked() -> None:
    assert check(patch(good(), ">b", 16, 1)).request_level
    assert not check(patch(good(), ">I", 17, 1, crc=False)).request_level


def test_no_producer_id_needs_no_sequence() -> None:
    assert check(good(producer_id=-1, producer_epoch=-1, base_sequence=-1), depth="records").ok


def test_transactional_batches_are_allowed() -> None:
    assert check(good(transactional=True), depth="records").ok


def test_zstd_refused_below_produce_v7() -> None:
    v = check(good(codec=compression.ZSTD), allow_zstd=False)
    assert v.error == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert check(good(codec=compression.LZ4), allow_zstd=False).ok


def test_message_too_large() -> None:
    batch = good()
    assert check(batch, max_message_bytes=len(batch)).ok
    v = check(batch, max_message_bytes=len(batch) - 1)
    assert v.error == ErrorCode.MESSAGE_TOO_LARGE
    assert v.header is not None  # the header was readable, callers may log it


# --- order: the first failing check in Kafka's order decides ------------------------------


def test_magic_checked_before_the_batch_length_fits() -> None:
    # Kafka's ByteBufferLogInputStream rejects the magic before it looks for the whole batch.
    assert check(patch(good(), ">b", 16, 9)[:30]).error == ErrorCode.CORRUPT_MESSAGE


def test_zstd_checked_before_base_offset_and_crc() -> None:
    batch = patch(good(codec=compression.ZSTD), ">q", 0, 5)
    batch[17] ^= 0xFF
    assert check(batch, allow_zstd=False).error == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_second_batch_checked_before_base_offset() -> None:
    assert check(patch(good(), ">q", 0, 5) + good()).error == ErrorCode.INVALID_RECORD


def test_base_offset_checked_before_size_and_crc() -> None:
    batch = patch(good(), ">q", 0, 5)
    batch[17] ^= 0xFF
    v = check(batch, max_message_bytes=10)
    assert v.error == ErrorCode.INVALID_RECORD and v.message and "base_offset" in v.message


def test_size_checked_before_crc() -> None:
    batch = good()
    batch[17] ^= 0xFF
    assert check(batch, max_message_bytes=20).error == ErrorCode.MESSAGE_TOO_LARGE


def test_crc_checked_before_batch_fields() -> None:
    batch = good(control=True)
    patch(batch, ">i", 57, 0)
    batch[17] ^= 0xFF
    assert check(batch).error == ErrorCode.CORRUPT_MESSAGE


def test_short_batch_with_nonzero_base_offset_is_invalid_record() -> None:
    batch = patch(good()[:40], ">i", 8, 28, crc=False)
    patch(batch, ">q", 0, 1, crc=False)
    assert check(batch).error == ErrorCode.INVALID_RECORD


# --- depth ------------------------------------------------------------------------------


def _batch_with_records(records: list[Record], count: int, codec: int = 0) -> bytearray:
    batch = good(codec=codec)
    body = compression.compress(codec, encode_records(records))
    batch[HEADER_SIZE:] = body
    patch(batch, ">i", 8, HEADER_SIZE - 12 + len(body), crc=False)
    patch(batch, ">i", 23, count - 1, crc=False)
    return patch(batch, ">i", 57, count)


@pytest.mark.parametrize("codec", [0, 3, 4])
def test_records_depth_catches_what_the_header_cannot(codec: int) -> None:
    two = [Record(0, 0, None, b"a", ()), Record(1, 0, None, b"b", ())]
    batch = _batch_with_records(two, 3, codec)  # header claims 3 records
    assert check(batch, depth="header").ok
    v = check(batch, depth="records")
    assert v.error == ErrorCode.INVALID_RECORD and v.message and "records" in v.message


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_records_depth_accepts_irregular_offset_deltas_and_reports_them(codec: int) -> None:
    # Kafka's LogValidator accepts them (and rewrites a compressed batch; record_rules).
    skipping = [Record(0, 0, None, b"a", ()), Record(2, 0, None, b"b", ())]
    batch = _batch_with_records(skipping, 2, codec)
    assert check(batch, depth="header").ok
    v = check(batch, depth="records")
    assert v.ok and v.scan is not None and not v.scan.sequential_offsets
    assert check(good(codec=codec), depth="records").scan.sequential_offsets  # type: ignore[union-attr]


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_records_depth_rejects_data_that_does_not_decompress(codec: int) -> None:
    batch = good(codec=codec)
    batch[HEADER_SIZE + 4 :] = b"\xee" * (len(batch) - HEADER_SIZE - 4)
    write_crc(batch)
    assert check(batch, depth="header").ok  # header depth never decompresses
    assert check(batch, depth="records").error == ErrorCode.INVALID_RECORD
