"""RecordBatch v2: header view, record contents, build/decode, interop with kafka-python."""

from __future__ import annotations

import struct
import warnings

import pytest

from protocol import compression
from protocol.records import (
    HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    Record,
    build_batch,
    compute_crc,
    crc_ok,
    decode_records,
    encode_record,
    encode_records,
    encode_varint,
    iter_batches,
    parse_header,
    parse_records,
    read_varint,
    records_data,
    scan_records,
    set_base_offset,
    set_partition_leader_epoch,
    write_crc,
)

with warnings.catch_warnings():
    # kafka-python 3.0 uses importlib.resources.read_text, deprecated in Python 3.11.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
    from kafka.record.util import decode_varint as kp_decode_varint
    from kafka.record.util import encode_varint as kp_encode_varint

CODECS = [0, 1, 2, 3, 4]  # kafka-python 3.0 reads and writes all five
TS = 1_700_000_000_000


def _kp_varint(value: int) -> bytes:
    out = bytearray()
    kp_encode_varint(value, out.append)
    return bytes(out)


def _with_records_section(body: bytes, count: int, codec: int = 0) -> bytes:
    """A CRC-valid batch header around an arbitrary records section."""
    buf = bytearray(build_batch([(b"k", b"v")], base_timestamp=TS, codec=codec)[:HEADER_SIZE])
    struct.pack_into(">i", buf, 8, HEADER_SIZE - 12 + len(body))
    struct.pack_into(">i", buf, 23, count - 1)
    struct.pack_into(">i", buf, 57, count)
    buf += body
    write_crc(buf)
    return bytes(buf)


# --- varints ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01")],
)
def test_varint_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert read_varint(encoded, 0) == (value, len(encoded))


@pytest.mark.parametrize(
    "value", [0, 1, -1, 300, -300, 2**31 - 1, -(2**31), 2**40, -(2**63), 2**63 - 1]
)
def test_varint_matches_kafka_python(value: int) -> None:
    assert encode_varint(value) == _kp_varint(value)
    if -(2**31) <= value < 2**31:  # kafka-python's decoder is for int32 varints
        assert kp_decode_varint(encode_varint(value), 0)[0] == value
    assert read_varint(encode_varint(value), 0)[0] == value


def test_varint_longer_than_allowed_is_corrupt() -> None:
    six_bytes = b"\x80\x80\x80\x80\x80\x01"
    with pytest.raises(CorruptBatchError, match="too long"):
        read_varint(six_bytes, 0, 5)
    assert read_varint(six_bytes, 0, 10)[1] == 6


def test_truncated_varint_is_corrupt() -> None:
    with pytest.raises(CorruptBatchError, match="truncated"):
        read_varint(b"\x80\x80", 0)


# --- header view --------------------------------------------------------------------------


def test_header_fields_of_a_built_batch() -> None:
    batch = build_batch(
        [(b"a", b"1"), (b"b", b"2"), (None, b"3")],
        base_offset=42,
        producer_id=7,
        producer_epoch=3,
        base_sequence=100,
        codec=compression.LZ4,
        transactional=True,
        base_timestamp=TS,
        partition_leader_epoch=5,
    )
    h = parse_header(batch)
    assert h == BatchHeader(
        base_offset=42,
        batch_length=len(batch) - 12,
        partition_leader_epoch=5,
        magic=2,
        crc=compute_crc(batch),
        attributes=compression.LZ4 | 0x10,
        last_offset_delta=2,
        base_timestamp=TS,
        max_timestamp=TS,
        producer_id=7,
        producer_epoch=3,
        base_sequence=100,
        records_count=3,
    )
    assert (h.last_offset, h.next_offset, h.last_sequence) == (44, 45, 102)
    assert h.is_transactional and not h.is_control and h.compression == compression.LZ4
    assert crc_ok(batch)


def test_patching_base_offset_and_leader_epoch_keeps_the_crc_valid() -> None:
    batch = bytearray(build_batch([(b"k", b"v")], base_timestamp=TS))
    set_base_offset(batch, 12345)
    set_partition_leader_epoch(batch, 9)
    h = parse_header(batch)
    assert (h.base_offset, h.partition_leader_epoch) == (12345, 9)
    assert crc_ok(batch, h)


def test_iter_batches_stops_at_a_trailing_partial_batch() -> None:
    a = build_batch([(b"k", b"v")], base_timestamp=TS)
    b = build_batch([(b"k", b"w" * 50)], base_offset=1, base_timestamp=TS)
    found = list(iter_batches(a + b + b[:-1]))
    assert [(pos, h.base_offset) for pos, h in found] == [(0, 0), (len(a), 1)]


# --- records: round trips -----------------------------------------------------------------

