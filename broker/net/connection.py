"""One client connection: frames in, responses out, strictly in request order.

THE one place where response order is guaranteed. A ``BufferedProtocol``: the transport reads
straight into broker.net.frame_reader's buffers (small frames share one scratch buffer, a large
frame is read into its own and never copied on the loop; each read is bounded so a pass of
the loop over many busy connections stays short). A single
worker task handles one request at a time, as Kafka does by muting a channel until its
response is sent; clients pipeline up to max.in.flight requests and match responses to the
head of their FIFO, so order is the contract (KAFKA_NOTES §3).

Reading is bounded like Kafka's muted channel (SocketServer.Processor mutes after each
complete receive and unmutes once the response is sent): while a request is being handled
the connection reads ahead at most READ_AHEAD_BYTES / READ_AHEAD_REQUESTS more, then pauses
its transport, leaving the rest in the kernel's socket buffers. Only the next request to be
handled is read whole (up to socket.request.max.bytes); small frames that came in the same
read beyond READ_AHEAD_REQUESTS wait unparsed in the reader (broker.net.frame_reader, backlog).
Broker-wide, queued.max.requests and queued.max.request.bytes (broker.limits.request_budget) stop
reading as Kafka's request queue and memory pool do; a connection holds one slot of
queued.max.requests only while its next request waits to start (``_sync_charge``), as a
muted channel has at most one request in Kafka's queue, so no client's read-ahead can stop
the broker reading the others. connections.max.idle.ms closes a connection that read and
wrote nothing for that long (Kafka's Selector idle expiry). Deviation: Kafka reads nothing
ahead; the read-ahead keeps pipelined requests from paying a pause/resume each (two epoll
changes and a pass of the loop): a producer with 5 batches of 64 KiB in flight would pause
after every one with 64 KiB (issue 19: 1 MiB took 11-20% off the broker's CPU per such
request and changed nothing in bench/hostile.py's 200 connections pipelining 1 MiB frames).

Pipelined Produce (issue 19): once a validation worker is ready (broker.produce.validation_pool),
the connection's last Produce had its batches checked by one (so the producer sends batches
worth the trip) and more than one request is waiting, up to PIPELINE_DEPTH Produce requests
of one connection are handled at once, so their batch checks run in worker processes while
the loop appends the earlier ones. What clients can see stays Kafka's: each appends only after
the previous request finished, answers leave in request order (those ready together in one
write), and a request that closes the connection (a malformed one) does so after the
earlier answers, cancelling the ones behind it. Any other request waits until the
pipelined ones are answered. See ``_pipelinable``.

Requests started where they are read (issue 19): a request that arrives alone while the
worker task waits for one, after LONE_BEFORE_EAGER others that did (a client with one
request in flight), is handled in the read callback itself (``_start_eagerly``), so it costs
no wake-up of the worker task and no second pass of the event loop. A client with several
in flight is left to the worker task: its later start lets more requests be read first,
and their answers leave together (held answers, below). What has to wait, or is answered
with file parts, the worker task finishes in turn, so the order above holds.

Held answers (issue 19): a Produce answered while the next request, a Produce too, is
already complete waits for that one's answer, so answers to a producer's pipelined batches
leave several to a send (``_hold``; written before the connection waits, pipelines or
closes).

Errors: a Kafka error code belongs in the response (handlers do that); anything that makes
the request unreadable closes the connection, logged with peer, client id and correlation id.

Security (broker.security): on a TLS listener the worker first runs the handshake
(``loop.start_tls``, so a failed one is logged and closes only this connection); on a SASL
listener every frame goes to the connection's ``SaslSession`` until it has authenticated
(and again for KIP-368 re-authentication), which answers or closes as Kafka's
SaslServerAuthenticator does. ``principal`` is what handlers authorize.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import ssl
import sys
from collections.abc import Awaitable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, cast

from broker.core.dispatch import CloseConnection, Dispatcher, Handler
from broker.core.request_context import RequestContext
from broker.fetch.zero_copy import SENDFILE_MIN_BYTES, FileRecords
from broker.net.frame_reader import Frame, FrameReader
from broker.net.sasl_session import SaslSession
from broker.security.principal import ANONYMOUS, KafkaPrincipal
from broker.security.tls import principal_name
from protocol import codec
from protocol.codec import Deferred
from protocol.errors import ErrorCode
from protocol.frame import FrameError
from protocol.header import decode_request_header, encode_response_header, peek_header
from protocol.messages.api_versions import API_VERSIONS
from protocol.primitives import INT32, DecodeError, Reader
from protocol.schema import Message

if TYPE_CHECKING:
    from broker.config.model import Listener
    from broker.core.state import BrokerState

log = logging.getLogger(__name__)

# What a connection may read beyond the request it is handling (bytes, whole requests).
READ_AHEAD_BYTES = 1024 * 1024
READ_AHEAD_REQUESTS = 8
# Produce requests of one connection handled at once (clients keep at most 5 in flight).
PIPELINE_DEPTH = 4
PRODUCE_KEY = 0
# Produce answers held back at most, to leave with the next one (KafkaConnection._hold).
HELD_ANSWERS = 4
# Requests that came alone, in a row, before the next one is started in the read callback
# (KafkaConnection._start_eagerly).
LONE_BEFORE_EAGER = 2


class _Close:
    """A pipelined request's verdict: close the connection once earlier answers are out."""


