"""SCRAM credentials (AlterUserScramCredentials, KIP-554) on disk: one sealed file.

Kafka keeps them in its metadata log as UserScramCredentialRecords: user, mechanism, salt,
stored key, server key and iterations (never the password nor the salted password). A single
broker rewrites one small file atomically whenever they change:

    <data_dir>/scram-credentials.dat     storage.sealed_file, version 1, body:
    int32 count
    count x (user string, int32 mechanism, int32 iterations,
             salt bytes, stored key bytes, server key bytes)

A file that fails its CRC or does not parse is ignored, with the reason in ``problem``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .atomic_file import TMP_SUFFIX, keep_private, write_atomic
from .sealed_file import BodyReader, BodyWriter, CorruptFileError, load_sealed, seal, unseal

FILE_NAME = "scram-credentials.dat"
VERSION = 1


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


# (user name, mechanism type: 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512)
CredentialKey = tuple[str, int]


def encode(credentials: Mapping[CredentialKey, ScramCredential]) -> bytes:
    out = BodyWriter()
    out.int32(len(credentials))
    for user, mechanism in sorted(credentials):
        cred = credentials[(user, mechanism)]
        out.string(user)
        out.int32(mechanism)
        out.int32(cred.iterations)
        out.raw(cred.salt)
        out.raw(cred.stored_key)
        out.raw(cred.server_key)
    return seal(VERSION, out.data)


def decode(data: bytes) -> dict[CredentialKey, ScramCredential]:
    reader = BodyReader(unseal(data, VERSION))
    credentials: dict[CredentialKey, ScramCredential] = {}
    for _ in range(reader.count()):
        user = reader.string()
        if user is None:
            raise CorruptFileError("null user name")
        mechanism = reader.int32()
        iterations = reader.int32()
        salt, stored_key, server_key = reader.raw(), reader.raw(), reader.raw()
        credentials[(user, mechanism)] = ScramCredential(salt, stored_key, server_key, iterations)
    reader.end()
    return credentials


class ScramCredentialStore:
    """Credentials by (user, mechanism); ``replace`` is durable before it returns."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self._credentials: dict[CredentialKey, ScramCredential] = {}
        self.problem: str | None = None

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> ScramCredentialStore:
        store = cls(data_dir)
        keep_private(store.path)
        loaded, store.problem = load_sealed(store.path, decode, TMP_SUFFIX)
        if loaded is not None:
            store._credentials = loaded
        return store

    def get(self, user: str, mechanism: int) -> ScramCredential | None:
        return self._credentials.get((user, mechanism))

    def all(self) -> dict[CredentialKey, ScramCredential]:
        return dict(self._credentials)

    def replace(self, credentials: Mapping[CredentialKey, ScramCredential]) -> None:
        write_atomic(self.path, encode(credentials), private=True)
        self._credentials = dict(credentials)
