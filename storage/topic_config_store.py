"""Per-topic config overrides on disk: one small versioned, CRC'd file per topic.

Kafka keeps topic configs in its metadata log (KRaft); a single broker needs only a file per
topic, rewritten atomically (storage.atomic_file) whenever the topic's overrides change:

    <data_dir>/topic-configs/<topic id, base64url>.config

    int16   version (1)
    uint32  CRC-32C of everything after this field
    int32   length + UTF-8 topic name
    int32   count
    count x (int32 length + UTF-8 config name, int32 length + UTF-8 value)

Files are named by topic id, not name: a topic deleted and re-created under the same name has
a new id, so a file left behind by a crash in the middle of a deletion never applies to the
new topic (the owner removes such orphans at start-up, see ``remove_except``). Names are also
up to 249 characters, too long for a file name with suffixes on some file systems.

Only overrides are stored (what AlterConfigs/CreateTopics set); defaults come from the broker
configuration, so changing a broker default changes every topic that does not override it,
as in Kafka. A file that fails its CRC or does not parse is ignored with the reason recorded
in ``problems`` (atomic writes make that a disk fault, not a crash artefact).
"""

from __future__ import annotations

import base64
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import crc32c

from .atomic_file import TMP_SUFFIX, fsync_dir, write_atomic

DIR_NAME = "topic-configs"
SUFFIX = ".config"
VERSION = 1

_HEAD = struct.Struct(">hI")
_INT32 = struct.Struct(">i")


class CorruptTopicConfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class StoredTopicConfig:
    topic_id: bytes
    name: str
    configs: dict[str, str]


def _id_to_str(topic_id: bytes) -> str:
    return base64.urlsafe_b64encode(topic_id).rstrip(b"=").decode("ascii")


def _id_from_str(text: str) -> bytes | None:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        return None
    return raw if len(raw) == 16 else None


def encode(name: str, configs: Mapping[str, str]) -> bytes:
    body = bytearray()

    def put(text: str) -> None:
        data = text.encode("utf-8")
        body.extend(_INT32.pack(len(data)))
        body.extend(data)

    put(name)
    body.extend(_INT32.pack(len(configs)))
    for key in sorted(configs):
        put(key)
        put(configs[key])
    return _HEAD.pack(VERSION, crc32c.crc32c(bytes(body))) + bytes(body)


def decode(data: bytes) -> tuple[str, dict[str, str]]:
    """(topic name, configs); raises CorruptTopicConfigError."""
    if len(data) < _HEAD.size:
        raise CorruptTopicConfigError(f"{len(data)} bytes is shorter than the header")
    version, crc = _HEAD.unpack_from(data, 0)
    if version != VERSION:
        raise CorruptTopicConfigError(f"unsupported version {version}")
    body = data[_HEAD.size :]
    if crc32c.crc32c(body) != crc:
        raise CorruptTopicConfigError("CRC mismatch")
    pos = 0

    def take_int() -> int:
        nonlocal pos
        if pos + 4 > len(body):
            raise CorruptTopicConfigError("truncated")
        (value,) = _INT32.unpack_from(body, pos)
        pos += 4
        return int(value)

    def take_str() -> str:
        nonlocal pos
        n = take_int()
        if n < 0 or pos + n > len(body):
            raise CorruptTopicConfigError(f"bad string length {n}")
        try:
            text = body[pos : pos + n].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptTopicConfigError(str(exc)) from exc
        pos += n
        return text

    name = take_str()
    count = take_int()
    if count < 0:
        raise CorruptTopicConfigError(f"negative count {count}")
    configs: dict[str, str] = {}
    for _ in range(count):
        key = take_str()
        configs[key] = take_str()
    if pos != len(body):
        raise CorruptTopicConfigError(f"{len(body) - pos} bytes after the last entry")
    return name, configs


class TopicConfigStore:
    """The overrides of every topic, by topic id; writes go straight to disk."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / DIR_NAME
        self._entries: dict[bytes, StoredTopicConfig] = {}
        # (file name, reason) of every file that could not be loaded.
        self.problems: list[tuple[str, str]] = []

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> TopicConfigStore:
        store = cls(data_dir)
        store.path.mkdir(parents=True, exist_ok=True)
        for entry in sorted(os.listdir(store.path)):
            file = store.path / entry
            if entry.endswith(TMP_SUFFIX):
                file.unlink()  # a write that never reached its rename
                continue
            if not entry.endswith(SUFFIX):
                continue
            topic_id = _id_from_str(entry[: -len(SUFFIX)])
            if topic_id is None:
                store.problems.append((entry, "file name is not a topic id"))
                continue
            try:
                name, configs = decode(file.read_bytes())
            except (OSError, CorruptTopicConfigError) as exc:
                store.problems.append((entry, str(exc)))
                continue
            store._entries[topic_id] = StoredTopicConfig(topic_id, name, configs)
        return store

    def get(self, topic_id: bytes) -> dict[str, str]:
        """The overrides of a topic (a copy; empty when it has none)."""
        entry = self._entries.get(topic_id)
        return dict(entry.configs) if entry is not None else {}

    def entries(self) -> list[StoredTopicConfig]:
        return list(self._entries.values())

    def _file(self, topic_id: bytes) -> Path:
        return self.path / f"{_id_to_str(topic_id)}{SUFFIX}"

    def put(self, topic_id: bytes, name: str, configs: Mapping[str, str]) -> None:
        """Replace the overrides of a topic, durably, before returning."""
        if not configs:
            self.delete(topic_id)
            return
        write_atomic(self._file(topic_id), encode(name, configs))
        self._entries[topic_id] = StoredTopicConfig(topic_id, name, dict(configs))

    def delete(self, topic_id: bytes) -> None:
        self._entries.pop(topic_id, None)
        file = self._file(topic_id)
        if file.exists():
            file.unlink()
            fsync_dir(self.path)

    def remove_except(self, topic_ids: set[bytes]) -> list[str]:
        """Delete the files of topics that no longer exist; returns their topic names."""
        gone = [e for e in self._entries.values() if e.topic_id not in topic_ids]
        for entry in gone:
            self.delete(entry.topic_id)
        return [e.name for e in gone]
