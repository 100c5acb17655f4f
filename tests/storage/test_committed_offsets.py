"""storage.committed_offsets: replay, torn tails, compaction, group records, deletion."""

from __future__ import annotations

import errno
import os
import struct
import threading
from pathlib import Path

import pytest
from crc32c import crc32c

from storage import committed_offsets
from storage.committed_offsets import (
    FILE_NAME,
    MAGIC,
    MAX_RECORD,
    VERSION,
    CommittedOffset,
    CommittedOffsets,
    GroupRecord,
    MemberRecord,
    RecordTooLarge,
)

STABLE = GroupRecord(
    "consumer",
    7,
    "range",
    "m1",
    (
        MemberRecord("m1", None, "client-1", "/127.0.0.1", 30_000, 6000, b"sub-1", b"asg-1"),
        MemberRecord("m2", "static-2", "client-2", "/10.0.0.2", 45_000, 10_000, b"", b""),
    ),
)


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


def test_group_metadata_record_round_trips_with_every_member_field(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    store.put_group("g", STABLE)
    store.put_group("empty", GroupRecord("consumer", 3))
    store.flush()
    reopened = CommittedOffsets.open(tmp_path)  # no close: as after a crash
    assert reopened.groups() == {"g": STABLE, "empty": GroupRecord("consumer", 3)}
    store.close()
    assert CommittedOffsets.open(tmp_path).groups() == {
        "g": STABLE,
        "empty": GroupRecord("consumer", 3),
    }


def test_compaction_keeps_the_latest_group_record(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    store.put_group("g", STABLE)
    store.commit("g", [("t", 0, _co(1))])
    store.put_group("g", GroupRecord("consumer", 8))  # all members left: Empty
    store.put_group("h", STABLE)
    store.compact()
    reopened = CommittedOffsets.open(tmp_path)
    assert reopened.groups() == {"g": GroupRecord("consumer", 8), "h": STABLE}
    assert reopened.recovery.records == 3
    assert reopened.offsets("g") == {("t", 0): _co(1)}


def test_torn_group_record_is_dropped_and_the_previous_one_kept(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    store.put_group("g", GroupRecord("consumer", 6))
    store.put_group("g", STABLE)
    path = tmp_path / FILE_NAME
    path.write_bytes(path.read_bytes()[:-5])
    assert CommittedOffsets.open(tmp_path).groups() == {"g": GroupRecord("consumer", 6)}


def _v1_record(payload: bytes) -> bytes:
    body = struct.pack(">i", len(payload)) + payload
    return struct.pack(">I", crc32c(body)) + body


def _enc(text: str) -> bytes:
    return struct.pack(">i", len(text)) + text.encode()


def test_version_1_file_still_loads_and_is_rewritten_as_current(tmp_path: Path) -> None:
    # A file from before group metadata records: header version 1, the old group record
    # (type 3: protocol type and generation only) and an offset (type 1).
    old_group = bytes([3]) + _enc("g") + _enc("consumer") + struct.pack(">i", 5)
    offset = bytes([1]) + _enc("g") + _enc("t") + struct.pack(">iqiq", 0, 42, 3, 1234) + _enc("m")
    path = tmp_path / FILE_NAME
    path.write_bytes(MAGIC + struct.pack(">HH", 1, 0) + _v1_record(old_group) + _v1_record(offset))
    store = CommittedOffsets.open(tmp_path)
    assert store.groups() == {"g": GroupRecord("consumer", 5)}
    assert store.offsets("g") == {("t", 0): CommittedOffset(42, 3, "m", 1234)}
    assert struct.unpack_from(">H", path.read_bytes(), len(MAGIC)) == (VERSION,)
    store.put_group("g", STABLE)
    assert CommittedOffsets.open(tmp_path).groups() == {"g": STABLE}


def test_file_from_a_newer_version_is_refused_not_truncated(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    data = MAGIC + struct.pack(">HH", VERSION + 1, 0) + b"future records"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="newer"):
        CommittedOffsets.open(tmp_path)
    assert path.read_bytes() == data


def test_oversized_group_record_is_refused_and_nothing_written(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    huge = MemberRecord("m", None, "c", "h", 1, 1, b"x" * MAX_RECORD, b"")
    size = (tmp_path / FILE_NAME).stat().st_size
    with pytest.raises(RecordTooLarge):
        store.put_group("g", GroupRecord("consumer", 1, "range", "m", (huge,)))
    assert (tmp_path / FILE_NAME).stat().st_size == size and store.groups() == {}


class _TornWrites:
    """Fault injection: the next write to the log stores only half its bytes, then fails
    (a full disk mid-write); optionally the truncation that follows fails too."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, truncate_fails: bool) -> None:
        self.armed = True
        self.truncate_fails = truncate_fails
        real_write, real_pwrite, real_ftruncate = os.write, os.pwrite, os.ftruncate

        def write(fd: int, data: bytes, *position: int) -> int:
            if not self.armed:
                return real_pwrite(fd, data, *position) if position else real_write(fd, data)
            self.armed = False
            half = bytes(memoryview(data)[: len(data) // 2])
            if position:
                real_pwrite(fd, half, *position)
            else:
                real_write(fd, half)
            raise OSError(errno.ENOSPC, "No space left on device")

        def ftruncate(fd: int, length: int) -> None:
            if self.truncate_fails:
                self.truncate_fails = False
                raise OSError(errno.EIO, "Input/output error")
            real_ftruncate(fd, length)

        monkeypatch.setattr(os, "write", lambda fd, data: write(fd, data))
        monkeypatch.setattr(os, "pwrite", lambda fd, data, pos: write(fd, data, pos))
        monkeypatch.setattr(os, "ftruncate", ftruncate)


@pytest.mark.parametrize("truncate_fails", [False, True], ids=["truncated", "truncate-failed"])
def test_commits_after_a_torn_write_are_readable_after_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, truncate_fails: bool
) -> None:
    store = CommittedOffsets.open(tmp_path)
    store.commit("g", [("t", 0, _co(1))])
    with monkeypatch.context() as patch:
        faults = _TornWrites(patch, truncate_fails=truncate_fails)
        with pytest.raises(OSError, match="No space"):
            store.commit("g", [("t", 1, _co(2))])
        assert store.offsets("g") == {("t", 0): _co(1)}  # not acknowledged, not kept
        # The next write lands where the torn frame began, not behind it.
        store.commit("g", [("t", 2, _co(3))])
        store.put_group("g", GroupRecord("consumer", 4))
        assert not faults.armed and not faults.truncate_fails
    store.flush()
    reopened = CommittedOffsets.open(tmp_path)  # no close: as after a crash
    assert reopened.offsets("g") == {("t", 0): _co(1), ("t", 2): _co(3)}
    assert reopened.groups() == {"g": GroupRecord("consumer", 4)}
    assert reopened.recovery.records == 3
    assert reopened.recovery.dropped_bytes == 0


def test_group_record_keeps_the_time_of_its_state(tmp_path: Path) -> None:
    # Kafka's GroupMetadataValue.currentStateTimestamp: offsets of an Empty group expire
    # counted from it, also after a restart.
    store = CommittedOffsets.open(tmp_path)
    empty = GroupRecord("consumer", 8, state_timestamp_ms=1_700_000_000_123)
    store.put_group("g", empty)
    store.flush()
    assert CommittedOffsets.open(tmp_path).groups() == {"g": empty}  # replayed
    store.close()
    assert CommittedOffsets.open(tmp_path).groups() == {"g": empty}  # compacted


def test_offset_expire_timestamp_round_trips_and_is_absent_by_default(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    expiring = CommittedOffset(4, -1, "", 1000, expire_timestamp_ms=61_000)
    store.commit("g", [("t", 0, expiring), ("t", 1, _co(2))])
    store.flush()
    replayed = CommittedOffsets.open(tmp_path).offsets("g")
    assert replayed == {("t", 0): expiring, ("t", 1): _co(2)}
    assert replayed[("t", 1)].expire_timestamp_ms is None
    store.close()
    assert CommittedOffsets.open(tmp_path).offsets("g") == replayed


def test_version_2_file_loads_without_state_times_and_is_rewritten_as_current(
    tmp_path: Path,
) -> None:
    # Version 2: group metadata records (type 5) without the state timestamp.
    group = (
        bytes([5])
        + _enc("g")
        + _enc("consumer")
        + struct.pack(">i", 4)
        + struct.pack(">i", -1)  # protocol name: null
        + struct.pack(">i", -1)  # leader: null
        + struct.pack(">i", 0)  # no members
    )
    offset = bytes([1]) + _enc("g") + _enc("t") + struct.pack(">iqiq", 0, 42, 3, 1234) + _enc("m")
    path = tmp_path / FILE_NAME
    path.write_bytes(MAGIC + struct.pack(">HH", 2, 0) + _v1_record(group) + _v1_record(offset))
    store = CommittedOffsets.open(tmp_path)
    assert store.groups() == {"g": GroupRecord("consumer", 4, state_timestamp_ms=None)}
    assert store.offsets("g") == {("t", 0): CommittedOffset(42, 3, "m", 1234)}
    assert struct.unpack_from(">H", path.read_bytes(), len(MAGIC)) == (VERSION,)
    store.close()
    assert CommittedOffsets.open(tmp_path).groups() == store.groups()


def test_compaction_in_two_halves_keeps_what_was_committed_while_it_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 13: the live maps are copied on the owner's thread, written on a worker thread
    # while commits go on, and the records appended meanwhile follow them in the new file.
    monkeypatch.setattr(committed_offsets, "COMPACT_SLACK", 10)
    store = CommittedOffsets.open(tmp_path)
    for i in range(50):
        store.commit("g", [("t", 0, _co(i))])
    store.commit("gone", [("t", 0, _co(1))])
    pending = store.prepare_compaction()
    assert pending is not None and store.prepare_compaction() is None
    assert not store.maybe_compact()  # not while one is under way
    store.commit("g", [("t", 1, _co(7))])  # meanwhile
    store.delete_group("gone")
    writer = threading.Thread(target=pending.write)
    writer.start()
    writer.join()
    store.commit("g", [("t", 2, _co(8))])  # after the write, before the owner's half
    assert store.finish_compaction(pending)
    assert not list(tmp_path.glob("*.compacting"))
    store.commit("g", [("t", 3, _co(9))])  # appends land in the new file
    reopened = CommittedOffsets.open(tmp_path)  # as after a crash: no close
    assert reopened.offsets("g") == {
        ("t", 0): _co(49),
        ("t", 1): _co(7),
        ("t", 2): _co(8),
        ("t", 3): _co(9),
    }
    assert "gone" not in reopened.groups() and reopened.recovery.records == 6
    store.close()


def test_a_compaction_given_up_leaves_the_log_as_it_was(tmp_path: Path) -> None:
    store = CommittedOffsets.open(tmp_path)
    for i in range(30):
        store.commit("g", [("t", 0, _co(i))])
    monkey = committed_offsets.COMPACT_SLACK
    committed_offsets.COMPACT_SLACK = 0
    try:
        pending = store.prepare_compaction()
    finally:
        committed_offsets.COMPACT_SLACK = monkey
    assert pending is not None
    pending.write()
    store.close()  # the store closed first (shutdown): the half-done compaction is dropped
    assert not store.finish_compaction(pending)
    assert not list(tmp_path.glob("*.compacting"))
    assert CommittedOffsets.open(tmp_path).offsets("g") == {("t", 0): _co(29)}