RECORDS = [
    Record(0, 0, b"key", b"value", ()),
    Record(1, 5, None, None, ()),
    Record(2, -3, b"", b"", (("h1", b"v1"), ("h2", None), ("", b""))),
    Record(3, 2**40, b"k" * 300, b"v" * 70000, (("\u00e9t\u00e9", b"\x00\xff"),)),
]


@pytest.mark.parametrize("codec", CODECS)
def test_build_then_decode_round_trip(codec: int) -> None:
    batch = build_batch(RECORDS, codec=codec, base_timestamp=TS)
    assert parse_header(batch).compression == codec
    assert decode_records(batch) == RECORDS
    assert decode_records(memoryview(batch), parse_header(batch)) == RECORDS


def test_tuples_get_consecutive_offset_deltas() -> None:
    batch = build_batch([(b"a", b"1"), (None, b"2"), (b"c", None)], base_timestamp=TS)
    assert decode_records(batch) == [
        Record(0, 0, b"a", b"1", ()),
        Record(1, 0, None, b"2", ()),
        Record(2, 0, b"c", None, ()),
    ]


def test_max_timestamp_is_the_largest_record_timestamp() -> None:
    batch = build_batch(
        [Record(0, 7, None, b"a", ()), Record(1, 3, None, b"b", ())], base_timestamp=TS
    )
    assert parse_header(batch).max_timestamp == TS + 7


def test_default_base_timestamp_is_now() -> None:
    assert parse_header(build_batch([(None, b"x")])).base_timestamp > TS


def test_control_flag_is_set() -> None:
    h = parse_header(build_batch([(b"\x00\x00\x00\x01", b"")], control=True, base_timestamp=TS))
    assert h.is_control


def test_header_key_that_is_not_utf8_round_trips_byte_exact() -> None:
    raw = bytearray(encode_record(Record(0, 0, None, b"v", (("ab", b"x"),))))
    raw[raw.index(b"ab") : raw.index(b"ab") + 2] = b"\xff\xfe"
    [record] = parse_records(bytes(raw), 1)
    assert encode_record(record) == bytes(raw)


def test_negative_lengths_other_than_minus_one_read_as_null() -> None:
    # Kafka's DefaultRecord.readFrom treats any negative key/value size as null.
    body = b"\x00" + encode_varint(0) + encode_varint(0) + encode_varint(-5) + encode_varint(-2)
    body += encode_varint(0)
    [record] = parse_records(encode_varint(len(body)) + body, 1)
    assert (record.key, record.value) == (None, None)


# --- interop with kafka-python ------------------------------------------------------------

PAYLOAD = b"a compressible payload " * 20  # kafka-python sends uncompressed if it won't shrink


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_our_batches(codec: int) -> None:
    batch = build_batch(
        RECORDS, codec=codec, base_timestamp=TS, producer_id=11, producer_epoch=2, base_sequence=5
    )
    kb = DefaultRecordBatch(bytearray(batch))
    assert kb.validate_crc()
    assert (kb.compression_type, kb.producer_id, kb.producer_epoch, kb.base_sequence) == (
        codec,
        11,
        2,
        5,
    )
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in kb]
    want = [
        (r.offset_delta, TS + r.timestamp_delta, r.key, r.value, list(r.headers)) for r in RECORDS
    ]
    assert got == want


@pytest.mark.parametrize("codec", CODECS)
def test_we_read_kafka_python_batches(codec: int) -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=99,
        producer_epoch=1,
        base_sequence=17,
        batch_size=1 << 20,
    )
    for i in range(20):
        builder.append(i, TS + i, f"key{i}".encode(), PAYLOAD, [("h", str(i).encode())])
    builder.append(20, TS + 20, None, None, [])
    batch = bytes(builder.build())
    h = parse_header(batch)
    assert h.compression == codec
    assert (h.producer_id, h.base_sequence, h.records_count, h.last_offset_delta) == (
        99,
        17,
        21,
        20,
    )
    assert crc_ok(batch, h)
    records = decode_records(batch, h)
    assert records[3] == Record(3, 3, b"key3", PAYLOAD, (("h", b"3"),))
    assert records[20] == Record(20, 20, None, None, ())
    assert [r.offset_delta for r in records] == list(range(21))


@pytest.mark.parametrize("codec", CODECS)
def test_memory_records_both_ways(codec: int) -> None:
    ours = build_batch([(b"k", PAYLOAD)], codec=codec, base_timestamp=TS)
    ours += build_batch([(b"k2", PAYLOAD), (None, b"x")], codec=codec, base_offset=1)
    seen = [(b.base_offset, [r.value for r in b]) for b in MemoryRecords(ours)]
    assert seen == [(0, [PAYLOAD]), (1, [PAYLOAD, b"x"])]

    builder = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20)
    for i in range(5):
        builder.append(TS + i, b"k", PAYLOAD + bytes([i]))
    builder.close()
    theirs = bytes(builder.buffer())
    [(_pos, h)] = list(iter_batches(theirs))
    assert h.compression == codec
    assert [r.value for r in decode_records(theirs, h)] == [PAYLOAD + bytes([i]) for i in range(5)]


