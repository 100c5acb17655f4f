"""Grouped fsyncs for the flush policy (log.flush.interval.messages / .ms).

Kafka fsyncs in the append path once flush.messages is reached. An fsync costs 100-700 us
here, so one per request would cap throughput; instead every produce request that needs
durability joins the next flush round, and one worker-thread round fsyncs every partition
that asked, then releases all of their responses together.

With ``linger_ms`` (the group coordinator's, from group.coordinator.append.linger.ms) a round
starts that long after the first write waiting for it, so the writes of those milliseconds
share it, as Kafka 4.0's CoordinatorRuntime holds a batch open for the linger before
writing it: an OffsetCommit is answered after about that long, as by Kafka.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Protocol

log = logging.getLogger(__name__)


class Flushable(Protocol):
    def flush(self) -> None: ...


class Flusher:
    def __init__(self, linger_ms: int = 0) -> None:
        self._linger_s = linger_ms / 1000
        self._lingering: asyncio.TimerHandle | None = None
        self._pending: set[Flushable] = set()
        self._next: asyncio.Future[None] | None = None
        self._running = False
        self._job: asyncio.Future[None] | None = None
        self.rounds = 0

    async def flush(self, logs: Iterable[Flushable]) -> None:
        """Return once every log in ``logs`` has been fsynced by a round started now or later."""
        self._pending.update(logs)
        loop = asyncio.get_running_loop()
        if self._next is None:
            self._next = loop.create_future()
        waiter = self._next
        if not self._running and self._lingering is None:
            if self._linger_s > 0:
                self._lingering = loop.call_later(self._linger_s, self._linger_over, loop)
            else:
                self._start_round(loop)
        await asyncio.shield(waiter)

    def _linger_over(self, loop: asyncio.AbstractEventLoop) -> None:
        self._lingering = None
        if not self._running and self._next is not None:
            self._start_round(loop)

    def _start_round(self, loop: asyncio.AbstractEventLoop) -> None:
        logs, self._pending = list(self._pending), set()
        done, self._next = self._next, None
        assert done is not None
        self._running = True
        self.rounds += 1
        job = self._job = loop.run_in_executor(None, _fsync_all, logs)

        def finished(job: asyncio.Future[None]) -> None:
            self._running = False
            exc = job.exception()
            if exc is not None:
                log.error("flush failed: %s", exc)
                done.set_exception(exc)
            else:
                done.set_result(None)
            if self._pending:
                self._start_round(loop)

        job.add_done_callback(finished)

    async def settle(self) -> None:
        """Return once no flush round is running (one may start more when it ends)."""
        if self._lingering is not None:
            self._lingering.cancel()
            self._linger_over(asyncio.get_running_loop())
        while self._running and self._job is not None:
            await asyncio.gather(self._job, return_exceptions=True)
            # The round's done-callback runs next; let it start the next round, if any.
            await asyncio.sleep(0)


def _fsync_all(logs: list[Flushable]) -> None:
    # One failing log must not leave the others unflushed (a PartitionLog takes itself
    # offline when its fsync fails); the first error then reaches every waiter.
    failed: OSError | None = None
    for plog in logs:
        try:
            plog.flush()
        except OSError as exc:
            failed = failed or exc
    if failed is not None:
        raise failed