CLOSE = _Close()
# What one connection may read in one pass of the event loop (see _bounded_passes).
READ_PASS_BYTES = 64 * 1024


class KafkaConnection(asyncio.BufferedProtocol):
    def __init__(
        self,
        state: BrokerState,
        dispatcher: Dispatcher,
        listener: Listener,
        quota_address: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.state = state
        self.dispatcher = dispatcher
        self.listener = listener
        self._tls = tls
        sasl = listener.security.sasl
        self.sasl = None if sasl is None else SaslSession(sasl, state, listener.name)
        self.principal: KafkaPrincipal = ANONYMOUS
        # The address counted in ConnectionQuotas for this connection (None: not counted).
        self.quota_address = quota_address
        self.peer = "?"
        self.transport: asyncio.Transport | None = None
        self._reader = FrameReader(state.frame_buffers)
        # Complete requests not yet started, with the pool bytes each holds.
        self._frames: collections.deque[tuple[Frame, int]] = collections.deque()
        self._queued_bytes = 0
        # Pool bytes taken for the partial request in _reader; -1 while waiting for them.
        self._partial_reserved = 0
        self._busy = False
        # Whether this connection holds its slot of queued.max.requests (_sync_charge).
        self._charged = False
        self._eof = False
        # Answers held back to leave with the next one (see _hold).
        self._held: list[bytes | bytearray] = []
        # Whether this connection's last Produce went to a validation worker (_pipelinable).
        self._produce_offloaded = False
        self._wakeup = asyncio.Event()
        # Whether the worker task waits for a request (see _start_eagerly), and the request
        # started there that it has to finish: (frame, pool bytes, what is left of it).
        self._parked = False
        self._lone_streak = 0
        self._eager: tuple[Frame | None, int, Awaitable[_Response]] | None = None
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._reading_paused = False
        # Reads in this pass of the event loop (bytes), where the loop may read a connection
        # more than once per pass; reading resumes in the next pass once over the budget.
        self._bounded_passes = False
        self._pass_bytes = 0
        self._next_pass: asyncio.Handle | None = None
        self._closing = False
        self._worker: asyncio.Task[None] | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._last_active = 0.0
        # The connection's event loop (connection_made): asyncio.get_running_loop() makes a
        # getpid() system call each time on Python 3.11.
        self._loop: asyncio.AbstractEventLoop | None = None
        self.idle = asyncio.Event()
        self.idle.set()

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (asyncio's or uvloop's; uvloop's does not subclass
        # asyncio.Transport, so no isinstance check here).
        self.transport = transport  # type: ignore[assignment]
        peername = transport.get_extra_info("peername")
        self.peer = f"{peername[0]}:{peername[1]}" if peername else "?"
        self.state.connections.add(self)
        log.debug("connection from %s on listener %s", self.peer, self.listener.name)
        loop = self._loop = asyncio.get_running_loop()
        # asyncio's selector loop reads a ready socket once per pass (one buffer, at most
        # READ_CHUNK_BYTES of a large frame); uvloop (libuv) reads it up to 32 times while
        # buffers come back full, so one connection could take megabytes of a single pass.
        self._bounded_passes = not isinstance(loop, asyncio.selector_events.BaseSelectorEventLoop)
        if self._tls is not None:
            # No byte may reach this protocol before start_tls takes the transport over.
            transport.pause_reading()  # type: ignore[attr-defined]
            self._worker = loop.create_task(self._run_tls(self._tls))
        else:
            self._worker = loop.create_task(self._run())
        self._last_active = loop.time()
        self._schedule_idle_check(self.state.config.connections_max_idle_ms / 1000)

    def get_buffer(self, sizehint: int) -> memoryview:
        # The incomplete request is read whole once it is the next one handled (else only
        # the read-ahead, in the scratch buffer).
        return self._reader.buffer(whole=not self._busy and not self._frames)

    def buffer_updated(self, nbytes: int) -> None:
        if self._closing:
            return
        assert self._loop is not None
        self._last_active = self._loop.time()
        try:
            frames = self._reader.filled(
                nbytes, self._max_frame_bytes(), READ_AHEAD_REQUESTS - len(self._frames)
            )
        except FrameError as exc:
            # Checked before anything is allocated for the frame, as Kafka does.
            log.warning("closing connection from %s: %s", self.peer, exc)
            self.close()
            return
        if self._bounded_passes:
            self._count_pass(nbytes)
        if frames:
            # A request that came alone (one frame in this read, nothing queued, the worker
            # task waiting) after others that did: a client with one request in flight.
            lone = len(frames) == 1 and self._parked and not self._frames
            self._lone_streak = self._lone_streak + 1 if lone else 0
            for frame in frames:
                self._frames.append((frame, max(self._partial_reserved, 0)))
                self._partial_reserved = 0
                self._queued_bytes += len(frame)
            if (
                self._lone_streak > LONE_BEFORE_EAGER
                and self._eager is None
                and not self._reader.partial_bytes
                and self._can_write.is_set()
            ):
                self._start_eagerly()
            else:
                self._wakeup.set()
        self._update_reading()

    def _max_frame_bytes(self) -> int:
        if self.sasl is not None and not self.sasl.authenticated:
            # SaslServerAuthenticator reads with sasl.server.max.receive.size until done.
            return self.sasl.max_receive_size
        return self.state.config.socket_request_max_bytes

    def _take_backlog(self, limit: int) -> None:
        """Queue up to ``limit`` more of the complete frames the reader already holds."""
        try:
            frames = self._reader.more(self._max_frame_bytes(), limit)
        except FrameError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self.close()
            return
        for frame in frames:
            self._frames.append((frame, 0))
            self._queued_bytes += len(frame)
        if frames:
            self._wakeup.set()

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
        finished by the worker task (``_Resume``); one answered with file parts is written by
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
            response: _Response = stop.value
        except Exception:
            log.exception("closing connection from %s: handling a request failed", self.peer)
            self._served(frame, reserved)
            self.close()
            return
        else:
            # It waits for something: the worker task goes on from there.
            self._eager = (frame, reserved, _Resume(coro, pending))
            self._wakeup.set()
            return
        self._served(frame, reserved)
        del frame
        if isinstance(response, list) and not _plain(response):
            self._eager = (None, 0, _Answered(response))
            self._wakeup.set()
            return
        if isinstance(response, list) and not self._closing:
            transport = self.transport
            assert transport is not None and self._loop is not None
            try:
                for part in response:
                    transport.write(part)  # type: ignore[arg-type]  # _plain: bytes only
            except (OSError, RuntimeError) as exc:
                self._send_failed(exc)
            self._last_active = self._loop.time()
        self._busy = False
        self.idle.set()

    def _served(self, frame: Frame, reserved: int) -> None:
        self.state.frame_buffers.give_back(frame)
        self.state.request_budget.release(reserved)

    def eof_received(self) -> bool | None:
        if self._reader.backlog:
            # Requests already received still get answers (below): queue them all.
            self._take_backlog(sys.maxsize)
        partial = self._reader.partial_bytes
        if partial:
            log.warning(
                "connection from %s ended inside a frame (%d bytes of a partial frame dropped)",
                self.peer,
                partial,
            )
        self._reader.clear()
        # Keep the transport half-open so requests already received still get answers.
        self._eof = True
        self._wakeup.set()
        # TLS has no half-close (asyncio warns and closes anyway): say so, quietly.
        return self._tls is None

    def connection_lost(self, exc: Exception | None) -> None:
        log.debug("connection from %s closed (%s)", self.peer, exc or "eof")
        self._closing = True
        self.state.connections.discard(self)
        # Its buffers go back, and it no longer counts as reading (broker.limits.frame_buffers
        # sizes everybody's reads by the number of connections reading).
        self._reader.clear()
        if self.quota_address is not None:
            self.state.connection_quotas.dec(self.quota_address)
            self.quota_address = None
        self._release_budget()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        self._can_write.set()
        self._wakeup.set()
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    # --- reading bounds ------------------------------------------------------------------

    def _update_reading(self) -> None:
        """Pause or resume the transport as the bounds in the module docstring say."""
        if self._closing or self.transport is None:
            return
        if self._reader.backlog and len(self._frames) < READ_AHEAD_REQUESTS:
            self._take_backlog(READ_AHEAD_REQUESTS - len(self._frames))
            if self._closing:
                return
        self._sync_charge()
        self._maybe_reserve_partial()
        self._set_reading(self._may_read())

    def _sync_charge(self) -> None:
        """Hold one slot of queued.max.requests while the next request is read and waits to
        start, none otherwise. Kafka mutes a channel once a request is complete, so it has at
        most one in the RequestChannel queue, and none while that request is handled or
        parked in purgatory; what the client pipelined behind it waits in the socket,
        uncharged (here: the read-ahead, bounded per connection by READ_AHEAD_*)."""
        want = bool(self._frames) and not self._busy
        if want != self._charged:
            self._charged = want
            if want:
                self.state.request_budget.request_queued()
            else:
                self.state.request_budget.request_started()

    def _count_pass(self, nbytes: int) -> None:
        if self._pass_bytes == 0 and self._next_pass is None:
            self._next_pass = asyncio.get_running_loop().call_soon(self._end_pass)
        self._pass_bytes += nbytes

    def _end_pass(self) -> None:
        self._next_pass = None
        self._pass_bytes = 0
        self._update_reading()

    def _may_read(self) -> bool:
        if self._pass_bytes >= READ_PASS_BYTES:
            return False  # this pass's share is read: the next pass resumes (_end_pass)
        if self._reader.backlog:
            return False  # complete requests wait in the reader (READ_AHEAD_REQUESTS)
        if self._partial_reserved < 0:
            return False  # waiting for queued.max.request.bytes
        budget = self.state.request_budget
        if budget.requests_full:
            budget.wait_for_request_room(id(self), self._update_reading)
            return False
        if not self._busy and not self._frames:
            return True  # the partial request is the next one handled: read it whole
        return (
            len(self._frames) < READ_AHEAD_REQUESTS
            and self._queued_bytes + self._reader.partial_bytes < READ_AHEAD_BYTES
        )

    def _maybe_reserve_partial(self) -> None:
        """Take the next request's size from queued.max.request.bytes before reading it
        whole (Kafka's NetworkReceive allocates from the MemoryPool on its size)."""
        budget = self.state.request_budget
        if not budget.limits_bytes or self._partial_reserved != 0 or self._busy or self._frames:
            return
        length = self._reader.next_length()
        if length is None or length <= READ_AHEAD_BYTES:
            return
        self._partial_reserved = length
        if not budget.try_reserve(length, lambda: self._reserve_granted(length)):
            self._partial_reserved = -1
            log.debug("connection from %s waits for queued.max.request.bytes", self.peer)

    def _reserve_granted(self, length: int) -> None:
        if self._closing:
            # Closed meanwhile: give the bytes straight back.
            self.state.request_budget.release(length)
            return
        self._partial_reserved = length
        self._update_reading()

    def _set_reading(self, on: bool) -> None:
        assert self.transport is not None
        if on and self._reading_paused:
            self._reading_paused = False
            self.transport.resume_reading()
        elif not on and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()

    def _release_budget(self) -> None:
        budget = self.state.request_budget
        budget.forget(id(self))
        if self._charged:
            self._charged = False
            budget.request_started()
        for _, reserved in self._frames:
            budget.release(reserved)
        self._frames.clear()
        self._queued_bytes = 0
        if self._partial_reserved > 0:
            budget.release(self._partial_reserved)
        self._partial_reserved = 0

    def _schedule_idle_check(self, delay_s: float) -> None:
        if self.state.config.connections_max_idle_ms < 0:
            return
        self._idle_timer = asyncio.get_running_loop().call_later(delay_s, self._check_idle)

    def _check_idle(self) -> None:
        if self._closing:
            return
        max_idle = self.state.config.connections_max_idle_ms / 1000
        idle_for = asyncio.get_running_loop().time() - self._last_active
        if idle_for >= max_idle:
            # Kafka's Selector closes a connection idle (no read or write) for
            # connections.max.idle.ms, whatever it is waiting for.
            log.info(
                "closing connection from %s: idle for %.0f ms (connections.max.idle.ms=%d)",
                self.peer,
                idle_for * 1000,
                self.state.config.connections_max_idle_ms,
            )
            self.close()
            return
        self._schedule_idle_check(max_idle - idle_for)

    # --- request loop --------------------------------------------------------------------

    def close(self) -> None:
        """Close after what was already written is flushed."""
        self._closing = True
        if self.transport is not None and not self.transport.is_closing():
            self._flush_held()
            self.transport.close()

    async def _run_tls(self, context: ssl.SSLContext) -> None:
        raw = self.transport
        assert raw is not None
        try:
            self.transport = await asyncio.get_running_loop().start_tls(
                raw, self, context, server_side=True
            )
        except (OSError, ssl.SSLError, EOFError, TimeoutError) as exc:
            # Kafka: "Failed authentication with <peer> (SSL handshake failed)", INFO.
            log.info(
                "closing connection from %s on listener %s: TLS handshake failed: %s",
                self.peer,
                self.listener.name,
                exc or type(exc).__name__,
            )
            raw.abort()
            self.connection_lost(None)
            return
        if self.listener.protocol == "SSL":
            name = principal_name(self.transport.get_extra_info("peercert"))  # type: ignore[union-attr]
            if name is not None:
                self.principal = KafkaPrincipal("User", name)
        log.debug("TLS connection from %s as %s", self.peer, self.principal)
        await self._run()

    async def _run(self) -> None:
        frames = self._frames
        # Produce requests being handled at once, oldest first (see _pipelinable).
        pipeline: collections.deque[
            asyncio.Task[list[bytes | bytearray | Deferred] | _Close | None]
        ] = collections.deque()
        after: asyncio.Future[None] | None = None
        try:
            while not self._closing:
                # A request alone (a client with one in flight: nothing else received) goes
                # the plain way below: the pipeline would cost it a task and a wake-up and
                # overlap nothing.
                while (
                    frames
                    and self._eager is None
                    and len(pipeline) < PIPELINE_DEPTH
                    and (pipeline or len(frames) > 1 or self._reader.partial_bytes)
                    and self._pipelinable(frames[0][0])
                ):
                    self._flush_held()
                    frame, reserved = frames.popleft()
                    self._queued_bytes -= len(frame)
                    self.idle.clear()
                    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                    task = asyncio.get_running_loop().create_task(
                        self._pipelined(frame, after, done)
                    )
                    del frame
                    # Also when the task is cancelled before it ever ran.
                    task.add_done_callback(functools.partial(self._settled, reserved, done))
                    pipeline.append(task)
                    after = done
                if pipeline:
                    self._busy = len(pipeline) >= PIPELINE_DEPTH or bool(frames)
                    self._update_reading()
                    head = pipeline[0]
                    if not head.done():
                        # Woken by an answer ready (done callback) or a new frame.
                        self._wakeup.clear()
                        await self._wakeup.wait()
                        continue
                    pipeline.popleft()
                    if head.cancelled() or head.exception() is not None:
                        # Not expected (_dispatch answers or closes for every failure), but
                        # never leave the connection without its worker.
                        log.warning("closing connection from %s: pipelined request lost", self.peer)
                        self.close()
                        break
                    response = head.result()
                    if isinstance(response, list):
                        # Answers ready together leave in one write: one send, one wakeup
                        # of the client, instead of one each.
                        while pipeline and pipeline[0].done():
                            more = pipeline[0].result()
                            if not isinstance(more, list) or not _plain(response, more):
                                break
                            joined = b"".join(
                                p for p in (*response, *more) if not isinstance(p, Deferred)
                            )
                            response = [joined]
                            pipeline.popleft()
                    if not pipeline:
                        after = None
                        self._busy = False
                    if not await self._answer(response):
                        break
                    continue
                if not frames and self._eager is None:
                    if self._eof:
                        self.close()
                        break
                    self._flush_held()
                    self.idle.set()
                    self._wakeup.clear()
                    self._parked = True
                    try:
                        await self._wakeup.wait()
                    finally:
                        self._parked = False
                    if not self._can_write.is_set():
                        # An answer written by _start_eagerly filled the transport's buffer.
                        await self._can_write.wait()
                    continue
                self.idle.clear()
                current: Frame | None
                if self._eager is not None:
                    # Started in the read callback (_start_eagerly); counted there.
                    current, reserved, handling = self._eager
                    self._eager = None
                else:
                    current, reserved = frames.popleft()
                    self._queued_bytes -= len(current)
                    handling = self._handle(current)
                self._busy = True
                self._update_reading()
                try:
                    produce = current is not None and _is_produce(current)
                    try:
                        response = await handling
                    finally:
                        if current is not None:
                            self._served(current, reserved)
                        del current
                    if produce and self._hold(response):
                        continue
                    if not await self._answer(self._with_held(response)):
                        break
                finally:
                    self._busy = False
                    self._update_reading()
        except Exception:
            # Handlers answer or close for every failure they know of; anything else must
            # still close the connection, never leave it open and unanswered until
            # connections.max.idle.ms with what it read (Kafka's Processor closes a channel
            # whose request failed unexpectedly).
            log.exception("closing connection from %s: handling a request failed", self.peer)
            self.close()
        finally:
            for task in pipeline:
                task.cancel()
            if self._eager is not None:
                # Started by _start_eagerly but never taken up (the connection went first).
                current, reserved, handling = self._eager
                self._eager = None
                if isinstance(handling, _Resume):
                    handling.close()
                if current is not None:
                    self._served(current, reserved)
        self.idle.set()

    def _settled(self, reserved: int, done: asyncio.Future[None], _: object) -> None:
        """A pipelined request is over: its bytes go back to queued.max.request.bytes, the
        request behind it never waits for one that did not finish, and the loop wakes."""
        self.state.request_budget.release(reserved)
        if not done.done():
            done.cancel()
        self._wakeup.set()

    def _hold(self, response: list[bytes | bytearray | Deferred] | _Close | None) -> bool:
        """Keep a Produce answer back when the next request, a Produce too, is already
        here: the answers then leave together in one send (one system call, one wake-up of
        the client) once no such request follows, at most HELD_ANSWERS of them (issue 19:
        about 13% less broker CPU per 64 KiB Produce with 5 in flight). The client sees its
        answers in order, each later by at most the time the broker takes for the next
        Produce; Kafka sends each at once. Not on SASL listeners nor while fault injection
        is engaged (its rules act per request)."""
        frames = self._frames
        if (
            not isinstance(response, list)
            or not frames
            or len(self._held) >= HELD_ANSWERS
            or not _is_produce(frames[0][0])
            or self.sasl is not None
            or not _plain(response)
        ):
            return False
        wrapper = self.dispatcher.wrapper
        if wrapper is not None and wrapper.engaged:
            return False
        self._held.extend(response)  # type: ignore[arg-type]  # _plain: bytes only
        return True

    def _with_held(
        self, response: list[bytes | bytearray | Deferred] | _Close | None
    ) -> list[bytes | bytearray | Deferred] | _Close | None:
        """``response`` with the held answers in front of it (one write when it is plain)."""
        if not self._held:
            return response
        if not isinstance(response, list):
            self._flush_held()
            return response
        held, self._held = self._held, []
        if _plain(response):
            return [b"".join([*held, *response])]  # type: ignore[list-item]
        return [b"".join(held), *response]

    def _flush_held(self) -> None:
        """Write the held answers now (before waiting, closing or pipelining)."""
        if self._held:
            held, self._held = self._held, []
            if self.transport is not None and not self.transport.is_closing():
                self.transport.write(b"".join(held))

    def _pipelinable(self, frame: Frame) -> bool:
        """Whether the next request may start before the ones in front of it are answered.

        Only Produce, and only once a validation worker is ready (issue 19): its batch
        checks then run in other processes while the loop appends the earlier requests.
        Effects and answers keep the connection's order all the same: each pipelined
        Produce appends only after the previous request has finished (RequestContext.after)
        and answers are written in request order; a request that closes the connection
        cancels the ones behind it. Kafka handles one request per connection at a time (a
        muted channel); clients can tell no difference. Not on SASL listeners (frames may
        belong to authentication) nor while fault injection is engaged (its rules count
        requests one at a time). And only while the connection's last Produce was checked by
        a worker process: a producer's batches are alike, and for batches checked on the loop
        the pipeline only adds a task, a future and a wake-up per request (issue 19: about
        20% more broker CPU per 64 x 1 KiB Produce than the plain way, with nothing to overlap).
        """
        if not _is_produce(frame) or not self._produce_offloaded:
            return False
        wrapper = self.dispatcher.wrapper
        return (
            self.sasl is None
            and self.state.validation_pool.has_ready_worker
            and (wrapper is None or not wrapper.engaged)
        )

    async def _pipelined(
        self, frame: Frame, after: asyncio.Future[None] | None, done: asyncio.Future[None]
    ) -> list[bytes | bytearray | Deferred] | _Close | None:
        try:
            response = await self._dispatch(frame, after=after, pipelined=True)
        finally:
            self.state.frame_buffers.give_back(frame)
            del frame
        if not isinstance(response, _Close):
            done.set_result(None)
        # else _settled cancels ``done``: the requests behind never take effect (Kafka
        # never reads them).
        return response

    async def _answer(self, response: list[bytes | bytearray | Deferred] | _Close | None) -> bool:
        """Write a response in its turn; False when the connection is done."""
        if isinstance(response, _Close):
            self.close()
            return False
        if response is None or self._closing:
            return not self._closing
        try:
            await self._write(response)
        except (OSError, RuntimeError) as exc:
            self._send_failed(exc)
            return False
        return True

    def _send_failed(self, exc: Exception) -> None:
        log.warning("closing connection to %s: sending a response failed: %s", self.peer, exc)
        self.close()

    async def _write(self, parts: list[bytes | bytearray | Deferred]) -> None:
        transport = self.transport
        assert transport is not None
        for part in parts:
            if not isinstance(part, Deferred):
                transport.write(part)
            elif (
                isinstance(part, FileRecords)
                and len(part) >= SENDFILE_MIN_BYTES
                and self.state.sendfile
            ):
                try:
                    with part.open() as source:
                        await asyncio.get_running_loop().sendfile(
                            transport, source, part.position, len(part)
                        )
                except NotImplementedError:
                    # uvloop has no loop.sendfile: copy through Python from now on.
                    self.state.sendfile = False
                    transport.write(part.read())
            else:
                transport.write(part.read())
            if not self._can_write.is_set():
                await self._can_write.wait()
        assert self._loop is not None
        self._last_active = self._loop.time()

    def _handle(self, frame: Frame) -> Coroutine[Any, Any, _Response]:
        """The coroutine that handles ``frame``: _dispatch's own, not one wrapped around
        it (each layer of coroutines costs every request its creation and a resume)."""
        if self.sasl is not None and self.sasl.intercepts(frame):
            # Tokens are bytes to the mechanisms; frames here are small (a SASL listener
            # reads at most sasl.server.max.receive.size until authenticated).
            return self.sasl.handle(self, bytes(frame))
        # Not pipelined: _dispatch closes the connection itself, never returns a _Close.
        return cast("Coroutine[Any, Any, _Response]", self._dispatch(frame))

    async def dispatch_frame(self, frame: Frame) -> list[bytes | bytearray | Deferred] | None:
        response = await self._dispatch(frame)
        assert not isinstance(response, _Close)  # only pipelined requests defer a close
        return response

    async def _dispatch(
        self,
        frame: Frame,
        *,
        after: asyncio.Future[None] | None = None,
        pipelined: bool = False,
    ) -> list[bytes | bytearray | Deferred] | _Close | None:
        """Decode, handle, encode one request. ``pipelined``: a close is returned (as a
        _Close, done once the responses before it are written) instead of done now."""
        try:
            api_key, api_version, correlation_id = peek_header(frame)
        except DecodeError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            return self._refuse(pipelined)
        handler = self.dispatcher.handlers.get(api_key)
        if handler is None:
            log.warning(
                "closing connection from %s: unknown api key %d (correlation_id=%d)",
                self.peer,
                api_key,
                correlation_id,
            )
            return self._refuse(pipelined)
        api = handler.api
        if not handler.serves(api_version):
            if api_key == API_VERSIONS.key:
                # KIP-511: answer an unknown ApiVersions version with a v0 body carrying
                # UNSUPPORTED_VERSION and ApiVersions' own range, so the client can retry
                # lower. Kafka still parses the header first, v2 from version 3 on
                # (ApiMessageType.requestHeaderVersion): one without its tag buffer gets the
                # connection closed (recorded: kafka-oracle/raw_api_versions_unsupported #6).
                try:
                    decode_request_header(Reader(frame), 2 if api_version >= 3 else 1)
                except DecodeError as exc:
                    log.warning(
                        "closing connection from %s: bad request header: %s", self.peer, exc
                    )
                    return self._refuse(pipelined)
                return self._unsupported_api_versions(correlation_id, handler)
            log.warning(
                "closing connection from %s: %s v%d is not supported (correlation_id=%d)",
                self.peer,
                api.name,
                api_version,
                correlation_id,
            )
            return self._refuse(pipelined)
        reader = Reader(frame)
        try:
            header = decode_request_header(reader, api.request_header_version(api_version))
        except DecodeError as exc:
            log.warning("closing connection from %s: bad request header: %s", self.peer, exc)
            return self._refuse(pipelined)
        ctx = RequestContext(header, self.listener, self.peer, self.state, self.principal, after)
        body = reader.buf[reader.pos :]
        try:
            payload = await self.dispatcher.call(
                handler,
                ctx,
                body,
                _response_head(correlation_id, api.response_header_version(api_version)),
            )
        except DecodeError as exc:
            log.warning(
                "closing connection: malformed %s v%d request (%s) from %s",
                api.name,
                api_version,
                exc,
                ctx.describe(),
            )
            return self._refuse(pipelined)
        except CloseConnection as exc:
            log.warning("closing connection: %s (%s)", exc, ctx.describe())
            return self._refuse(pipelined)
        except Exception:
            log.exception("closing connection: %s handler failed (%s)", api.name, ctx.describe())
            return self._refuse(pipelined)
        if api_key == PRODUCE_KEY:
            self._produce_offloaded = ctx.offloaded
        if payload is None:
            return None
        return _framed(payload)

    def _refuse(self, pipelined: bool) -> _Close | None:
        if pipelined:
            return CLOSE
        self.close()
        return None

    def _unsupported_api_versions(
        self, correlation_id: int, handler: Handler
    ) -> list[bytes | bytearray | Deferred]:
        # Kafka's ApiVersionsRequest.getErrorResponse lists only ApiVersions itself here.
        body = codec.encode_response(
            API_VERSIONS,
            0,
            Message(
                error_code=ErrorCode.UNSUPPORTED_VERSION,
                api_keys=[
                    Message(
                        api_key=API_VERSIONS.key,
                        min_version=handler.advertised_min,
                        max_version=handler.max_version,
                    )
                ],
            ),
        )
        frame = bytearray(_response_head(correlation_id, 0))
        frame += body
        return _framed([frame])


_Response = list[bytes | bytearray | Deferred] | None


class _Resume:
    """What is left of a coroutine started by hand that yielded ``pending`` (the future it
    waits for), to be awaited by a task: as ``yield from`` would continue it."""

    __slots__ = ("_coro", "_pending")

    def __init__(self, coro: Coroutine[Any, Any, _Response], pending: Any) -> None:
        self._coro = coro
        self._pending = pending

    def __await__(self) -> Generator[Any, Any, _Response]:
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


class _Answered:
    """A request _start_eagerly handled whose answer the worker task writes."""

    __slots__ = ("_response",)

    def __init__(self, response: _Response) -> None:
        self._response = response

    def __await__(self) -> Generator[Any, Any, _Response]:
        return self._response
        yield  # a generator: awaiting it returns at once


def _is_produce(frame: Frame) -> bool:
    return len(frame) >= 2 and frame[0] == 0 and frame[1] == PRODUCE_KEY


def _plain(*responses: list[bytes | bytearray | Deferred]) -> bool:
    # Loops, not all() over a generator: this runs for every answer.
    for parts in responses:
        for part in parts:
            if isinstance(part, Deferred):
                return False
    return True


def _response_head(correlation_id: int, header_version: int) -> bytes:
    """A response frame's first bytes: room for its length, then the response header."""
    head = bytearray(4)
    encode_response_header(head, correlation_id, header_version)
    return bytes(head)


def _framed(parts: list[bytes | bytearray | Deferred]) -> list[bytes | bytearray | Deferred]:
    """``parts`` of an answer whose first part starts with _response_head: its length is
    written there now."""
    INT32.pack_into(parts[0], 0, sum(len(p) for p in parts) - 4)  # type: ignore[arg-type]
    return parts
