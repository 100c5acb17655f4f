"""SCRAM credentials on disk (storage.scram_credential_store)."""

from __future__ import annotations

from pathlib import Path

from storage.scram_credential_store import FILE_NAME, ScramCredential, ScramCredentialStore

CRED = ScramCredential(salt=b"salt", stored_key=b"s" * 32, server_key=b"k" * 32, iterations=4096)


def test_credentials_survive_reopening(tmp_path: Path) -> None:
    store = ScramCredentialStore.open(tmp_path)
    store.replace({("alice", 1): CRED, ("bob", 2): CRED})
    again = ScramCredentialStore.open(tmp_path)
    assert again.all() == {("alice", 1): CRED, ("bob", 2): CRED}
    assert again.problem is None


def test_a_corrupt_file_is_ignored_and_reported(tmp_path: Path) -> None:
    ScramCredentialStore.open(tmp_path).replace({("alice", 1): CRED})
    file = tmp_path / FILE_NAME
    data = bytearray(file.read_bytes())
    data[10] ^= 0xFF
    file.write_bytes(bytes(data))
    again = ScramCredentialStore.open(tmp_path)
    assert again.all() == {}
    assert again.problem == "CRC mismatch"
