"""Wire primitives: unsigned varints and the Reader's fixed-width reads at their edges."""

from __future__ import annotations

import struct

import pytest

from protocol import primitives as p
from protocol.primitives import DecodeError, Reader, uvarint_size, write_uvarint

# (value, encoding): LEB128, 7 bits per byte, low group first, high bit = "more follows".
UVARINTS = [
    (0, b"\x00"),
    (1, b"\x01"),
    (127, b"\x7f"),
    (128, b"\x80\x01"),
    (300, b"\xac\x02"),
    (16383, b"\xff\x7f"),
    (16384, b"\x80\x80\x01"),
    (2**21 - 1, b"\xff\xff\x7f"),
    (2**21, b"\x80\x80\x80\x01"),
    (2**28 - 1, b"\xff\xff\xff\x7f"),
    (2**28, b"\x80\x80\x80\x80\x01"),
    (2**31 - 1, b"\xff\xff\xff\xff\x07"),
    (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
]


def _write(value: int) -> bytes:
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)


@pytest.mark.parametrize(("value", "encoded"), UVARINTS, ids=[str(v) for v, _ in UVARINTS])
def test_uvarint_edge_values(value: int, encoded: bytes) -> None:
    assert _write(value) == encoded
    assert uvarint_size(value) == len(encoded)
    reader = Reader(encoded + b"\xaa")
    assert reader.uvarint() == value
    assert reader.pos == len(encoded)


@pytest.mark.parametrize(("value", "encoded"), UVARINTS, ids=[str(v) for v, _ in UVARINTS])
def test_uvarint_truncated_anywhere_raises(value: int, encoded: bytes) -> None:
    for cut in range(len(encoded)):
        reader = Reader(encoded[:cut])
        with pytest.raises(DecodeError, match="truncated"):
            reader.uvarint()
        assert reader.pos == 0  # a failed read does not move the cursor


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_uvarint_size_boundaries(size: int) -> None:
    # The largest value of each size and the smallest of the next.
    top = 2 ** (7 * size) - 1
    assert uvarint_size(top) == size == len(_write(top))
    assert uvarint_size(top + 1) == size + 1 == len(_write(top + 1))


def test_uvarint_at_most_five_bytes() -> None:
    # Kafka's ByteUtils.readUnsignedVarint throws after a fifth byte with the high bit set.
    assert Reader(b"\x80\x80\x80\x80\x00").uvarint() == 0  # padded, but 5 bytes: accepted
    with pytest.raises(DecodeError, match="longer than 5"):
        Reader(b"\x80\x80\x80\x80\x80\x00").uvarint()
    with pytest.raises(DecodeError, match="longer than 5"):
        Reader(b"\xff" * 10).uvarint()


def test_write_uvarint_rejects_negative() -> None:
    with pytest.raises(ValueError, match="unsigned"):
        write_uvarint(bytearray(), -1)


def test_uvarint_respects_reader_end() -> None:
    # The window ends before the varint's last byte, though the buffer holds it.
    reader = Reader(b"\x80\x01", end=1)
    with pytest.raises(DecodeError):
        reader.uvarint()


FIXED = [
    ("int8", ">b", -(2**7), 2**7 - 1),
    ("int16", ">h", -(2**15), 2**15 - 1),
    ("uint16", ">H", 0, 2**16 - 1),
    ("int32", ">i", -(2**31), 2**31 - 1),
    ("uint32", ">I", 0, 2**32 - 1),
    ("int64", ">q", -(2**63), 2**63 - 1),
]


@pytest.mark.parametrize(("method", "fmt", "low", "high"), FIXED, ids=[m for m, *_ in FIXED])
def test_fixed_ints_at_boundaries(method: str, fmt: str, low: int, high: int) -> None:
    values = [low, low + 1, -1 if low < 0 else 1, 0, high - 1, high]
    data = b"".join(struct.pack(fmt, v) for v in values)
    reader = Reader(data)
    assert [getattr(reader, method)() for _ in values] == values
    assert reader.remaining == 0
    with pytest.raises(DecodeError):
        getattr(reader, method)()


@pytest.mark.parametrize(("method", "fmt", "low", "high"), FIXED, ids=[m for m, *_ in FIXED])
def test_fixed_ints_big_endian(method: str, fmt: str, low: int, high: int) -> None:
    size = struct.calcsize(fmt)
    data = bytes(range(1, size + 1))  # 01 02 03 ...: positive in every width
    assert getattr(Reader(data), method)() == int.from_bytes(data, "big")


@pytest.mark.parametrize(("method", "fmt", "low", "high"), FIXED, ids=[m for m, *_ in FIXED])
def test_fixed_ints_short_buffer_raises(method: str, fmt: str, low: int, high: int) -> None:
    full = struct.pack(fmt, high)
    for cut in range(len(full)):
        reader = Reader(b"\x00" + full, pos=1, end=1 + cut)
        with pytest.raises(DecodeError):
            getattr(reader, method)()
        assert reader.pos == 1


def test_float64_and_bool() -> None:
    data = struct.pack(">d", -0.5) + struct.pack(">d", 1e308) + b"\x00\x01\xff"
    reader = Reader(data)
    assert reader.float64() == -0.5
    assert reader.float64() == 1e308
    # Kafka reads a bool as "byte != 0".
    assert [reader.bool(), reader.bool(), reader.bool()] == [False, True, True]
    with pytest.raises(DecodeError):
        reader.bool()
    with pytest.raises(DecodeError):
        Reader(b"\x00" * 7).float64()


def test_take_checks_length_against_window() -> None:
    reader = Reader(b"abcdef", pos=1, end=4)
    assert reader.remaining == 3
    assert bytes(reader.take(2)) == b"bc"
    with pytest.raises(DecodeError):
        reader.take(2)
    with pytest.raises(DecodeError):
        reader.take(-1)
    assert bytes(reader.take(1)) == b"d"
    assert reader.remaining == 0


def test_take_is_zero_copy() -> None:
    buf = bytearray(b"0123456789")
    view = Reader(memoryview(buf)).take(4)
    buf[0] = ord("X")
    assert bytes(view) == b"X123"


def test_uuid_and_strings() -> None:
    raw = bytes(range(16))
    reader = Reader(raw + "hé🚀".encode())
    assert reader.uuid() == raw
    assert reader.string_of(7) == "hé🚀"
    assert p.uuid_to_str(raw) == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    with pytest.raises(DecodeError):
        Reader(bytes(15)).uuid()
    # Malformed UTF-8 is replaced, as Java's new String(bytes, UTF_8) in Kafka's readers does.
    assert Reader(b"\xe2\x82").string_of(2) == "\ufffd"