# --- malformed content --------------------------------------------------------------------


def test_truncated_batch_is_corrupt() -> None:
    batch = build_batch(RECORDS, base_timestamp=TS)
    with pytest.raises(CorruptBatchError, match="truncated"):
        decode_records(batch[:-1], parse_header(batch))


def test_fewer_records_than_records_count_is_corrupt() -> None:
    with pytest.raises(CorruptBatchError, match="records_count"):
        decode_records(_with_records_section(encode_records(RECORDS[:2]), 3))


def test_more_records_than_records_count_is_corrupt() -> None:
    with pytest.raises(CorruptBatchError, match="follow"):
        decode_records(_with_records_section(encode_records(RECORDS[:3]), 2))


@pytest.mark.parametrize("codec", CODECS)
def test_trailing_bytes_after_the_last_record_are_corrupt(codec: int) -> None:
    body = compression.compress(codec, encode_records(RECORDS[:2]) + b"\x00")
    with pytest.raises(CorruptBatchError, match="follow"):
        decode_records(_with_records_section(body, 2, codec))


def test_record_longer_than_the_batch_is_corrupt() -> None:
    rec = encode_record(RECORDS[0])
    with pytest.raises(CorruptBatchError, match="does not fit"):
        parse_records(rec[:-1], 1)


def test_record_whose_fields_do_not_fill_its_length_is_corrupt() -> None:
    rec = encode_record(RECORDS[0])
    longer = encode_varint(len(rec) - 1 + 1) + rec[1:] + b"\x00"
    with pytest.raises(CorruptBatchError, match="declared"):
        parse_records(longer, 1)


def test_key_running_past_the_record_is_corrupt() -> None:
    body = b"\x00\x00\x00" + encode_varint(50) + b"abc"
    with pytest.raises(CorruptBatchError, match="key"):
        parse_records(encode_varint(len(body)) + body, 1)


@pytest.mark.parametrize("count", [-1, 1000])
def test_impossible_header_count_is_corrupt(count: int) -> None:
    body = b"\x00\x00\x00\x01\x01" + encode_varint(count)
    with pytest.raises(CorruptBatchError, match="header count"):
        parse_records(encode_varint(len(body)) + body, 1)


def test_negative_header_key_length_is_corrupt() -> None:
    body = b"\x00\x00\x00\x01\x01\x02" + encode_varint(-1) + b"\x01"
    with pytest.raises(CorruptBatchError, match="header key"):
        parse_records(encode_varint(len(body)) + body, 1)


def test_empty_record_is_corrupt() -> None:
    with pytest.raises(CorruptBatchError):
        parse_records(b"\x00", 1)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_undecompressable_records_are_corrupt(codec: int) -> None:
    with pytest.raises(CorruptBatchError):
        decode_records(_with_records_section(b"\x01\x02\x03 not compressed", 1, codec))


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_is_corrupt(codec: int) -> None:
    batch = bytearray(build_batch([(b"k", b"v")], base_timestamp=TS))
    batch[22] |= codec
    write_crc(batch)
    with pytest.raises(CorruptBatchError, match="codec"):
        decode_records(batch)


def test_magic_other_than_two_is_corrupt() -> None:
    batch = bytearray(build_batch([(b"k", b"v")], base_timestamp=TS))
    batch[16] = 1
    with pytest.raises(CorruptBatchError, match="magic"):
        decode_records(batch)


def test_decompressed_size_is_capped() -> None:
    batch = build_batch([(None, bytes(1 << 20))], codec=compression.ZSTD, base_timestamp=TS)
    assert len(batch) < 1000
    with pytest.raises(CorruptBatchError, match="exceeds"):
        decode_records(batch, max_size=1 << 16)


def test_record_and_value_lengths_of_one_two_and_three_varint_bytes_decode_exactly() -> None:
    # Zigzag varints: 63 fits one byte, 64..8191 two (the walk's inline path), 8192 three.
    sizes = [0, 1, 62, 63, 64, 65, 1000, 1024, 8190, 8191, 8192, 8193, 70_000]
    records = [(b"k" * (n % 300) if n % 2 else None, b"v" * n) for n in sizes]
    data = build_batch(records)
    header = parse_header(data)
    parsed = parse_records(records_data(data, header), header.records_count)
    assert [(r.key, r.value) for r in parsed] == records
    scan = scan_records(records_data(data, header), header.records_count)
    assert scan.keyless == tuple(i for i, n in enumerate(sizes) if n % 2 == 0)
    assert scan.sequential_offsets and scan.headers == 0
