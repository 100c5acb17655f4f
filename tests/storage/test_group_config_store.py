"""Group configs on disk (storage.group_config_store)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.group_config_store import FILE_NAME, GroupConfigStore, decode, encode
from storage.sealed_file import CorruptFileError


def test_group_configs_survive_reopening(tmp_path: Path) -> None:
    store = GroupConfigStore.open(tmp_path)
    store.put("g1", {"consumer.session.timeout.ms": "50000"})
    store.put("g/2", {"consumer.heartbeat.interval.ms": "6000"})
    again = GroupConfigStore.open(tmp_path)
    assert again.all() == {
        "g1": {"consumer.session.timeout.ms": "50000"},
        "g/2": {"consumer.heartbeat.interval.ms": "6000"},
    }
    assert again.problem is None


def test_a_group_left_without_configs_is_dropped(tmp_path: Path) -> None:
    store = GroupConfigStore.open(tmp_path)
    store.put("g1", {"consumer.session.timeout.ms": "50000"})
    store.put("g1", {})
    assert GroupConfigStore.open(tmp_path).all() == {}
    assert store.get("g1") == {}


def test_a_corrupt_file_is_ignored_and_reported(tmp_path: Path) -> None:
    GroupConfigStore.open(tmp_path).put("g", {"consumer.session.timeout.ms": "50000"})
    file = tmp_path / FILE_NAME
    data = bytearray(file.read_bytes())
    data[-1] ^= 0xFF
    file.write_bytes(bytes(data))
    again = GroupConfigStore.open(tmp_path)
    assert again.all() == {}
    assert again.problem == "CRC mismatch"


def test_a_leftover_tmp_file_is_removed(tmp_path: Path) -> None:
    (tmp_path / (FILE_NAME + ".tmp")).write_bytes(b"half")
    GroupConfigStore.open(tmp_path)
    assert not (tmp_path / (FILE_NAME + ".tmp")).exists()


@pytest.mark.parametrize("cut", [1, 5, 9, 20])
def test_truncated_bodies_are_refused(cut: int) -> None:
    data = encode({"group": {"consumer.session.timeout.ms": "50000"}})
    with pytest.raises(CorruptFileError):
        decode(data[:-cut])
