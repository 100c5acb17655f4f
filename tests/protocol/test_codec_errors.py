"""Malformed input must raise DecodeError: never another exception, never a huge allocation.

The broker answers a DecodeError by closing the connection (Kafka does the same with an
InvalidRequestException); any other exception would be a crash path, and a length field
trusted before it is checked against the bytes left lets a 30-byte frame ask for gigabytes.
"""

from __future__ import annotations

import contextlib
import random
import struct
import tracemalloc
from collections.abc import Iterator

import pytest

from protocol.api_keys import ALL_APIS
from protocol.codec import decode, encode
from protocol.header import (
    RequestHeader,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
    peek_header,
)
from protocol.primitives import DecodeError, Reader, write_uvarint
from protocol.schema import (
    BYTES,
    INT8,
    INT32,
    RECORDS,
    STRING,
    Api,
    Array,
    Field,
    Message,
    Struct,
    array,
    f,
)
from tests.support.values import ValueGenerator, api_versions, fields_of

SIDES = ("request", "response")


def _uvarint(n: int) -> bytes:
    out = bytearray()
    write_uvarint(out, n)
    return bytes(out)


def _i16(n: int) -> bytes:
    return struct.pack(">h", n)


def _i32(n: int) -> bytes:
    return struct.pack(">i", n)


def _decode(fields: tuple[Field, ...], data: bytes, *, flexible: bool, version: int = 0) -> Message:
    return decode(fields, version, flexible, Reader(data))


def _sample_versions(api_: Api) -> list[int]:
    """Oldest, newest, and both sides of the switch to flexible encoding."""
    versions = api_versions(api_)
    picks = {versions.start, versions.stop - 1}
    for v in (api_.flexible.low - 1, api_.flexible.low):
        if v in versions:
            picks.add(v)
    return sorted(picks)


def _encoded_samples() -> Iterator[object]:
    for api_ in ALL_APIS.values():
        for version in _sample_versions(api_):
            for side in SIDES:
                yield pytest.param(api_, version, side, id=f"{api_.name}-v{version}-{side}")


def _valid(api_: Api, version: int, side: str, seed: str) -> tuple[tuple[Field, ...], bool, bytes]:
    fields = fields_of(api_, side)
    flexible = api_.is_flexible(version)
    # Two items per array at most: enough structure, and the every-prefix loop stays fast.
    value = ValueGenerator(seed, max_items=2).message(fields, version, flexible)
    return fields, flexible, encode(fields, version, flexible, value)


# --- truncation and trailing bytes, on every described API ---------------------------------


@pytest.mark.parametrize(("api_", "version", "side"), list(_encoded_samples()))
def test_every_truncation_raises_decode_error(api_: Api, version: int, side: str) -> None:
    fields, flexible, data = _valid(api_, version, side, f"cut/{api_.key}/{version}/{side}")
    decode(fields, version, flexible, Reader(data))  # the whole message is valid
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decode(fields, version, flexible, Reader(data[:cut]))


@pytest.mark.parametrize(
    ("api_", "version", "side"),
    [
        pytest.param(a, v, s, id=f"{a.name}-v{v}-{s}")
        for a in ALL_APIS.values()
        for v in api_versions(a)
        for s in SIDES
    ],
)
def test_trailing_bytes_rejected_only_when_exact(api_: Api, version: int, side: str) -> None:
    fields, flexible, data = _valid(api_, version, side, f"tail/{api_.key}/{version}/{side}")
    with pytest.raises(DecodeError, match="left after"):
        decode(fields, version, flexible, Reader(data + b"\x00"), exact=True)
    reader = Reader(data + b"\x00")
    decode(fields, version, flexible, reader, exact=False)
    assert reader.remaining == 1


