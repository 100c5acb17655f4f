"""ACLs (CreateAcls/DeleteAcls) on disk: one sealed file, rewritten atomically on change.

Kafka keeps them in its metadata log as AccessControlEntryRecords (resource type, name,
pattern type, principal, host, operation, permission type); a single broker keeps the
whole set in one small file:

    <data_dir>/acls.dat     storage.sealed_file, version 1, body:
    int32 count
    count x (int32 resource type, resource name string, int32 pattern type,
             principal string, host string, int32 operation, int32 permission type)

A file that fails its CRC or does not parse is ignored, with the reason in ``problem``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .atomic_file import TMP_SUFFIX, keep_private, write_atomic
from .sealed_file import BodyReader, BodyWriter, CorruptFileError, seal, unseal

FILE_NAME = "acls.dat"
VERSION = 1


@dataclass(frozen=True, slots=True, order=True)
class StoredAcl:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


def encode(acls: Iterable[StoredAcl]) -> bytes:
    ordered = sorted(set(acls))
    out = BodyWriter()
    out.int32(len(ordered))
    for acl in ordered:
        out.int32(acl.resource_type)
        out.string(acl.resource_name)
        out.int32(acl.pattern_type)
        out.string(acl.principal)
        out.string(acl.host)
        out.int32(acl.operation)
        out.int32(acl.permission_type)
    return seal(VERSION, out.data)


def decode(data: bytes) -> set[StoredAcl]:
    reader = BodyReader(unseal(data, VERSION))
    acls: set[StoredAcl] = set()
    for _ in range(reader.count()):
        resource_type = reader.int32()
        name = reader.string()
        pattern_type = reader.int32()
        principal, host = reader.string(), reader.string()
        operation, permission = reader.int32(), reader.int32()
        if name is None or principal is None or host is None:
            raise CorruptFileError("null string in an ACL")
        acls.add(
            StoredAcl(resource_type, name, pattern_type, principal, host, operation, permission)
        )
    reader.end()
    return acls


class AclStore:
    """The ACL set; ``replace`` is durable before it returns."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self._acls: frozenset[StoredAcl] = frozenset()
        self.problem: str | None = None

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> AclStore:
        store = cls(data_dir)
        tmp = store.path.with_name(FILE_NAME + TMP_SUFFIX)
        if tmp.exists():
            tmp.unlink()  # a write that never reached its rename
        if store.path.exists():
            keep_private(store.path)
            try:
                store._acls = frozenset(decode(store.path.read_bytes()))
            except (OSError, CorruptFileError) as exc:
                store.problem = str(exc)
        return store

    def all(self) -> frozenset[StoredAcl]:
        return self._acls

    def replace(self, acls: Iterable[StoredAcl]) -> None:
        new = frozenset(acls)
        write_atomic(self.path, encode(new), private=True)
        self._acls = new
