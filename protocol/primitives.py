"""Kafka wire primitives: fixed-width ints, varints, (compact) strings/bytes, uuid.

Decoding goes through ``Reader``, which checks every length against the bytes that are
actually left before slicing or allocating (a 2 GiB string length in a 30-byte frame must
fail fast, not allocate).
"""

from __future__ import annotations

import struct
import uuid

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

ZERO_UUID = b"\x00" * 16


class DecodeError(ValueError):
    """The bytes do not form a valid message at the version being decoded."""


class Reader:
    """A cursor over one immutable buffer.

    ``max_elements`` bounds the array elements decoded through this reader in all (the
    codec spends it): every element costs at least one byte on the wire but a Python object
    and a few microseconds to decode, so a frame of millions of one-byte elements would
    take seconds and hundreds of MB to decode although each length is honest.
    """

    __slots__ = ("buf", "elements_left", "end", "max_elements", "pos")

    def __init__(
        self,
        buf: bytes | memoryview,
        pos: int = 0,
        end: int | None = None,
        *,
        max_elements: int | None = None,
    ) -> None:
        self.buf = memoryview(buf) if not isinstance(buf, memoryview) else buf
        self.pos = pos
        self.end = len(self.buf) if end is None else end
        self.max_elements = max_elements
        self.elements_left = (1 << 62) if max_elements is None else max_elements

    def spend_elements(self, n: int, name: str) -> None:
        """Account for an array of ``n`` elements; DecodeError beyond ``max_elements``."""
        left = self.elements_left - n
        if left < 0:
            raise DecodeError(
                f"{name}: more than {self.max_elements} array elements in one message"
            )
        self.elements_left = left

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _fixed(self, st: struct.Struct) -> int:
        pos = self.pos
        if self.end - pos < st.size:
            raise DecodeError(f"need {st.size} bytes at {pos}, have {self.end - pos}")
        self.pos = pos + st.size
        value: int = st.unpack_from(self.buf, pos)[0]
        return value

    def int8(self) -> int:
        return self._fixed(INT8)

    def int16(self) -> int:
        return self._fixed(INT16)

    def uint16(self) -> int:
        return self._fixed(UINT16)

    def int32(self) -> int:
        return self._fixed(INT32)

    def uint32(self) -> int:
        return self._fixed(UINT32)

    def int64(self) -> int:
        return self._fixed(INT64)

    def float64(self) -> float:
        pos = self.pos
        if self.end - pos < 8:
            raise DecodeError("truncated float64")
        self.pos = pos + 8
        value: float = FLOAT64.unpack_from(self.buf, pos)[0]
        return value

    def bool(self) -> bool:
        return self._fixed(INT8) != 0

    def uvarint(self) -> int:
        """Unsigned LEB128 varint, at most 5 bytes (Kafka's ByteUtils.readUnsignedVarint)."""
        buf = self.buf
        pos = self.pos
        if pos < self.end:
            b = buf[pos]
            if b < 0x80:  # one byte: nearly every length, count and tag buffer
                self.pos = pos + 1
                return b
        result = 0
        shift = 0
        while True:
            if pos >= self.end:
                raise DecodeError("truncated varint")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 28:
                raise DecodeError("varint longer than 5 bytes")
        self.pos = pos
        return result

    def take(self, n: int) -> memoryview:
        if n < 0 or n > self.end - self.pos:
            raise DecodeError(f"length {n} exceeds the {self.end - self.pos} bytes left")
        pos = self.pos
        self.pos = pos + n
        return self.buf[pos : pos + n]

    def skip(self, n: int) -> None:
        self.take(n)

    def uuid(self) -> bytes:
        return bytes(self.take(16))

    def string_of(self, n: int) -> str:
        # Java's new String(bytes, UTF_8), which Kafka's readers use, replaces malformed
        # sequences instead of failing: so do we (the name is then refused where Kafka
        # refuses it, e.g. as an invalid topic name).
        return str(self.take(n), "utf-8", "replace")


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_size(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def uuid_to_str(value: bytes) -> str:
    return str(uuid.UUID(bytes=value))
