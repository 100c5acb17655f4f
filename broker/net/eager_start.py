"""Requests started where they are read.

A request that arrives alone while the connection's worker task waits for one, after
LONE_BEFORE_EAGER others that did (a client with one request in flight), is handled in the
read callback itself (``_start_eagerly``), so it costs no wake-up of the worker task and no
second pass of the event loop. A client with several in flight is left to the worker task:
its later start lets more requests be read first, and their answers leave together (held
answers, broker.net.answers). What has to wait, or is answered with file parts, the worker
task finishes in turn (``Resume``, ``Answered``), so answers keep request order.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Generator
from typing import Any

from broker.net.connection_base import ConnectionBase, Response, plain

log = logging.getLogger("broker.net.connection")

# Requests that came alone, in a row, before the next one is started in the read callback.
LONE_BEFORE_EAGER = 2


class EagerStart(ConnectionBase):
    def _start_eagerly(self) -> None:
        """Handle the request just read at once, here in the read callback, while the worker
        task waits for one (issue 19). A request alone (a client with one in flight) then
        costs no wake-up of the worker task and no second pass of the event loop: one
        connection sending 1-record Produce requests one at a time takes about 15 us (7%)
        less loop CPU a request, and confluent-kafka's produce p50 drops by about as much.
        Only after LONE_BEFORE_EAGER requests came alone in a row: started at once, each of
        a pipelining producer's requests would leave with an answer of its own (the 64 x 1 KiB
        ingest workload took about 15% more broker CPU a request that way).

        One that must wait (a long-polling Fetch, a flush, a worker process's check) is
        finished by the worker task (``Resume``); one answered with file parts is written by
        it (sendfile). Handlers run here without a current task: none may use
        asyncio.timeout() or current_task() before its first await.
        """
        frame, reserved = self._frames.popleft()
        self._queued_bytes -= len(frame)
        self.idle.clear()
        self._busy = True
        coro = self._handle(frame)
        try:
            pending = coro.send(None)
        except StopIteration as stop:
            response: Response = stop.value
        except Exception:
            log.exception("closing connection from %s: handling a request failed", self.peer)
            self._served(frame, reserved)
            self.close()
            return
        else:
            # It waits for something: the worker task goes on from there.
            self._eager = (frame, reserved, Resume(coro, pending))
            self._wakeup.set()
            return
        self._served(frame, reserved)
        del frame
        if isinstance(response, list) and not plain(response):
            self._eager = (None, 0, Answered(response))
            self._wakeup.set()
            return
        if isinstance(response, list) and not self._closing:
            transport = self.transport
            assert transport is not None and self._loop is not None
            try:
                for part in response:
                    transport.write(part)  # type: ignore[arg-type]  # plain: bytes only
            except (OSError, RuntimeError) as exc:
                self._send_failed(exc)
            self._last_active = self._loop.time()
        self._busy = False
        self.idle.set()


class Resume:
    """What is left of a coroutine started by hand that yielded ``pending`` (the future it
    waits for), to be awaited by a task: as ``yield from`` would continue it."""

    __slots__ = ("_coro", "_pending")

    def __init__(self, coro: Coroutine[Any, Any, Response], pending: Any) -> None:
        self._coro = coro
        self._pending = pending

    def __await__(self) -> Generator[Any, Any, Response]:
        coro, pending = self._coro, self._pending
        while True:
            try:
                yield pending
            except BaseException as exc:  # a cancellation goes on to the coroutine
                try:
                    pending = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]
                continue
            # Its future is done: ``yield from`` resumes it from here on.
            return (yield from coro.__await__())

    def close(self) -> None:
        self._coro.close()


class Answered:
    """A request _start_eagerly handled whose answer the worker task writes."""

    __slots__ = ("_response",)

    def __init__(self, response: Response) -> None:
        self._response = response

    def __await__(self) -> Generator[Any, Any, Response]:
        return self._response
        yield  # a generator: awaiting it returns at once
