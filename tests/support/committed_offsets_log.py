"""Read the broker's committed-offsets log from disk, independently of the broker's reader.

The format is storage.committed_offsets': an 8-byte header (magic, version), then frames of
``uint32 CRC-32C, int32 length, payload``; a payload opens with its record type and the
group id. Only the keys are decoded: what a test needs to see tombstones on disk."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from storage import committed_offsets as co

_OFFSET_KINDS = {
    co.OFFSET: "offset",
    co.OFFSET_WITH_EXPIRY: "offset",
    co.OFFSET_TOMBSTONE: "offset-tombstone",
}
_GROUP_KINDS = {
    co.GROUP: "group",
    co.GROUP_METADATA_STATE_TIME: "group",
    co.GROUP_METADATA: "group",
    co.GROUP_TOMBSTONE: "group-tombstone",
}


@dataclass(frozen=True, slots=True)
class LogRecord:
    kind: str  # offset, offset-tombstone, group, group-tombstone
    group: str
    topic: str | None = None
    partition: int | None = None


def _string(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">i", data, pos)
    return data[pos + 4 : pos + 4 + n].decode(), pos + 4 + n


def read_log(data_dir: Path) -> list[LogRecord]:
    data = (data_dir / co.FILE_NAME).read_bytes()
    assert data[:4] == co.MAGIC
    pos = 8
    records = []
    while pos + 8 <= len(data):
        _, length = struct.unpack_from(">Ii", data, pos)
        payload = data[pos + 8 : pos + 8 + length]
        pos += 8 + length
        kind = payload[0]
        group, at = _string(payload, 1)
        if kind in _OFFSET_KINDS:
            topic, at = _string(payload, at)
            (partition,) = struct.unpack_from(">i", payload, at)
            records.append(LogRecord(_OFFSET_KINDS[kind], group, topic, partition))
        else:
            records.append(LogRecord(_GROUP_KINDS[kind], group))
    return records
