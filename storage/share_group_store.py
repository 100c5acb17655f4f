"""Share groups on disk (KIP-932), kept across restarts.

Kafka keeps a share group in __consumer_offsets as its ShareGroupMetadata record (the group
epoch) until DeleteGroups tombstones it; members are not brought back here (they rejoin, as
after a coordinator failover). A single broker rewrites one file atomically whenever a share
group is made, its epoch moves, or it is deleted:

    <data_dir>/share-groups.dat      storage.sealed_file, version 1, body:
    int32 group count
    count x (group id string, int32 group epoch)

A file that fails its CRC or does not parse is ignored, with the reason in ``problem``.
(The share-partitions' states are storage.share_state_store's.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .atomic_file import TMP_SUFFIX, write_atomic
from .sealed_file import BodyReader, BodyWriter, CorruptFileError, load_sealed, seal, unseal

FILE_NAME = "share-groups.dat"
VERSION = 1


def encode(groups: Mapping[str, int]) -> bytes:
    out = BodyWriter()
    out.int32(len(groups))
    for group_id, epoch in sorted(groups.items()):
        out.string(group_id)
        out.int32(epoch)
    return seal(VERSION, out.data)


def decode(data: bytes) -> dict[str, int]:
    reader = BodyReader(unseal(data, VERSION))
    groups: dict[str, int] = {}
    for _ in range(reader.count()):
        group_id = reader.string()
        if group_id is None:
            raise CorruptFileError("null group id")
        groups[group_id] = reader.int32()
    reader.end()
    return groups


class ShareGroupStore:
    """Every share group's id and group epoch; ``replace`` is durable before it returns."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self.groups: dict[str, int] = {}
        self.problem: str | None = None

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> ShareGroupStore:
        store = cls(data_dir)
        loaded, store.problem = load_sealed(store.path, decode, TMP_SUFFIX)
        if loaded is not None:
            store.groups = loaded
        return store

    def replace(self, groups: Mapping[str, int]) -> None:
        if dict(groups) == self.groups:
            return
        write_atomic(self.path, encode(groups))
        self.groups = dict(groups)
