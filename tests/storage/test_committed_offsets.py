"""storage.committed_offsets: replay, torn tails, compaction, group deletion."""

from __future__ import annotations

from pathlib import Path

from storage.committed_offsets import FILE_NAME, CommittedOffset, CommittedOffsets, GroupRecord


def _co(offset: int, metadata: str | None = "m") -> CommittedOffset:
    return CommittedOffset(offset, 3, metadata, 1234)


def test_commits_survive_reopen_with_metadata_and_group_record(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    store.commit("g", [("t", 0, _co(5)), ("t", 1, _co(7, None))])
    store.commit("g", [("t", 0, _co(9, "later"))])
    store.put_group("g", GroupRecord("consumer", 4))
    store.flush()
    reopened = CommittedOffsets.open(tmp_path)  # no close: as after a crash
    assert reopened.offsets("g") == {("t", 0): _co(9, "later"), ("t", 1): _co(7, None)}
    assert reopened.groups() == {"g": GroupRecord("consumer", 4)}
    assert reopened.recovery.records == 4


def test_torn_tail_is_truncated_and_earlier_records_kept(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    store.commit("g", [("t", 0, _co(1))])
    store.commit("g", [("t", 0, _co(2))])
    path = tmp_path / FILE_NAME
    data = path.read_bytes()
    path.write_bytes(data[:-3])  # the last record cut mid-write
    reopened = CommittedOffsets.open(tmp_path)
    assert reopened.offsets("g") == {("t", 0): _co(1)}
    assert reopened.recovery.dropped_bytes > 0
    reopened.commit("g", [("t", 0, _co(3))])
    assert CommittedOffsets.open(tmp_path).offsets("g") == {("t", 0): _co(3)}


def test_corrupt_record_stops_replay(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    store.commit("g", [("t", 0, _co(1))])
    store.commit("g", [("t", 1, _co(2))])
    path = tmp_path / FILE_NAME
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert CommittedOffsets.open(tmp_path).offsets("g") == {("t", 0): _co(1)}


def test_compaction_keeps_only_live_entries(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    for i in range(200):
        store.commit("g", [("t", 0, _co(i))])
    store.commit("gone", [("t", 0, _co(1))])
    store.delete_group("gone")
    size_before = (tmp_path / FILE_NAME).stat().st_size
    store.compact()
    assert (tmp_path / FILE_NAME).stat().st_size < size_before / 50
    store.commit("g", [("t", 1, _co(1))])  # appends after compaction land in the new file
    reopened = CommittedOffsets.open(tmp_path)
    assert reopened.offsets("g") == {("t", 0): _co(199), ("t", 1): _co(1)}
    assert "gone" not in reopened.groups()


def test_delete_offsets_and_group_are_durable(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    store.commit("g", [("t", 0, _co(1)), ("t", 1, _co(2))])
    store.delete_offsets("g", [("t", 0), ("t", 9)])
    store.commit("h", [("t", 0, _co(1))])
    store.put_group("h", GroupRecord(None, 0))
    store.delete_group("h")
    store.close()
    reopened = CommittedOffsets.open(tmp_path)
    assert reopened.offsets("g") == {("t", 1): _co(2)}
    assert reopened.groups() == {"g": None}


def test_leftover_compaction_tmp_is_ignored(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    store.commit("g", [("t", 0, _co(1))])
    (tmp_path / FILE_NAME).with_suffix(".tmp").write_bytes(b"garbage")
    assert CommittedOffsets.open(tmp_path).offsets("g") == {("t", 0): _co(1)}
