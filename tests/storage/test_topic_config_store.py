"""Per-topic config overrides on disk (storage.topic_config_store)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from storage.topic_config_store import (
    DIR_NAME,
    CorruptTopicConfigError,
    TopicConfigStore,
    decode,
    encode,
)

ID_A = bytes(range(16))
ID_B = bytes(range(16, 32))


def test_overrides_survive_reopening(tmp_path: Path) -> None:
    store = TopicConfigStore.open(tmp_path)
    store.put(ID_A, "orders", {"retention.ms": "1000", "cleanup.policy": "compact,delete"})
    store.put(ID_B, "payments.é", {"max.message.bytes": "2000"})
    again = TopicConfigStore.open(tmp_path)
    assert again.get(ID_A) == {"retention.ms": "1000", "cleanup.policy": "compact,delete"}
    assert again.get(ID_B) == {"max.message.bytes": "2000"}
    assert {e.name for e in again.entries()} == {"orders", "payments.é"}
    assert again.problems == []


def test_empty_overrides_and_delete_remove_the_file(tmp_path: Path) -> None:
    store = TopicConfigStore.open(tmp_path)
    store.put(ID_A, "t", {"retention.ms": "1"})
    assert len(os.listdir(tmp_path / DIR_NAME)) == 1
    store.put(ID_A, "t", {})
    assert os.listdir(tmp_path / DIR_NAME) == []
    store.put(ID_A, "t", {"retention.ms": "1"})
    store.delete(ID_A)
    assert os.listdir(tmp_path / DIR_NAME) == []
    assert TopicConfigStore.open(tmp_path).get(ID_A) == {}


def test_get_returns_a_copy(tmp_path: Path) -> None:
    store = TopicConfigStore.open(tmp_path)
    store.put(ID_A, "t", {"retention.ms": "1"})
    store.get(ID_A)["retention.ms"] = "2"
    assert store.get(ID_A) == {"retention.ms": "1"}


def test_a_corrupt_file_is_ignored_and_reported(tmp_path: Path) -> None:
    store = TopicConfigStore.open(tmp_path)
    store.put(ID_A, "a", {"retention.ms": "1"})
    store.put(ID_B, "b", {"retention.ms": "2"})
    victim = tmp_path / DIR_NAME / "AAECAwQFBgcICQoLDA0ODw.config"  # ID_A in base64url
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    again = TopicConfigStore.open(tmp_path)
    assert again.get(ID_A) == {}
    assert again.get(ID_B) == {"retention.ms": "2"}
    assert again.problems == [(victim.name, "CRC mismatch")]


def test_leftover_tmp_files_are_removed(tmp_path: Path) -> None:
    (tmp_path / DIR_NAME).mkdir()
    (tmp_path / DIR_NAME / "AAECAwQFBgcICQoLDA0ODw.config.tmp").write_bytes(b"partial")
    TopicConfigStore.open(tmp_path)
    assert os.listdir(tmp_path / DIR_NAME) == []


def test_remove_except_drops_files_of_deleted_topics(tmp_path: Path) -> None:
    store = TopicConfigStore.open(tmp_path)
    store.put(ID_A, "kept", {"retention.ms": "1"})
    store.put(ID_B, "gone", {"retention.ms": "2"})
    assert store.remove_except({ID_A}) == ["gone"]
    assert [e.name for e in TopicConfigStore.open(tmp_path).entries()] == ["kept"]


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda b: b[:3], "shorter than the header"),
        (lambda b: b"\x00\x02" + b[2:], "unsupported version 2"),
        (lambda b: b + b"x", "CRC mismatch"),
    ],
)
def test_decode_refuses_damaged_bytes(mutate: object, reason: str) -> None:
    data = encode("t", {"a": "1"})
    assert decode(data) == ("t", {"a": "1"})
    with pytest.raises(CorruptTopicConfigError, match=reason):
        decode(mutate(data))  # type: ignore[operator]
