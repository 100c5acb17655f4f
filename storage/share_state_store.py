"""Share-partition state on disk (KIP-932 share groups), kept across restarts.

Kafka keeps it in the __share_group_state topic, per share-partition: the start offset and
state batches (first offset, last offset, delivery state, delivery count); records a member
held are written back as available, with their delivery count, so after a restart they are
delivered again. A single broker rewrites one file atomically whenever a share-partition
changes:

    <data_dir>/share-group-state.dat     storage.sealed_file, version 1, body:
    int32 share-partition count
    count x (group id string, raw topic id (16 bytes), int32 partition,
             raw (int64 start offset, int64 end offset),
             raw (n x (int64 first, int64 last, int8 state, int16 delivery count)))

A file that fails its CRC or does not parse is ignored, with the reason in ``problem``.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .atomic_file import TMP_SUFFIX, write_atomic
from .sealed_file import BodyReader, BodyWriter, CorruptFileError, load_sealed, seal, unseal

FILE_NAME = "share-group-state.dat"
VERSION = 1
_OFFSETS = struct.Struct(">qq")
_BATCH = struct.Struct(">qqbh")

# (group id, topic id, partition)
ShareKey = tuple[str, bytes, int]


@dataclass(frozen=True, slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareState:
    start_offset: int
    end_offset: int
    batches: tuple[StateBatch, ...]


def encode(states: Mapping[ShareKey, ShareState]) -> bytes:
    out = BodyWriter()
    out.int32(len(states))
    for (group, topic_id, partition), state in sorted(states.items()):
        out.string(group)
        out.raw(topic_id)
        out.int32(partition)
        out.raw(_OFFSETS.pack(state.start_offset, state.end_offset))
        out.raw(
            b"".join(
                _BATCH.pack(b.first_offset, b.last_offset, b.state, b.delivery_count)
                for b in state.batches
            )
        )
    return seal(VERSION, out.data)


def decode(data: bytes) -> dict[ShareKey, ShareState]:
    reader = BodyReader(unseal(data, VERSION))
    states: dict[ShareKey, ShareState] = {}
    for _ in range(reader.count()):
        group = reader.string()
        if group is None:
            raise CorruptFileError("null group id")
        topic_id = reader.raw()
        if len(topic_id) != 16:
            raise CorruptFileError("topic id not 16 bytes")
        partition = reader.int32()
        offsets = reader.raw()
        if len(offsets) != _OFFSETS.size:
            raise CorruptFileError("bad offsets")
        start, end = _OFFSETS.unpack(offsets)
        table = reader.raw()
        if len(table) % _BATCH.size:
            raise CorruptFileError("bad state batches")
        batches = tuple(StateBatch(*fields) for fields in _BATCH.iter_unpack(table))
        states[(group, topic_id, partition)] = ShareState(start, end, batches)
    reader.end()
    return states


class ShareStateStore:
    """Every share-partition's state; ``put`` is durable before it returns."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self.states: dict[ShareKey, ShareState] = {}
        self.problem: str | None = None

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> ShareStateStore:
        store = cls(data_dir)
        loaded, store.problem = load_sealed(store.path, decode, TMP_SUFFIX)
        if loaded is not None:
            store.states = loaded
        return store

    def put(self, changed: Mapping[ShareKey, ShareState]) -> None:
        """Replace the states of ``changed`` share-partitions, durably."""
        states = {**self.states, **changed}
        write_atomic(self.path, encode(states))
        self.states = states

    def remove(self, keys: set[ShareKey]) -> None:
        """Forget these share-partitions (offsets deleted, group deleted), durably."""
        if not keys & self.states.keys():
            return
        states = {k: v for k, v in self.states.items() if k not in keys}
        write_atomic(self.path, encode(states))
        self.states = states
