"""Durable idempotence: restarts, crashes, torn tails, SIGTERM (issue 3).

Every check reads what the broker stored (segment files) as well as what it answered.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import decode_records
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_topic, init_producer, produce, stored
from tests.support.raw_client import RawClient

OUT_OF_ORDER = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start(data: Path, port: int = 0, **overrides: str) -> BrokerProcess:
    settings = {"listeners": f"PLAINTEXT://127.0.0.1:{port}", **overrides}
    return BrokerProcess(data, settings).start()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def six_batches(port: int, topic: str = "dur") -> tuple[int, list[bytes], list[int]]:
    with RawClient(port) as client:
        create_topic(client, topic)
        pid = init_producer(client)
        batches = [batch(pid, 0, i * 2) for i in range(6)]
        offsets = [produce(client, topic, b).base_offset for b in batches]
    assert offsets == [0, 2, 4, 6, 8, 10]
    return pid, batches, offsets


def assert_last_five_deduplicated(port: int, batches: list[bytes], offsets: list[int]) -> None:
    with RawClient(port) as client:
        for b, offset in zip(batches[1:], offsets[1:], strict=True):
            answer = produce(client, "dur", b)
            assert (answer.error_code, answer.base_offset) == (0, offset)
        assert produce(client, "dur", batches[0]).error_code == OUT_OF_ORDER


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_restart_keeps_all_five_cached_batches(data: Path, how: str) -> None:
    broker = start(data)
    pid, batches, offsets = six_batches(broker.port)
    if how == "sigterm":
        assert broker.stop() == 0
    else:
        broker.kill()
    broker = start(data)
    try:
        assert_last_five_deduplicated(broker.port, batches, offsets)
    finally:
        broker.stop()
    headers = [h for h, _ in stored(data, "dur")]
    assert [(h.base_offset, h.base_sequence) for h in headers] == [(i * 2, i * 2) for i in range(6)]
    assert {h.producer_id for h in headers} == {pid}


def test_sigterm_exits_zero_quickly_and_next_start_is_clean(data: Path) -> None:
    broker = start(data)
    six_batches(broker.port)
    # An idle connection and a long-polling fetch must not hold shutdown up.
    idle = RawClient(broker.port)
    assert broker.stop(timeout=10) == 0  # Docker's wait before it kills
    idle.close()
    broker.wait_for_log("store closed cleanly")
    # Nothing was waited for: the shutdown grace for requests in flight never ran out.
    assert "still in flight" not in broker.log_text()
    again = start(data)
    try:
        again.wait_for_log("clean shutdown marker found: skipping log recovery")
        assert "no clean shutdown marker" not in again.log_text()
    finally:
        again.stop()


def test_sigkill_restart_recovers(data: Path) -> None:
    broker = start(data)
    six_batches(broker.port)
    broker.kill()
    again = start(data)
    try:
        again.wait_for_log("no clean shutdown marker: recovering")
    finally:
        again.stop()


def active_segment(data: Path, topic: str = "dur") -> Path:
    return sorted((data / f"{topic}-0").glob("*.log"))[-1]


@pytest.mark.parametrize("damage", ["cut_mid_batch", "garbage_appended"])
def test_torn_tail_is_truncated_and_produce_continues(data: Path, damage: str) -> None:
    broker = start(data)
    pid, batches, offsets = six_batches(broker.port)
    broker.kill()
    segment = active_segment(data)
    size = segment.stat().st_size
    last_batch_len = len(batches[-1])
    if damage == "cut_mid_batch":
        os.truncate(segment, size - last_batch_len // 2)
        kept = 5
    else:
        with segment.open("ab") as f:
            f.write(b"\x00\x00\x00\x00\x00\x00\x00\x0c\x00\x00\x00\x50garbage-tail" * 3)
        kept = 6
    broker = start(data)
    try:
        broker.wait_for_log(r"(?i)truncat")
        assert [h.base_offset for h, _ in stored(data, "dur")] == offsets[:kept]
        with RawClient(broker.port) as client:
            # Batches before the cut are still recognised as duplicates...
            for b, offset in list(zip(batches, offsets, strict=True))[max(kept - 5, 0) : kept]:
                assert produce(client, "dur", b).base_offset == offset
            # ...and a cut batch is simply the next in sequence: stored once, in place.
            for b, offset in list(zip(batches, offsets, strict=True))[kept:]:
                answer = produce(client, "dur", b)
                assert (answer.error_code, answer.base_offset) == (0, offset)
            nxt = produce(client, "dur", batch(pid, 0, 12))
            assert (nxt.error_code, nxt.base_offset) == (0, 12)
    finally:
        broker.stop()
    headers = [h for h, _ in stored(data, "dur")]
    assert [h.base_sequence for h in headers] == [0, 2, 4, 6, 8, 10, 12]
    assert [h.base_offset for h in headers] == [0, 2, 4, 6, 8, 10, 12]


@pytest.mark.parametrize("damage", ["snapshot_corrupt", "snapshot_missing", "index_missing"])
def test_damaged_snapshot_or_index_recovers_by_replay(data: Path, damage: str) -> None:
    broker = start(data)
    _, batches, offsets = six_batches(broker.port)
    assert broker.stop() == 0
    part = data / "dur-0"
    snapshots = sorted(part.glob("*.snapshot"))
    assert snapshots, "a clean shutdown writes a snapshot"
    if damage == "snapshot_corrupt":
        for snap in snapshots:
            raw = bytearray(snap.read_bytes())
            raw[-1] ^= 0xFF
            snap.write_bytes(bytes(raw))
    elif damage == "snapshot_missing":
        for snap in snapshots:
            snap.unlink()
    else:
        for index in part.glob("*.index"):
            index.unlink()
    broker = start(data)
    try:
        assert_last_five_deduplicated(broker.port, batches, offsets)
    finally:
        broker.stop()
    assert len(stored(data, "dur")) == 6


def test_crash_under_load_keeps_every_acknowledged_record_exactly_once(data: Path) -> None:
    from confluent_kafka import Producer

    port = free_port()
    broker = start(data, port)
    total = 30_000
    acked: dict[int, int] = {}
    failed: list[str] = []

    def delivered(err: object, msg: object) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            acked[int(msg.value().split(b":")[0])] = msg.offset()  # type: ignore[attr-defined]

    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 2,
            "batch.num.messages": 200,
            "message.timeout.ms": 120_000,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 200,
        }
    )
    kills = 0
    kill_at = [total // 4, total // 2, 3 * total // 4]
    try:
        for n in range(total):
            while True:
                try:
                    producer.produce(
                        "crash",
                        f"{n}:".encode() + b"x" * 100,
                        partition=0,
                        on_delivery=delivered,
                    )
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
            if kills < len(kill_at) and n >= kill_at[kills]:
                # SIGKILL mid-stream with batches in flight, then restart on the same dir.
                broker.kill()
                kills += 1
                broker = start(data, port)
        assert producer.flush(120) == 0
    finally:
        broker.stop()
    assert kills == 3 and not failed and len(acked) == total
    values: list[int] = []
    headers = []

    for header, raw in stored(data, "crash"):
        headers.append(header)
        values.extend(int(r.value.split(b":")[0]) for r in decode_records(raw))  # type: ignore[union-attr]
    assert sorted(values) == list(range(total)), "every acknowledged record exactly once"
    assert values == list(range(total)), "in send order"
    offsets = [h.base_offset for h in headers]
    assert offsets[0] == 0
    assert all(h.next_offset == nxt for h, nxt in zip(headers, offsets[1:], strict=False))
    sequences = [(h.producer_id, h.producer_epoch, h.base_sequence) for h in headers]
    assert len(set(sequences)) == len(sequences), "no sequence stored twice"
    assert all(acked[v] == off for off, v in enumerate(values))
