"""Grouped fsyncs: concurrent requests share flush rounds; nobody returns before its fsync."""

from __future__ import annotations

import asyncio
import threading

import pytest

from broker.runtime.flusher import Flusher


class FakeLog:
    def __init__(self, gate: threading.Event | None = None) -> None:
        self.flushes = 0
        self.gate = gate

    def flush(self) -> None:
        if self.gate is not None:
            assert self.gate.wait(5)
        self.flushes += 1


@pytest.mark.asyncio
async def test_concurrent_requests_share_rounds() -> None:
    gate = threading.Event()
    logs = [FakeLog(gate) for _ in range(20)]
    flusher = Flusher()
    first = asyncio.ensure_future(flusher.flush([logs[0]]))
    await asyncio.sleep(0)  # the first round starts and blocks on the gate
    rest = [asyncio.ensure_future(flusher.flush([log])) for log in logs[1:]]
    await asyncio.sleep(0)
    assert not any(t.done() for t in [first, *rest])
    gate.set()
    await asyncio.wait_for(asyncio.gather(first, *rest), 5)
    # One round for the first caller, one shared round for everyone who came while it ran.
    assert flusher.rounds == 2
    assert all(log.flushes == 1 for log in logs)


@pytest.mark.asyncio
async def test_a_caller_waits_for_a_round_that_includes_its_log() -> None:
    gate = threading.Event()
    early, late = FakeLog(gate), FakeLog()
    flusher = Flusher()
    first = asyncio.ensure_future(flusher.flush([early]))
    await asyncio.sleep(0)
    second = asyncio.ensure_future(flusher.flush([late]))
    await asyncio.sleep(0)
    # The round in progress (blocked on the gate) does not include `late`: its caller
    # must not be released by it.
    assert late.flushes == 0 and not second.done()
    gate.set()
    await asyncio.wait_for(asyncio.gather(first, second), 5)
    assert late.flushes == 1


@pytest.mark.asyncio
async def test_flush_error_reaches_the_waiters() -> None:
    class Broken:
        def flush(self) -> None:
            raise OSError("disk gone")

    flusher = Flusher()
    with pytest.raises(OSError, match="disk gone"):
        await flusher.flush([Broken()])


@pytest.mark.asyncio
async def test_with_a_linger_writes_of_the_linger_share_one_round_started_after_it() -> None:
    # group.coordinator.append.linger.ms: Kafka's CoordinatorRuntime holds a batch open
    # that long after its first write, then writes it once.
    loop = asyncio.get_running_loop()
    logs = [FakeLog() for _ in range(3)]
    flusher = Flusher(linger_ms=500)
    started = loop.time()
    first = asyncio.ensure_future(flusher.flush([logs[0]]))
    await asyncio.sleep(0)  # the first write waits for the linger, not for a round
    assert not first.done() and flusher.rounds == 0
    rest = [asyncio.ensure_future(flusher.flush([log])) for log in logs[1:]]
    await asyncio.wait_for(asyncio.gather(first, *rest), 5)
    assert loop.time() - started >= 0.5  # the linger is a floor: the timer's, never early
    assert flusher.rounds == 1
    assert [log.flushes for log in logs] == [1, 1, 1]


@pytest.mark.asyncio
async def test_settle_ends_a_linger_at_once() -> None:
    log = FakeLog()
    flusher = Flusher(linger_ms=60_000)
    waiter = asyncio.ensure_future(flusher.flush([log]))
    await asyncio.sleep(0)
    await asyncio.wait_for(flusher.settle(), 5)
    await asyncio.wait_for(waiter, 5)
    assert log.flushes == 1
