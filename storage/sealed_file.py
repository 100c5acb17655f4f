"""Small state files sealed with a version and a CRC-32C, and the field codec they share.

    int16   version
    uint32  CRC-32C of everything after this field
    body    fields written with ``BodyWriter``: int32, float64, length-prefixed UTF-8 strings
            (length -1 = null) and byte strings

Written whole with storage.atomic_file, so a crash leaves the old or the new file; a file that
fails its CRC or does not parse raises ``CorruptFileError`` and the owner ignores it with the
reason (a disk fault, not a crash artefact).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import crc32c

_HEAD = struct.Struct(">hI")
_INT32 = struct.Struct(">i")
_FLOAT64 = struct.Struct(">d")


T = TypeVar("T")


class CorruptFileError(ValueError):
    pass


def seal(version: int, body: bytes | bytearray) -> bytes:
    return _HEAD.pack(version, crc32c.crc32c(bytes(body))) + bytes(body)


def unseal(data: bytes, version: int) -> bytes:
    """The body of a sealed file; raises CorruptFileError."""
    if len(data) < _HEAD.size:
        raise CorruptFileError(f"{len(data)} bytes is shorter than the header")
    found, crc = _HEAD.unpack_from(data, 0)
    if found != version:
        raise CorruptFileError(f"unsupported version {found}")
    body = data[_HEAD.size :]
    if crc32c.crc32c(body) != crc:
        raise CorruptFileError("CRC mismatch")
    return body


class BodyWriter:
    def __init__(self) -> None:
        self.data = bytearray()

    def int32(self, value: int) -> None:
        self.data += _INT32.pack(value)

    def float64(self, value: float) -> None:
        self.data += _FLOAT64.pack(value)

    def raw(self, value: bytes) -> None:
        self.int32(len(value))
        self.data += value

    def string(self, value: str | None) -> None:
        if value is None:
            self.int32(-1)
        else:
            self.raw(value.encode("utf-8"))


class BodyReader:
    def __init__(self, body: bytes) -> None:
        self.body = body
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.body):
            raise CorruptFileError(f"truncated at byte {self.pos} (wanted {n})")
        data = self.body[self.pos : self.pos + n]
        self.pos += n
        return data

    def int32(self) -> int:
        return int(_INT32.unpack(self._take(4))[0])

    def count(self) -> int:
        n = self.int32()
        if n < 0:
            raise CorruptFileError(f"negative count {n}")
        return n

    def float64(self) -> float:
        return float(_FLOAT64.unpack(self._take(8))[0])

    def raw(self) -> bytes:
        return self._take(self.count())

    def string(self) -> str | None:
        n = self.int32()
        if n == -1:
            return None
        try:
            return self._take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptFileError(str(exc)) from exc

    def end(self) -> None:
        if self.pos != len(self.body):
            raise CorruptFileError(f"{len(self.body) - self.pos} bytes after the last entry")


def load_sealed(
    path: Path, decode: Callable[[bytes], T], tmp_suffix: str
) -> tuple[T | None, str | None]:
    """Open a sealed state file at start-up: a leftover temporary file (a write that never
    reached its rename) is removed; returns (decoded value or None when absent or unreadable,
    the problem found or None)."""
    tmp = path.with_name(path.name + tmp_suffix)
    if tmp.exists():
        tmp.unlink()
    if not path.exists():
        return None, None
    try:
        return decode(path.read_bytes()), None
    except (OSError, CorruptFileError) as exc:
        return None, str(exc)
