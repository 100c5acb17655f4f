"""The retention pass writes the producer-state snapshots it needs on a worker thread, not on
the event loop (issue 13): checked on the threads that write the files, and on the files."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from broker.core.state import BrokerState
from broker.lifecycle.background import Background
from protocol.errors import ErrorCode
from protocol.records import parse_header
from storage import snapshot as snapshots
from storage.log_config import LogConfig
from storage.snapshot import list_snapshots
from storage.store import Store
from tests.storage.test_segment import make_batch

PARTITIONS = 200
RETENTION_MS = 3_600_000


def _produce(store: Store) -> None:
    """Per partition: two old batches (one segment, expired) and a recent one (kept)."""
    now = int(time.time() * 1000)  # the retention pass reads the wall clock
    old = now - 10 * RETENTION_MS
    for plog in store.partition_logs():
        pid = 1000 + plog.partition
        for i, ts in enumerate((old, old, now)):
            batch = make_batch(2, producer_id=pid, epoch=0, base_seq=2 * i, timestamp=ts)
            plog.append(batch, parse_header(batch), now)


def test_retention_over_many_partitions_writes_its_snapshots_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = len(make_batch(2))
    config = LogConfig(segment_bytes=2 * batch, retention_ms=RETENTION_MS)
    store = Store.open(tmp_path, node_id=1, log_config=config)
    store.create_topic("t", PARTITIONS)
    _produce(store)
    assert all(plog.log_start_offset == 0 for plog in store.partition_logs())

    writers: list[tuple[str, str]] = []
    real, real_at = snapshots.write_atomic, snapshots.write_atomic_at

    def recording(path: Path, data: bytes) -> None:
        writers.append((threading.current_thread().name, os.path.basename(path)))
        real(path, data)

    def recording_at(dir_fd: int, name: str, data: bytes) -> None:
        writers.append((threading.current_thread().name, name))
        real_at(dir_fd, name, data)

    monkeypatch.setattr(snapshots, "write_atomic", recording)
    monkeypatch.setattr(snapshots, "write_atomic_at", recording_at)
    loop_thread = threading.current_thread().name
    state = cast(BrokerState, SimpleNamespace(store=store, config=SimpleNamespace()))

    async def retention() -> None:
        result: Any = Background(state)._retention()
        if result is not None:
            await result

    asyncio.run(retention())

    on_loop = [name for thread, name in writers if thread == loop_thread]
    assert on_loop == []
    assert len(writers) == PARTITIONS
    for plog in store.partition_logs():
        # The log start moved past the expired segment; the snapshot at the log end (6),
        # durable before it moved, holds the producer whose batches went.
        assert plog.log_start_offset == 4
        assert 6 in list_snapshots(plog.path)
        names = {p.name for p in plog.path.iterdir()}
        assert "00000000000000000000.log" not in names  # renamed .deleted, out of the log
    # A crash now: each producer, whose first batches are gone, is restored from the
    # snapshot (a retried batch is a duplicate, a gap is out of order).
    store.close_unclean()
    monkeypatch.undo()
    store = Store.open(tmp_path, node_id=1, log_config=config)
    for plog in store.partition_logs():
        assert (plog.log_start_offset, plog.recovery.snapshot_offset) == (4, 6)
        pid = 1000 + plog.partition
        dup = make_batch(2, producer_id=pid, epoch=0, base_seq=0)
        assert plog.append(dup, parse_header(dup), 0).base_offset == 0
        gap = make_batch(2, producer_id=pid, epoch=0, base_seq=77)
        assert (
            plog.append(gap, parse_header(gap), 0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        )
    store.close()
