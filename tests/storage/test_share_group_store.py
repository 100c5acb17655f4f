"""storage.share_group_store: share groups and their epochs written and read back."""

from __future__ import annotations

from pathlib import Path

from storage.share_group_store import FILE_NAME, SavedShareGroup, ShareGroupStore

TOPIC = bytes(range(16))


def test_groups_survive_reopening_and_deletion(tmp_path: Path) -> None:
    store = ShareGroupStore.open(tmp_path)
    assert store.groups == {} and store.problem is None
    a = SavedShareGroup(3, frozenset({(TOPIC, 0), (TOPIC, 7)}))
    store.replace({"a": a, "b": SavedShareGroup(1)})
    assert ShareGroupStore.open(tmp_path).groups == {"a": a, "b": SavedShareGroup(1)}
    store.replace({"b": SavedShareGroup(2)})
    assert ShareGroupStore.open(tmp_path).groups == {"b": SavedShareGroup(2)}


def test_an_unchanged_set_of_groups_is_not_rewritten(tmp_path: Path) -> None:
    store = ShareGroupStore.open(tmp_path)
    store.replace({"a": SavedShareGroup(1)})
    inode = (tmp_path / FILE_NAME).stat().st_ino
    store.replace({"a": SavedShareGroup(1)})
    # A write replaces the file by a rename (a new inode); none happened.
    assert (tmp_path / FILE_NAME).stat().st_ino == inode
    store.replace({"a": SavedShareGroup(2)})
    assert ShareGroupStore.open(tmp_path).groups == {"a": SavedShareGroup(2)}


def test_a_damaged_file_is_ignored_with_the_reason(tmp_path: Path) -> None:
    ShareGroupStore.open(tmp_path).replace({"a": SavedShareGroup(1)})
    path = tmp_path / FILE_NAME
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    store = ShareGroupStore.open(tmp_path)
    assert store.groups == {} and store.problem
