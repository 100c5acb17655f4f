"""Size-prefixed frames: int32 length, then that many bytes.

Kafka closes the connection on a length that is negative, zero or above
socket.request.max.bytes, before allocating anything (SocketServer / NetworkReceive).
"""

from __future__ import annotations

from protocol.primitives import INT32

LENGTH_SIZE = 4
DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024


class FrameError(ValueError):
    """The length prefix cannot be honoured; the connection must be closed."""


# First bytes of an HTTP request or answer, read as a length they are above any limit.
_HTTP_STARTS = (b"GET ", b"POST", b"PUT ", b"HEAD", b"DELE", b"OPTI", b"PATC", b"CONN", b"HTTP")
# A TLS record: content type (handshake 22, alert 21), then major version 3.
_TLS_RECORD_TYPES = (0x15, 0x16)


def check_length(length: int, max_bytes: int) -> None:
    if 0 < length <= max_bytes:
        return
    foreign = foreign_protocol(length)
    if foreign is not None:
        # Only on the way to closing: the usual cause is a client of the wrong protocol.
        raise FrameError(foreign)
    if length <= 0:
        raise FrameError(f"invalid frame length {length}")
    raise FrameError(f"frame length {length} exceeds the limit of {max_bytes} bytes")


def foreign_protocol(length: int) -> str | None:
    """What a refused length prefix says when it is another protocol's first bytes."""
    head = (length & 0xFFFFFFFF).to_bytes(4, "big")
    if head in _HTTP_STARTS:
        return (
            f"this looks like HTTP ({head.decode('ascii')!r}...), not the Kafka protocol: "
            "an HTTP client (or health check) on a Kafka port, or a Kafka client on an HTTP one"
        )
    if head[0] in _TLS_RECORD_TYPES and head[1] == 3:
        return (
            "this looks like TLS, not plaintext Kafka: one side uses SSL and the other "
            "PLAINTEXT (the client's security.protocol must match the listener's)"
        )
    return None


def read_length(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    value: int = INT32.unpack_from(buf, pos)[0]
    return value


def frame(payload: bytes | bytearray) -> bytes:
    return INT32.pack(len(payload)) + bytes(payload)
