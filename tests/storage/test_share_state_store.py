"""storage.share_state_store: share-partition states written and read back."""

from __future__ import annotations

from pathlib import Path

from storage.share_state_store import FILE_NAME, ShareState, ShareStateStore, StateBatch

TOPIC = bytes(range(16))


def test_states_survive_reopening(tmp_path: Path) -> None:
    store = ShareStateStore.open(tmp_path)
    assert store.states == {} and store.problem is None
    state = ShareState(5, 12, (StateBatch(5, 7, 0, 2), StateBatch(8, 8, 4, 5)))
    store.put({("g", TOPIC, 0): state})
    store.put({("g", TOPIC, 1): ShareState(0, 0, ())})
    again = ShareStateStore.open(tmp_path)
    assert again.states == {("g", TOPIC, 0): state, ("g", TOPIC, 1): ShareState(0, 0, ())}


def test_a_damaged_file_is_ignored_with_the_reason(tmp_path: Path) -> None:
    ShareStateStore.open(tmp_path).put({("g", TOPIC, 0): ShareState(1, 2, ())})
    path = tmp_path / FILE_NAME
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    store = ShareStateStore.open(tmp_path)
    assert store.states == {} and store.problem


def test_removed_states_are_gone_after_reopening(tmp_path: Path) -> None:
    store = ShareStateStore.open(tmp_path)
    store.put({("g", TOPIC, 0): ShareState(1, 2, ()), ("h", TOPIC, 0): ShareState(3, 3, ())})
    store.remove({("g", TOPIC, 0), ("g", TOPIC, 9)})
    assert ShareStateStore.open(tmp_path).states == {("h", TOPIC, 0): ShareState(3, 3, ())}
