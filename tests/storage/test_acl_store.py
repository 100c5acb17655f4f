"""storage.acl_store: the ACL set survives a reopen; a torn or corrupt file is reported."""

from __future__ import annotations

from pathlib import Path

from storage.acl_store import FILE_NAME, AclStore, StoredAcl

ACL = StoredAcl(2, "orders-", 4, "User:alice", "*", 4, 3)


def test_acls_written_atomically_survive_a_reopen(tmp_path: Path) -> None:
    store = AclStore.open(tmp_path)
    store.replace([ACL, StoredAcl(4, "kafka-cluster", 3, "User:*", "10.0.0.1", 8, 2), ACL])
    reopened = AclStore.open(tmp_path)
    assert reopened.problem is None
    assert reopened.all() == store.all() and len(reopened.all()) == 2
    assert not list(tmp_path.glob("*.tmp"))


def test_a_corrupt_file_is_reported_not_half_read(tmp_path: Path) -> None:
    AclStore.open(tmp_path).replace([ACL])
    path = tmp_path / FILE_NAME
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    reopened = AclStore.open(tmp_path)
    assert reopened.problem is not None and reopened.all() == frozenset()
