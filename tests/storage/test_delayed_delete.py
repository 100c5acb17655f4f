"""Files that leave a log wait file.delete.delay.ms: storage.delayed_delete, segments renamed
``*.deleted`` (retention, DeleteRecords), topics renamed ``*-delete``, leftovers at open."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from protocol.records import parse_header
from storage.delayed_delete import DelayedDeletes
from storage.log_config import LogConfig
from storage.partition_log import PartitionLog
from storage.store import Store
from tests.storage.test_retention import BATCH, produce
from tests.storage.test_segment import make_batch

FIRST = "00000000000000000000"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def names(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if not p.name.endswith(".snapshot"))


def test_removals_run_when_due_in_due_order() -> None:
    clock = Clock()
    deletes = DelayedDeletes(clock)
    woken: list[int] = []
    deletes.on_schedule = lambda: woken.append(len(deletes))
    ran: list[str] = []
    deletes.schedule(2000, "b", lambda: ran.append("b"), lambda: None)
    deletes.schedule(1000, "a", lambda: ran.append("a"), lambda: None)
    assert woken == [1, 2] and deletes.seconds_to_next() == 1.0
    clock.now += 0.999
    assert deletes.run_due() == 0 and ran == []
    clock.now += 0.001
    assert deletes.run_due() == 1 and ran == ["a"]
    clock.now += 5
    assert deletes.seconds_to_next() == 0.0
    assert deletes.run_due() == 1 and ran == ["a", "b"]
    assert deletes.seconds_to_next() is None


def test_zero_delay_removes_at_once_and_a_failure_does_not_stop_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deletes = DelayedDeletes(Clock())
    ran: list[str] = []
    deletes.schedule(0, "now", lambda: ran.append("now"), lambda: None)
    assert ran == ["now"] and len(deletes) == 0

    def broken() -> None:
        raise OSError("disk gone")

    deletes.schedule(10, "broken", broken, lambda: None)
    deletes.schedule(20, "fine", lambda: ran.append("fine"), lambda: None)
    with caplog.at_level(logging.ERROR):
        assert deletes.run_all() == 2
    assert ran == ["now", "fine"]
    assert "deleting broken failed" in caplog.text


def test_abandon_only_closes() -> None:
    deletes = DelayedDeletes(Clock())
    calls: list[str] = []
    deletes.schedule(10, "x", lambda: calls.append("remove"), lambda: calls.append("close"))
    deletes.abandon()
    assert calls == ["close"] and len(deletes) == 0


def _log(path: Path, deletes: DelayedDeletes | None, delay_ms: int = 60_000) -> PartitionLog:
    config = LogConfig(segment_bytes=2 * BATCH, file_delete_delay_ms=delay_ms)
    plog = PartitionLog.open(path, "r", 0, config=config)
    plog.file_deleter = deletes
    return plog


@pytest.mark.parametrize("how", ["retention", "DeleteRecords"])
def test_a_retired_segment_is_renamed_and_stays_readable_until_its_delay(
    tmp_path: Path, how: str
) -> None:
    clock = Clock()
    deletes = DelayedDeletes(clock)
    plog = _log(tmp_path, deletes, delay_ms=5000)
    for ts in (100, 200, 300, 400):
        produce(plog, ts=ts)
    assert [s.base_offset for s in plog.segments] == [0, 4]
    in_flight = plog.read_slice(0, 10_000)  # what a fetch response is about to send
    expected = in_flight.read()
    if how == "retention":
        assert plog.apply_retention(now_ms=10_000, retention_ms=9_700) == 1
    else:
        assert plog.delete_records_before(4) == 4
    assert plog.log_start_offset == 4
    # Kafka's LogSegment.changeFileSuffixes("", ".deleted").
    assert names(tmp_path)[:3] == [
        f"{FIRST}.index.deleted",
        f"{FIRST}.log.deleted",
        f"{FIRST}.timeindex.deleted",
    ]
    assert in_flight.segment.marked_deleted
    assert in_flight.read() == expected
    clock.now += 4.999
    deletes.run_due()
    with open(in_flight.segment.dup_fd(), "rb") as dup:
        assert dup.read() == expected
    clock.now += 0.001
    assert deletes.run_due() == 1
    assert not any(n.startswith(FIRST) for n in names(tmp_path))
    assert in_flight.segment.closed
    assert parse_header(plog.read(4, 100)).base_offset == 4
    plog.close()


def test_without_a_deleter_retired_segments_go_at_once(tmp_path: Path) -> None:
    plog = _log(tmp_path, None)
    for ts in (100, 200, 300):
        produce(plog, ts=ts)
    assert plog.delete_records_before(4) == 4
    assert not any(n.startswith(FIRST) for n in names(tmp_path))
    plog.close()


def test_deleted_files_left_by_a_crash_are_removed_at_open(tmp_path: Path) -> None:
    deletes = DelayedDeletes(Clock())
    plog = _log(tmp_path, deletes)
    for ts in (100, 200, 300):
        produce(plog, ts=ts)
    plog.delete_records_before(4)
    kept = plog.read(4, 10_000)
    deletes.abandon()
    plog.close_unclean()  # a crash before the delay was up
    assert f"{FIRST}.log.deleted" in names(tmp_path)
    reopened = _log(tmp_path, None)
    assert not [n for n in names(tmp_path) if n.endswith(".deleted")]
    assert [s.base_offset for s in reopened.segments] == [4]
    assert (reopened.log_start_offset, reopened.read(4, 10_000)) == (4, kept)
    reopened.close()


def test_a_deleted_topic_waits_the_broker_delay_and_close_finishes_it(tmp_path: Path) -> None:
    store = Store.open(tmp_path, node_id=1, log_config=LogConfig(file_delete_delay_ms=60_000))
    info = store.create_topic("gone", 2)
    batch = make_batch(2)
    info.partitions[0].append(batch, parse_header(batch), 0)
    segment = info.partitions[0].read_slice(0, 10_000)
    stored = segment.read()
    store.delete_topic("gone")
    renamed = sorted(p.name for p in tmp_path.glob("gone-*"))
    assert [n.split(".")[0] for n in renamed] == ["gone-0", "gone-1"]
    assert all(n.endswith("-delete") for n in renamed)
    assert segment.read() == stored == bytes(batch)  # a fetch in flight still reads it
    assert len(store.delayed_deletes) == 1
    store.close()  # nothing can be reading any more: removed now
    assert list(tmp_path.glob("gone-*")) == []
    assert segment.segment.closed