@pytest.mark.parametrize(("api_", "version", "side"), list(_encoded_samples()))
def test_corrupted_bytes_raise_only_decode_error(api_: Api, version: int, side: str) -> None:
    # Random byte damage: whatever the decoder makes of it, the only failure allowed is
    # DecodeError (a decode that happens to succeed is fine).
    fields, flexible, data = _valid(api_, version, side, f"fuzz/{api_.key}/{version}/{side}")
    rng = random.Random(f"fuzz/{api_.key}/{version}/{side}")
    for _ in range(60 if data else 0):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(damaged))
            damaged[pos] = rng.choice([0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        with contextlib.suppress(DecodeError):
            decode(fields, version, flexible, Reader(bytes(damaged)))


# --- lengths larger than the bytes left -----------------------------------------------------

_BIG_INT32 = 2**31 - 1
_BIG_UVARINT = b"\xff\xff\xff\xff\x07"  # 2**31 - 1 as an unsigned varint

LYING_LENGTHS = [
    pytest.param((f("s", STRING),), False, _i16(0x7FFF) + b"abc", id="string-int16"),
    pytest.param((f("s", STRING),), True, _BIG_UVARINT + b"abc", id="compact-string"),
    pytest.param((f("b", BYTES),), False, _i32(_BIG_INT32) + b"abc", id="bytes-int32"),
    pytest.param((f("b", BYTES),), True, _BIG_UVARINT + b"abc", id="compact-bytes"),
    pytest.param((f("r", RECORDS),), False, _i32(_BIG_INT32) + b"abc", id="records-int32"),
    pytest.param((f("r", RECORDS),), True, _BIG_UVARINT + b"abc", id="compact-records"),
    pytest.param((f("a", Array(INT32)),), False, _i32(_BIG_INT32) + b"\0" * 8, id="array-int32"),
    pytest.param((f("a", Array(INT32)),), True, _BIG_UVARINT + b"\0" * 8, id="compact-array"),
    pytest.param(
        (f("a", array(f("x", INT8))),), False, _i32(_BIG_INT32) + b"\0" * 8, id="struct-array"
    ),
    pytest.param(
        (f("a", array(f("x", INT8))),), True, _BIG_UVARINT + b"\0" * 8, id="compact-struct-array"
    ),
    pytest.param(
        # Array of structs whose fields are all absent at this version: elements take no
        # bytes at all, so only the count-vs-remaining check stands between us and 2**31.
        (f("a", array(f("x", INT8, "5+"))),),
        False,
        _i32(_BIG_INT32) + b"\0" * 8,
        id="array-of-empty-structs",
    ),
    pytest.param(
        (f("s", STRING),), True, b"\xff\xff\xff\xff\x7f" + b"abc", id="compact-length-2**35"
    ),
]


@pytest.mark.parametrize(("fields", "flexible", "data"), LYING_LENGTHS)
def test_length_beyond_remaining_bytes_fails_without_allocating(
    fields: tuple[Field, ...], flexible: bool, data: bytes
) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            _decode(fields, data, flexible=flexible)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_huge_array_count_in_real_requests() -> None:
    metadata = ALL_APIS[3]
    # Metadata v0 request: topics count 2**31-1, then nothing.
    with pytest.raises(DecodeError):
        decode(metadata.request, 0, False, Reader(_i32(_BIG_INT32)))
    # Metadata v12 (flexible) request: compact topics count 2**31-1.
    with pytest.raises(DecodeError):
        decode(metadata.request, 12, True, Reader(_BIG_UVARINT + b"\x01\x00\x00"))
    produce = ALL_APIS[0]
    # Produce v3: null transactional_id, acks, timeout, topic_data count 2**31-1.
    body = _i16(-1) + _i16(-1) + _i32(1000) + _i32(_BIG_INT32) + b"\0\0"
    with pytest.raises(DecodeError):
        decode(produce.request, 3, False, Reader(body))


# --- invalid lengths, null where not nullable ---------------------------------------------

NULLABLE_STRING = (f("s", STRING, nullable="0+"),)
NULLABLE_ARRAY = (f("a", Array(INT32), nullable="0+"),)
NULLABLE_BYTES = (f("b", BYTES, nullable="0+"),)


@pytest.mark.parametrize(
    ("fields", "flexible", "data"),
    [
        # Compact length 0 is null: invalid for a non-nullable field.
        pytest.param((f("s", STRING),), True, b"\x00", id="compact-null-string"),
        pytest.param((f("b", BYTES),), True, b"\x00", id="compact-null-bytes"),
        pytest.param((f("a", Array(INT32)),), True, b"\x00", id="compact-null-array"),
        # Classic -1 is null: invalid for a non-nullable field.
        pytest.param((f("s", STRING),), False, _i16(-1), id="null-string"),
        pytest.param((f("b", BYTES),), False, _i32(-1), id="null-bytes"),
        pytest.param((f("a", Array(INT32)),), False, _i32(-1), id="null-array"),
        # Any negative length is null, so invalid for a non-nullable field.
        pytest.param((f("s", STRING),), False, _i16(-2) + b"ab", id="string-minus-2"),
        pytest.param((f("a", Array(INT32)),), False, _i32(-(2**31)), id="array-int32-min"),
        # Kafka's readers refuse a string longer than 0x7fff bytes (a compact length can say so).
        pytest.param((f("s", STRING),), True, _uvarint(0x8001) + b"a" * 0x8000, id="string-32k"),
        # Varints longer than Kafka's 5 bytes.
        pytest.param((f("s", STRING),), True, b"\x80" * 5 + b"\x01", id="6-byte-length"),
        pytest.param((f("a", Array(INT32)),), True, b"\xff" * 6, id="6-byte-count"),
        pytest.param((f("x", INT32, tag=0),), True, b"\x80" * 5 + b"\x01", id="6-byte-tag-count"),
        pytest.param(
            (f("x", INT32, tag=0),), True, b"\x01" + b"\x80" * 5 + b"\x01", id="6-byte-tag"
        ),
        pytest.param(
            (f("x", INT32, tag=0),), True, b"\x01\x00" + b"\xff" * 6, id="6-byte-tag-size"
        ),
        # A nullable struct whose presence byte says "present" but whose body is missing.
        pytest.param(
            (f("s", Struct(f("x", INT32)), nullable="0+"),), False, b"\x01\x00", id="struct-cut"
        ),
    ],
)
def test_invalid_length_raises_decode_error(
    fields: tuple[Field, ...], flexible: bool, data: bytes
) -> None:
    # A flexible message ends with its tagged-field count: with it in place, the failure
    # can only come from the length under test.
    tail = b"\x00" if flexible else b""
    with pytest.raises(DecodeError):
        _decode(fields, data + tail, flexible=flexible)


@pytest.mark.parametrize(
    ("fields", "flexible", "data", "expected"),
    [
        pytest.param(NULLABLE_STRING, True, b"\x00", None, id="compact-null-string"),
        pytest.param(NULLABLE_STRING, False, _i16(-1), None, id="null-string"),
        pytest.param(NULLABLE_ARRAY, False, _i32(-1), None, id="null-array"),
        pytest.param(NULLABLE_BYTES, True, b"\x00", None, id="compact-null-bytes"),
        pytest.param(NULLABLE_STRING, True, b"\x01", "", id="compact-empty-string"),
        pytest.param((f("a", Array(INT32)),), True, b"\x01", [], id="compact-empty-array"),
        # Non-minimal varints are accepted, as Kafka's ByteUtils.readUnsignedVarint does.
        pytest.param(NULLABLE_STRING, True, b"\x82\x00a", "a", id="padded-varint"),
        # Kafka's generated readers take ANY negative length of a nullable field as null.
        pytest.param(NULLABLE_STRING, False, _i16(-2), None, id="string-minus-2"),
        pytest.param(NULLABLE_STRING, False, _i16(-32768), None, id="string-int16-min"),
        pytest.param(NULLABLE_BYTES, False, _i32(-2), None, id="bytes-minus-2"),
        pytest.param(NULLABLE_ARRAY, False, _i32(-2), None, id="array-minus-2"),
        pytest.param(NULLABLE_ARRAY, False, _i32(-(2**31)), None, id="array-int32-min"),
        pytest.param(
            NULLABLE_STRING, True, _uvarint(0x8000) + b"a" * 0x7FFF, "a" * 0x7FFF, id="string-32767"
        ),
    ],
)
def test_valid_edge_lengths_decode(
    fields: tuple[Field, ...], flexible: bool, data: bytes, expected: object
) -> None:
    # Counterpart of the error cases: the same length fields in their valid corner.
    decoded = _decode(fields, data + (b"\x00" if flexible else b""), flexible=flexible)
    assert next(iter(decoded.to_dict().values())) == expected


# --- UTF-8 ------------------------------------------------------------------------------------

BAD_UTF8 = [
    pytest.param(b"\xff", id="ff"),
    pytest.param(b"\xc3\x28", id="bad-continuation"),
    pytest.param(b"\xc0\xaf", id="overlong"),
    pytest.param(b"\xed\xa0\x80", id="surrogate"),
    pytest.param(b"\xe6\x97", id="cut-sequence"),
    pytest.param(b"\xf4\x90\x80\x80", id="above-U+10FFFF"),
]


# Kafka decodes strings with Java's new String(bytes, UTF_8), which replaces malformed
# sequences with U+FFFD instead of failing: the request is answered (a topic name holding
# one is then refused as an invalid topic, as Kafka refuses it).
@pytest.mark.parametrize("raw", BAD_UTF8)
@pytest.mark.parametrize("flexible", [False, True], ids=["classic", "compact"])
def test_invalid_utf8_is_replaced_as_java_does(raw: bytes, flexible: bool) -> None:
    prefix = _uvarint(len(raw) + 1) if flexible else _i16(len(raw))
    decoded = _decode(
        (f("s", STRING),), prefix + raw + (b"\x00" if flexible else b""), flexible=flexible
    )
    assert "\ufffd" in decoded.s
    assert decoded.s == raw.decode("utf-8", "replace")


@pytest.mark.parametrize("raw", BAD_UTF8)
def test_invalid_utf8_client_id_is_replaced(raw: bytes) -> None:
    header = _i16(3) + _i16(12) + _i32(7) + _i16(len(raw)) + raw
    assert "\ufffd" in (decode_request_header(Reader(header), 1).client_id or "")


# --- tagged fields ----------------------------------------------------------------------------

TAGGED = (
    f("plain", INT8),
    f("a", INT32, tag=0, default=0),
    f("b", STRING, tag=1, default=""),
)


def _tagged(*entries: tuple[int, bytes]) -> bytes:
    out = bytearray(b"\x05")  # plain = 5
    write_uvarint(out, len(entries))
    for tag, body in entries:
        write_uvarint(out, tag)
        write_uvarint(out, len(body))
        out += body
    return bytes(out)


@pytest.mark.parametrize(
    "data",
    [
        # A known tag is read from the stream: its unread size ends up after the message.
        pytest.param(_tagged((0, _i32(1) + b"\x00")), id="trailing-bytes-in-field"),
        pytest.param(_tagged((0, b"\x00\x01")), id="field-shorter-than-int32"),
        pytest.param(_tagged((1, b"\x00")), id="null-in-non-nullable-tag"),
        pytest.param(b"\x05\x01\x00\x7f\x00", id="size-beyond-remaining"),
        pytest.param(b"\x05\x03\x00\x04\x00\x00\x00\x01", id="fewer-fields-than-count"),
        pytest.param(b"\x05" + _BIG_UVARINT, id="count-2**31"),
    ],
)
def test_malformed_tagged_fields_raise_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        _decode(TAGGED, data, flexible=True)


@pytest.mark.parametrize(
    ("data", "a", "b"),
    [
        pytest.param(_tagged((1, b"\x02x"), (0, _i32(1))), 1, "x", id="out-of-order"),
        pytest.param(_tagged((0, _i32(1)), (0, _i32(2))), 2, "", id="duplicate-last-wins"),
        pytest.param(_tagged((9, b"z"), (4, b"y")), 0, "", id="unknown-out-of-order"),
    ],
)
def test_tagged_fields_in_any_order_are_read_as_kafka_does(data: bytes, a: int, b: str) -> None:
    # Kafka's generated readers switch on each tag as it comes: no order, no uniqueness check.
    decoded = _decode(TAGGED, data, flexible=True)
    assert (decoded.a, decoded.b) == (a, b)


def test_tagged_fields_in_order_and_unknown_tags_survive_reencoding() -> None:
    data = _tagged((0, _i32(-7)), (1, b"\x04h\xc3\xa9"), (9, b"?"))
    decoded = _decode(TAGGED, data, flexible=True)
    assert (decoded.plain, decoded.a, decoded.b) == (5, -7, "hé")
    # Kafka skips tags it does not know; we keep them so a re-encode is byte-identical.
    assert decoded._unknown_tagged_fields == [(9, b"?")]
    assert encode(TAGGED, 0, True, decoded) == data


# --- headers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("header_version", [0, 1, 2])
def test_truncated_request_header_raises_decode_error(header_version: int) -> None:
    out = bytearray()
    header = RequestHeader(api_key=3, api_version=12, correlation_id=99, client_id="clïent")
    encode_request_header(out, header, header_version)
    data = bytes(out)
    assert decode_request_header(Reader(data), header_version).correlation_id == 99
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decode_request_header(Reader(data[:cut]), header_version)


@pytest.mark.parametrize("header_version", [0, 1])
def test_truncated_response_header_raises_decode_error(header_version: int) -> None:
    out = bytearray()
    encode_response_header(out, 42, header_version)
    data = bytes(out)
    assert decode_response_header(Reader(data), header_version) == 42
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decode_response_header(Reader(data[:cut]), header_version)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_i16(3) + _i16(12) + _i32(7) + _i16(0x7FFF) + b"x", id="client-id-long"),
        pytest.param(_i16(3) + _i16(12) + _i32(7) + _i16(-1) + b"\x01\x00", id="tag-cut"),
        pytest.param(_i16(3) + _i16(12) + _i32(7) + _i16(-1) + b"\x01\x00\x05ab", id="tag-long"),
        pytest.param(_i16(3) + _i16(12) + _i32(7) + _i16(-1) + b"\xff" * 6, id="6-byte-count"),
    ],
)
def test_malformed_request_header_v2_raises_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_request_header(Reader(data), 2)


@pytest.mark.parametrize("size", range(8))
def test_peek_header_needs_eight_bytes(size: int) -> None:
    with pytest.raises(DecodeError):
        peek_header(bytes(size))
    assert peek_header(_i16(1) + _i16(-1) + _i32(-5)) == (1, -1, -5)
