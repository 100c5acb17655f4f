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


def check_length(length: int, max_bytes: int) -> None:
    if length <= 0:
        raise FrameError(f"invalid frame length {length}")
    if length > max_bytes:
        raise FrameError(f"frame length {length} exceeds the limit of {max_bytes} bytes")


def read_length(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    value: int = INT32.unpack_from(buf, pos)[0]
    return value


def frame(payload: bytes | bytearray) -> bytes:
    return INT32.pack(len(payload)) + bytes(payload)
