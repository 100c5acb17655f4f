"""One client connection: frames in, responses out, strictly in request order.

THE one place where response order is guaranteed. A ``BufferedProtocol``: the transport reads
straight into broker.net.frame_reader's buffers (small frames share one scratch buffer, a
large frame is read into its own and never copied on the loop; each read is bounded so a
pass of the loop over many busy connections stays short). A single worker task handles one
request at a time, as Kafka does by muting a channel until its response is sent; clients
pipeline up to max.in.flight requests and match responses to the head of their FIFO, so
order is the contract (KAFKA_NOTES §3). connections.max.idle.ms closes a connection that
read and wrote nothing for that long (Kafka's Selector idle expiry).

The connection's parts, one module each: how much it reads (broker.net.read_bounds), one
frame to its answer (broker.net.request_dispatch), writing answers and holding Produce
answers to leave together (broker.net.answers), requests started in the read callback
(broker.net.eager_start); the fields they share are declared in broker.net.connection_base.

Pipelined Produce: once a validation worker is ready (broker.produce.validation_pool), the
connection's last Produce had its batches checked by one (so the producer sends batches
worth the trip) and more than one request is waiting, up to PIPELINE_DEPTH Produce requests
of one connection are handled at once, so their batch checks run in worker processes while
the loop appends the earlier ones. What clients can see stays Kafka's: each appends only
after the previous request finished, answers leave in request order (those ready together
in one write), and a request that closes the connection (a malformed one) does so after the
earlier answers, cancelling the ones behind it. Any other request waits until the pipelined
ones are answered. See ``_pipelinable``.

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
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from broker.net.answers import AnswerWriter
from broker.net.connection_base import Close, Response, is_produce, plain
from broker.net.eager_start import LONE_BEFORE_EAGER, EagerStart, Resume
from broker.net.frame_reader import Frame, FrameReader
from broker.net.read_bounds import READ_AHEAD_REQUESTS, ReadBounds
from broker.net.request_dispatch import RequestDispatch
from broker.security.principal import ANONYMOUS, KafkaPrincipal
from broker.security.tls import principal_name
from protocol.codec import Deferred
from protocol.frame import FrameError

if TYPE_CHECKING:
    from broker.config.model import Listener
    from broker.core.dispatch import Dispatcher
    from broker.core.state import BrokerState

log = logging.getLogger(__name__)

# Produce requests of one connection handled at once (clients keep at most 5 in flight).
PIPELINE_DEPTH = 4


class KafkaConnection(
    EagerStart, RequestDispatch, AnswerWriter, ReadBounds, asyncio.BufferedProtocol
):
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
        self.sasl = None
        if sasl is not None:
            # Imported here: a broker without a SASL listener never loads SASL and SCRAM.
            from broker.net.sasl_session import SaslSession

            self.sasl = SaslSession(sasl, state, listener.name)
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
        self._eager: tuple[Frame | None, int, Awaitable[Response]] | None = None
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
        self.state.client_software.pop(self.peer, None)
        self.state.connection_closed(self.peer)
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
            asyncio.Task[list[bytes | bytearray | Deferred] | Close | None]
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
                            if not isinstance(more, list) or not plain(response, more):
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
                    produce = current is not None and is_produce(current)
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
                if isinstance(handling, Resume):
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
        if not is_produce(frame) or not self._produce_offloaded:
            return False
        wrapper = self.dispatcher.wrapper
        return (
            self.sasl is None
            and self.state.validation_pool.has_ready_worker
            and (wrapper is None or not wrapper.engaged)
        )

    async def _pipelined(
        self, frame: Frame, after: asyncio.Future[None] | None, done: asyncio.Future[None]
    ) -> list[bytes | bytearray | Deferred] | Close | None:
        try:
            response = await self._dispatch(frame, after=after, pipelined=True)
        finally:
            self.state.frame_buffers.give_back(frame)
            del frame
        if not isinstance(response, Close):
            done.set_result(None)
        # else _settled cancels ``done``: the requests behind never take effect (Kafka
        # never reads them).
        return response
