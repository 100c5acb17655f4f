"""Group configs (IncrementalAlterConfigs/AlterConfigs on GROUP resources) on disk.

Kafka 4.0 keeps them in its metadata log as ConfigRecords of resource type GROUP, one per
(group, name); a single broker rewrites one small file atomically whenever they change:

    <data_dir>/group-configs.dat     storage.sealed_file, version 1, body:
    int32 group count
    count x (group id string, int32 n, n x (name string, value string))

Groups without configs are not kept. A file that fails its CRC or does not parse is
ignored, with the reason in ``problem``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .atomic_file import TMP_SUFFIX, write_atomic
from .sealed_file import BodyReader, BodyWriter, CorruptFileError, load_sealed, seal, unseal

FILE_NAME = "group-configs.dat"
VERSION = 1


def encode(groups: Mapping[str, Mapping[str, str]]) -> bytes:
    out = BodyWriter()
    out.int32(len(groups))
    for group in sorted(groups):
        configs = groups[group]
        out.string(group)
        out.int32(len(configs))
        for name in sorted(configs):
            out.string(name)
            out.string(configs[name])
    return seal(VERSION, out.data)


def _text(reader: BodyReader, what: str) -> str:
    value = reader.string()
    if value is None:
        raise CorruptFileError(f"null {what}")
    return value


def decode(data: bytes) -> dict[str, dict[str, str]]:
    reader = BodyReader(unseal(data, VERSION))
    groups: dict[str, dict[str, str]] = {}
    for _ in range(reader.count()):
        group = _text(reader, "group id")
        configs: dict[str, str] = {}
        for _ in range(reader.count()):
            name = _text(reader, "config name")
            configs[name] = _text(reader, "config value")
        groups[group] = configs
    reader.end()
    return groups


class GroupConfigStore:
    """Config overrides by group id; ``put`` is durable before it returns."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self._groups: dict[str, dict[str, str]] = {}
        self.problem: str | None = None

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> GroupConfigStore:
        store = cls(data_dir)
        loaded, store.problem = load_sealed(store.path, decode, TMP_SUFFIX)
        if loaded is not None:
            store._groups = loaded
        return store

    def all(self) -> dict[str, dict[str, str]]:
        return {group: dict(configs) for group, configs in self._groups.items()}

    def get(self, group: str) -> dict[str, str]:
        """The group's overrides (a copy; empty when it has none)."""
        return dict(self._groups.get(group, {}))

    def put(self, group: str, configs: Mapping[str, str]) -> None:
        """Replace one group's overrides (none: the group is dropped), durably."""
        groups = {g: c for g, c in self._groups.items() if g != group}
        if configs:
            groups[group] = dict(configs)
        write_atomic(self.path, encode(groups))
        self._groups = groups
