"""Client quotas (AlterClientQuotas, KIP-546) on disk: one sealed file in the data dir.

Kafka keeps them in its metadata log as ClientQuotaRecords, one per (entity, key); a single
broker rewrites one small file atomically whenever they change:

    <data_dir>/client-quotas.dat     storage.sealed_file, version 1, body:
    int32 entity count
    count x (int32 n, n x (type string, name string or null = the default entity),
             int32 m, m x (key string, float64 value))

An entity is a set of (entity type, name) pairs: ``{"user": "alice", "client-id": None}``
is alice's quota for the default client id. Entities without quotas are not kept. A file
that fails its CRC or does not parse is ignored, with the reason in ``problem``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .atomic_file import TMP_SUFFIX, write_atomic
from .sealed_file import BodyReader, BodyWriter, CorruptFileError, load_sealed, seal, unseal

FILE_NAME = "client-quotas.dat"
VERSION = 1

# (entity type, name or None for the default), sorted: a hashable, order-free entity key.
Entity = tuple[tuple[str, str | None], ...]


def entity_key(pairs: Mapping[str, str | None]) -> Entity:
    return tuple(sorted(pairs.items(), key=lambda p: p[0]))


def encode(quotas: Mapping[Entity, Mapping[str, float]]) -> bytes:
    out = BodyWriter()
    out.int32(len(quotas))
    for entity in sorted(quotas, key=repr):
        out.int32(len(entity))
        for entity_type, name in entity:
            out.string(entity_type)
            out.string(name)
        values = quotas[entity]
        out.int32(len(values))
        for key in sorted(values):
            out.string(key)
            out.float64(values[key])
    return seal(VERSION, out.data)


def decode(data: bytes) -> dict[Entity, dict[str, float]]:
    reader = BodyReader(unseal(data, VERSION))
    quotas: dict[Entity, dict[str, float]] = {}
    for _ in range(reader.count()):
        pairs: dict[str, str | None] = {}
        for _ in range(reader.count()):
            entity_type = reader.string()
            if entity_type is None:
                raise CorruptFileError("null entity type")
            pairs[entity_type] = reader.string()
        values: dict[str, float] = {}
        for _ in range(reader.count()):
            key = reader.string()
            if key is None:
                raise CorruptFileError("null quota key")
            values[key] = reader.float64()
        quotas[entity_key(pairs)] = values
    reader.end()
    return quotas


class ClientQuotaStore:
    """Quota values by entity; ``replace`` is durable before it returns."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self._quotas: dict[Entity, dict[str, float]] = {}
        self.problem: str | None = None

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> ClientQuotaStore:
        store = cls(data_dir)
        loaded, store.problem = load_sealed(store.path, decode, TMP_SUFFIX)
        if loaded is not None:
            store._quotas = loaded
        return store

    def all(self) -> dict[Entity, dict[str, float]]:
        return {entity: dict(values) for entity, values in self._quotas.items()}

    def get(self, entity: Entity) -> dict[str, float]:
        return dict(self._quotas.get(entity, {}))

    def replace(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        """Store exactly these quotas (entities without values are dropped), durably."""
        kept = {entity: dict(values) for entity, values in quotas.items() if values}
        write_atomic(self.path, encode(kept))
        self._quotas = kept
