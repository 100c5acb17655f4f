"""Dynamic broker configs on disk, next to the topic configs.

Kafka keeps what IncrementalAlterConfigs / AlterConfigs set on a BROKER resource in its
metadata log (ConfigRecords, resource name "" for the cluster-wide default, the node id for
one broker). A single broker needs one small file per resource, rewritten atomically
(storage.atomic_file) whenever it changes, in the topic-config file format
(storage.topic_config_store: version, CRC-32C, resource name, entries):

    <data_dir>/broker-configs/cluster-default.config    resource name ""
    <data_dir>/broker-configs/broker-<node id>.config   resource name "<node id>"

A resource with no dynamic config has no file. A file that fails its CRC or does not parse
is ignored with the reason recorded in ``problems``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .atomic_file import TMP_SUFFIX, fsync_dir, write_atomic
from .topic_config_store import CorruptTopicConfigError, decode, encode

DIR_NAME = "broker-configs"
SUFFIX = ".config"
_DEFAULT_FILE = "cluster-default"


def _file_stem(resource: str) -> str:
    return _DEFAULT_FILE if resource == "" else f"broker-{resource}"


class BrokerConfigStore:
    """Dynamic configs by BROKER resource name ("" = cluster default); writes are durable."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / DIR_NAME
        self._configs: dict[str, dict[str, str]] = {}
        # (file name, reason) of every file that could not be loaded.
        self.problems: list[tuple[str, str]] = []

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> BrokerConfigStore:
        store = cls(data_dir)
        store.path.mkdir(parents=True, exist_ok=True)
        for entry in sorted(os.listdir(store.path)):
            file = store.path / entry
            if entry.endswith(TMP_SUFFIX):
                file.unlink()  # a write that never reached its rename
                continue
            if not entry.endswith(SUFFIX):
                continue
            try:
                resource, configs = decode(file.read_bytes())
            except (OSError, CorruptTopicConfigError) as exc:
                store.problems.append((entry, str(exc)))
                continue
            if _file_stem(resource) + SUFFIX != entry:
                store.problems.append((entry, f"holds resource {resource!r}"))
                continue
            store._configs[resource] = configs
        return store

    def get(self, resource: str) -> dict[str, str]:
        """The dynamic configs of a resource (a copy; empty when it has none)."""
        return dict(self._configs.get(resource, {}))

    def put(self, resource: str, configs: Mapping[str, str]) -> None:
        """Replace the dynamic configs of a resource, durably, before returning."""
        file = self.path / (_file_stem(resource) + SUFFIX)
        if configs:
            write_atomic(file, encode(resource, configs))
            self._configs[resource] = dict(configs)
            return
        self._configs.pop(resource, None)
        if file.exists():
            file.unlink()
            fsync_dir(self.path)
