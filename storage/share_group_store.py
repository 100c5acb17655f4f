"""Share groups on disk (KIP-932), kept across restarts.

Kafka keeps a share group in __consumer_offsets as its ShareGroupMetadata record (the group
epoch) and its ShareGroupStatePartitionMetadata record (the share-partitions initialized for
it) until DeleteGroups tombstones them; members are not brought back here (they rejoin, as
after a coordinator failover). A single broker rewrites one file atomically whenever a share
group is made, its epoch or its initialized share-partitions change, or it is deleted:

    <data_dir>/share-groups.dat      storage.sealed_file, version 1, body:
    int32 group count
    count x (group id string, int32 group epoch,
             raw (n x (raw topic id (16 bytes), int32 partition)))

A file that fails its CRC or does not parse is ignored, with the reason in ``problem``.
(The share-partitions' states are storage.share_state_store's.)
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .atomic_file import TMP_SUFFIX, write_atomic
from .sealed_file import BodyReader, BodyWriter, CorruptFileError, load_sealed, seal, unseal

FILE_NAME = "share-groups.dat"
VERSION = 1
_PARTITION = struct.Struct(">16si")


@dataclass(frozen=True, slots=True)
class SavedShareGroup:
    epoch: int
    # (topic id, partition) of each share-partition initialized for the group.
    initialized: frozenset[tuple[bytes, int]] = frozenset()


def encode(groups: Mapping[str, SavedShareGroup]) -> bytes:
    out = BodyWriter()
    out.int32(len(groups))
    for group_id, group in sorted(groups.items()):
        out.string(group_id)
        out.int32(group.epoch)
        out.raw(b"".join(_PARTITION.pack(t, p) for t, p in sorted(group.initialized)))
    return seal(VERSION, out.data)


def decode(data: bytes) -> dict[str, SavedShareGroup]:
    reader = BodyReader(unseal(data, VERSION))
    groups: dict[str, SavedShareGroup] = {}
    for _ in range(reader.count()):
        group_id = reader.string()
        if group_id is None:
            raise CorruptFileError("null group id")
        epoch = reader.int32()
        table = reader.raw()
        if len(table) % _PARTITION.size:
            raise CorruptFileError("bad share-partition table")
        groups[group_id] = SavedShareGroup(epoch, frozenset(_PARTITION.iter_unpack(table)))
    reader.end()
    return groups


class ShareGroupStore:
    """Every share group's epoch and initialized share-partitions; ``replace`` is durable
    before it returns."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self.groups: dict[str, SavedShareGroup] = {}
        self.problem: str | None = None

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> ShareGroupStore:
        store = cls(data_dir)
        loaded, store.problem = load_sealed(store.path, decode, TMP_SUFFIX)
        if loaded is not None:
            store.groups = loaded
        return store

    def replace(self, groups: Mapping[str, SavedShareGroup]) -> None:
        if dict(groups) == self.groups:
            return
        write_atomic(self.path, encode(groups))
        self.groups = dict(groups)
