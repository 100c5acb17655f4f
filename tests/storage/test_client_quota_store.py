"""Client quotas on disk (storage.client_quota_store)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.client_quota_store import FILE_NAME, ClientQuotaStore, decode, encode, entity_key
from storage.sealed_file import CorruptFileError

ALICE = entity_key({"user": "alice", "client-id": None})
DEFAULT_USER = entity_key({"user": None})


def test_quotas_survive_reopening(tmp_path: Path) -> None:
    store = ClientQuotaStore.open(tmp_path)
    store.replace(
        {ALICE: {"producer_byte_rate": 1024.0}, DEFAULT_USER: {"request_percentage": 0.5}}
    )
    again = ClientQuotaStore.open(tmp_path)
    assert again.all() == {
        ALICE: {"producer_byte_rate": 1024.0},
        DEFAULT_USER: {"request_percentage": 0.5},
    }
    assert again.problem is None


def test_entities_without_values_are_not_kept(tmp_path: Path) -> None:
    store = ClientQuotaStore.open(tmp_path)
    store.replace({ALICE: {}, DEFAULT_USER: {"consumer_byte_rate": 1.0}})
    assert list(ClientQuotaStore.open(tmp_path).all()) == [DEFAULT_USER]


def test_entity_key_ignores_order() -> None:
    assert entity_key({"client-id": "c", "user": "u"}) == entity_key(
        {"user": "u", "client-id": "c"}
    )


def test_a_corrupt_file_is_ignored_and_reported(tmp_path: Path) -> None:
    ClientQuotaStore.open(tmp_path).replace({ALICE: {"producer_byte_rate": 1.0}})
    file = tmp_path / FILE_NAME
    data = bytearray(file.read_bytes())
    data[-1] ^= 0xFF
    file.write_bytes(bytes(data))
    again = ClientQuotaStore.open(tmp_path)
    assert again.all() == {}
    assert again.problem == "CRC mismatch"


def test_a_leftover_tmp_file_is_removed(tmp_path: Path) -> None:
    (tmp_path / (FILE_NAME + ".tmp")).write_bytes(b"half")
    ClientQuotaStore.open(tmp_path)
    assert not (tmp_path / (FILE_NAME + ".tmp")).exists()


@pytest.mark.parametrize("cut", [1, 5, 9])
def test_truncated_bodies_are_refused(cut: int) -> None:
    data = encode({ALICE: {"producer_byte_rate": 1.0}})
    with pytest.raises(CorruptFileError):
        decode(data[:-cut])
