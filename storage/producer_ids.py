"""Producer id allocation that never hands out an id twice, even across a crash.

Like Kafka's ProducerIdManager, ids are reserved in blocks (1000 by default) and the END of a
block is made durable BEFORE the first id of it is handed out; after a restart, allocation
starts at the persisted end. A crash therefore wastes at most the rest of one block.

``producer_ids.state``: int16 version (1), uint32 CRC-32C of the rest, int64 next block start.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c

from .atomic_file import write_atomic

STATE_FILE = "producer_ids.state"
VERSION = 1
_HEAD = struct.Struct(">hI")
_BODY = struct.Struct(">q")
MAX_PRODUCER_ID = 0x7FFFFFFFFFFFFFFF


class ProducerIdStateError(Exception):
    """The state file exists but cannot be trusted: refusing to risk reusing ids."""


class ProducerIdAllocator:
    def __init__(self, data_dir: str | os.PathLike[str], block_size: int = 1000) -> None:
        if block_size < 1:
            raise ValueError("block_size must be positive")
        Path(data_dir).mkdir(parents=True, exist_ok=True)
        self.path = Path(data_dir) / STATE_FILE
        self.block_size = block_size
        start = _load(self.path)
        self._next = start
        self._block_end = start  # nothing reserved yet in this process

    @property
    def reserved_end(self) -> int:
        """First id not covered by the durable reservation."""
        return self._block_end

    def next_id(self) -> int:
        if self._next >= self._block_end:
            end = self._next + self.block_size
            if end > MAX_PRODUCER_ID:
                raise OverflowError("producer ids exhausted")
            _store(self.path, end)  # durable before any id of the block leaves
            self._block_end = end
        pid = self._next
        self._next += 1
        return pid


def _load(path: Path) -> int:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    if len(data) != _HEAD.size + _BODY.size:
        raise ProducerIdStateError(f"{path}: {len(data)} bytes, expected {_HEAD.size + 8}")
    version, crc = _HEAD.unpack_from(data)
    if version != VERSION:
        raise ProducerIdStateError(f"{path}: unsupported version {version}")
    body = data[_HEAD.size :]
    if crc32c.crc32c(body) != crc:
        raise ProducerIdStateError(f"{path}: CRC mismatch")
    (next_start,) = _BODY.unpack(body)
    if next_start < 0:
        raise ProducerIdStateError(f"{path}: negative next block start {next_start}")
    return int(next_start)


def _store(path: Path, next_start: int) -> None:
    body = _BODY.pack(next_start)
    write_atomic(path, _HEAD.pack(VERSION, crc32c.crc32c(body)) + body)
