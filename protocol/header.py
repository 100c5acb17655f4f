"""Request header v1/v2 and response header v0/v1.

Request header v1: api_key int16, api_version int16, correlation_id int32, client_id nullable
string (int16 length). v2 (flexible APIs) appends tagged fields; client_id stays a
NON-compact string even then, as in Kafka's RequestHeader.json ("flexibleVersions": "none"
for ClientId).
"""

from __future__ import annotations

import struct

from protocol.primitives import INT16, INT32, DecodeError, Reader, write_uvarint
from protocol.value_type import value_type

# Kafka fixes the first 8 bytes of every request header, whatever the version.
FIXED_HEADER = 8
_FIXED = struct.Struct(">hhi")
# ... and v1 and v2 go on with the client id's int16 length.
_FIXED_V1 = struct.Struct(">hhih")


@value_type(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def peek_header(frame: bytes | memoryview) -> tuple[int, int, int]:
    """api_key, api_version, correlation_id: readable for any request, even one we refuse."""
    if len(frame) < FIXED_HEADER:
        raise DecodeError(f"request of {len(frame)} bytes is shorter than a header")
    fixed: tuple[int, int, int] = _FIXED.unpack_from(frame, 0)
    return fixed


def decode_request_header(reader: Reader, header_version: int) -> RequestHeader:
    client_id: str | None = None
    pos = reader.pos
    if header_version >= 1 and reader.end - pos >= _FIXED_V1.size:
        # The fixed part and the client id's length in one read (every request but a v0).
        api_key, api_version, correlation_id, n = _FIXED_V1.unpack_from(reader.buf, pos)
        reader.pos = pos + _FIXED_V1.size
    else:
        api_key = reader.int16()
        api_version = reader.int16()
        correlation_id = reader.int32()
        n = reader.int16() if header_version >= 1 else -1
    if n >= 0:
        # Any negative length is a null client id, as in Kafka's RequestHeaderData (and v0
        # has none).
        client_id = reader.string_of(n)
    if header_version >= 2:
        # Tagged fields of the header: none are defined that a broker must read; skip them.
        for _ in range(reader.uvarint()):
            reader.uvarint()
            reader.skip(reader.uvarint())
    return RequestHeader(api_key, api_version, correlation_id, client_id)


def encode_request_header(out: bytearray, header: RequestHeader, header_version: int) -> None:
    out += INT16.pack(header.api_key)
    out += INT16.pack(header.api_version)
    out += INT32.pack(header.correlation_id)
    if header_version >= 1:
        if header.client_id is None:
            out += INT16.pack(-1)
        else:
            data = header.client_id.encode()
            out += INT16.pack(len(data))
            out += data
    if header_version >= 2:
        write_uvarint(out, 0)


def encode_response_header(out: bytearray, correlation_id: int, header_version: int) -> None:
    out += INT32.pack(correlation_id)
    if header_version >= 1:
        out.append(0)  # no tagged fields


def decode_response_header(reader: Reader, header_version: int) -> int:
    correlation_id = reader.int32()
    if header_version >= 1:
        for _ in range(reader.uvarint()):
            reader.uvarint()
            reader.skip(reader.uvarint())
    return correlation_id
