"""A simulated cluster's replica assignments on disk: each topic's replication factor and
its manually assigned partitions (other partitions are placed by rule from the topic id).

Kafka keeps them in its metadata log's PartitionRecords; a cluster in one process rewrites
one small file atomically whenever a topic is created with them or deleted:

    <data_dir>/replica-assignments.dat     storage.sealed_file, version 1, body:
    int32 topic count
    count x (topic id bytes, int32 replication factor,
             int32 n, n x (int32 partition, int32 k, k x int32 node id))

A single broker never writes it. A file that fails its CRC or does not parse is ignored,
with the reason in ``problem`` (topics then get the default replication factor).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .atomic_file import TMP_SUFFIX, write_atomic
from .sealed_file import BodyReader, BodyWriter, CorruptFileError, load_sealed, seal, unseal

FILE_NAME = "replica-assignments.dat"
VERSION = 1


@dataclass(frozen=True)
class TopicAssignment:
    replication_factor: int
    # Partition -> replicas (preferred leader first), for manually assigned partitions.
    manual: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


def encode(topics: Mapping[bytes, TopicAssignment]) -> bytes:
    out = BodyWriter()
    out.int32(len(topics))
    for topic_id in sorted(topics):
        topic = topics[topic_id]
        out.raw(topic_id)
        out.int32(topic.replication_factor)
        out.int32(len(topic.manual))
        for partition in sorted(topic.manual):
            replicas = topic.manual[partition]
            out.int32(partition)
            out.int32(len(replicas))
            for node in replicas:
                out.int32(node)
    return seal(VERSION, out.data)


def decode(data: bytes) -> dict[bytes, TopicAssignment]:
    reader = BodyReader(unseal(data, VERSION))
    topics: dict[bytes, TopicAssignment] = {}
    for _ in range(reader.count()):
        topic_id = reader.raw()
        if len(topic_id) != 16:
            raise CorruptFileError(f"topic id of {len(topic_id)} bytes")
        factor = reader.int32()
        manual: dict[int, tuple[int, ...]] = {}
        for _ in range(reader.count()):
            partition = reader.int32()
            manual[partition] = tuple(reader.int32() for _ in range(reader.count()))
        topics[topic_id] = TopicAssignment(factor, manual)
    reader.end()
    return topics


class ReplicaAssignmentStore:
    """Assignments by topic id; ``put`` and ``delete`` are durable before they return."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self._topics: dict[bytes, TopicAssignment] = {}
        self.problem: str | None = None

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> ReplicaAssignmentStore:
        store = cls(data_dir)
        loaded, store.problem = load_sealed(store.path, decode, TMP_SUFFIX)
        if loaded is not None:
            store._topics = loaded
        return store

    def all(self) -> dict[bytes, TopicAssignment]:
        return dict(self._topics)

    def put(self, topic_id: bytes, assignment: TopicAssignment) -> None:
        topics = {**self._topics, topic_id: assignment}
        write_atomic(self.path, encode(topics))
        self._topics = topics

    def delete(self, topic_id: bytes) -> None:
        if topic_id in self._topics:
            self._write({t: a for t, a in self._topics.items() if t != topic_id})

    def remove_except(self, topic_ids: Iterable[bytes]) -> int:
        """Forget topics that no longer exist (deleted while the broker was down, or by a
        crash between a deletion and this file's rewrite); how many went."""
        keep = set(topic_ids)
        kept = {t: a for t, a in self._topics.items() if t in keep}
        gone = len(self._topics) - len(kept)
        if gone:
            self._write(kept)
        return gone

    def _write(self, topics: dict[bytes, TopicAssignment]) -> None:
        write_atomic(self.path, encode(topics))
        self._topics = topics
