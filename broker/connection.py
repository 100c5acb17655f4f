"""One client connection: frames in, responses out, strictly in request order.

THE one place where response order is guaranteed. Frames are parsed from the Protocol's own
buffer (DESIGN.md: ~9x faster than StreamReader.readexactly for large frames). A single
worker task handles one request at a time, as Kafka does by muting a channel until its
response is sent; clients pipeline up to max.in.flight requests and match responses to the
head of their FIFO, so order is the contract (KAFKA_NOTES §3).

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
import logging
import ssl
from typing import TYPE_CHECKING

from broker.dispatch import CloseConnection, Dispatcher, Handler, RequestContext
from broker.security.principal import ANONYMOUS, KafkaPrincipal
from broker.security.sasl_session import SaslSession
from broker.security.tls import principal_name
from broker.zero_copy import SENDFILE_MIN_BYTES, FileRecords
from protocol import codec
from protocol.codec import Deferred
from protocol.errors import ErrorCode
from protocol.frame import FrameError, check_length, read_length
from protocol.header import decode_request_header, encode_response_header, peek_header
from protocol.messages.api_versions import API_VERSIONS
from protocol.primitives import INT32, DecodeError, Reader
from protocol.schema import Message

if TYPE_CHECKING:
    from broker.config import Listener
    from broker.state import BrokerState

log = logging.getLogger(__name__)

# Stop reading from a client that has this many requests queued; resume once drained.
MAX_QUEUED_REQUESTS = 32


class KafkaConnection(asyncio.Protocol):
    def __init__(
        self,
        state: BrokerState,
        dispatcher: Dispatcher,
        listener: Listener,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.state = state
        self.dispatcher = dispatcher
        self.listener = listener
        self._tls = tls
        sasl = listener.security.sasl
        self.sasl = None if sasl is None else SaslSession(sasl, state, listener.name)
        self.principal: KafkaPrincipal = ANONYMOUS
        self.peer = "?"
        self.transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._frames: collections.deque[bytes] = collections.deque()
        self._wakeup = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._reading_paused = False
        self._closing = False
        self._worker: asyncio.Task[None] | None = None
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
        if self._tls is not None:
            # No byte may reach this protocol before start_tls takes the transport over.
            transport.pause_reading()  # type: ignore[attr-defined]
            self._worker = asyncio.get_running_loop().create_task(self._run_tls(self._tls))
        else:
            self._worker = asyncio.get_running_loop().create_task(self._run())

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        buf = self._buf
        buf += data
        max_bytes = self.state.config.socket_request_max_bytes
        if self.sasl is not None and not self.sasl.authenticated:
            # SaslServerAuthenticator reads with sasl.server.max.receive.size until done.
            max_bytes = self.sasl.max_receive_size
        while len(buf) >= 4:
            length = read_length(buf)
            try:
                check_length(length, max_bytes)
            except FrameError as exc:
                # Checked before anything is allocated for the frame, as Kafka does.
                log.warning("closing connection from %s: %s", self.peer, exc)
                self.close()
                return
            end = 4 + length
            if len(buf) < end:
                break
            self._frames.append(bytes(buf[4:end]))
            del buf[:end]
        if self._frames:
            self._wakeup.set()
            if len(self._frames) >= MAX_QUEUED_REQUESTS and not self._reading_paused:
                assert self.transport is not None
                self.transport.pause_reading()
                self._reading_paused = True

    def eof_received(self) -> bool | None:
        if self._buf:
            log.warning(
                "connection from %s ended inside a frame (%d bytes of a partial frame dropped)",
                self.peer,
                len(self._buf),
            )
            self._buf.clear()
        # Keep the transport half-open so requests already received still get answers.
        self._frames.append(b"")  # sentinel: close after the queued requests
        self._wakeup.set()
        # TLS has no half-close (asyncio warns and closes anyway): say so, quietly.
        return self._tls is None

    def connection_lost(self, exc: Exception | None) -> None:
        log.debug("connection from %s closed (%s)", self.peer, exc or "eof")
        self._closing = True
        self.state.connections.discard(self)
        self._can_write.set()
        self._wakeup.set()
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    # --- request loop --------------------------------------------------------------------

    def close(self) -> None:
        """Close after what was already written is flushed."""
        self._closing = True
        if self.transport is not None and not self.transport.is_closing():
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
        while not self._closing:
            if not frames:
                self.idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            self.idle.clear()
            frame = frames.popleft()
            if self._reading_paused and len(frames) < MAX_QUEUED_REQUESTS // 2:
                assert self.transport is not None
                self._reading_paused = False
                self.transport.resume_reading()
            if not frame:
                self.close()
                break
            response = await self._handle(frame)
            if response is None or self._closing:
                continue
            try:
                await self._write(response)
            except (OSError, RuntimeError) as exc:
                log.warning(
                    "closing connection to %s: sending a response failed: %s", self.peer, exc
                )
                self.close()
                break
        self.idle.set()

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

    async def _handle(self, frame: bytes) -> list[bytes | bytearray | Deferred] | None:
        if self.sasl is not None and self.sasl.intercepts(frame):
            return await self.sasl.handle(self, frame)
        return await self.dispatch_frame(frame)

    async def dispatch_frame(self, frame: bytes) -> list[bytes | bytearray | Deferred] | None:
        try:
            api_key, api_version, correlation_id = peek_header(frame)
        except DecodeError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self.close()
            return None
        handler = self.dispatcher.handlers.get(api_key)
        if handler is None:
            log.warning(
                "closing connection from %s: unknown api key %d (correlation_id=%d)",
                self.peer,
                api_key,
                correlation_id,
            )
            self.close()
            return None
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
                    self.close()
                    return None
                return self._unsupported_api_versions(correlation_id, handler)
            log.warning(
                "closing connection from %s: %s v%d is not supported (correlation_id=%d)",
                self.peer,
                api.name,
                api_version,
                correlation_id,
            )
            self.close()
            return None
        reader = Reader(frame)
        try:
            header = decode_request_header(reader, api.request_header_version(api_version))
        except DecodeError as exc:
            log.warning("closing connection from %s: bad request header: %s", self.peer, exc)
            self.close()
            return None
        ctx = RequestContext(header, self.listener, self.peer, self.state, self.principal)
        body = reader.buf[reader.pos :]
        try:
            payload = await self.dispatcher.call(handler, ctx, body)
        except DecodeError as exc:
            log.warning(
                "closing connection: malformed %s v%d request (%s) from %s",
                api.name,
                api_version,
                exc,
                ctx.describe(),
            )
            self.close()
            return None
        except CloseConnection as exc:
            log.warning("closing connection: %s (%s)", exc, ctx.describe())
            self.close()
            return None
        except Exception:
            log.exception("closing connection: %s handler failed (%s)", api.name, ctx.describe())
            self.close()
            return None
        if payload is None:
            return None
        return _frame_response(correlation_id, api.response_header_version(api_version), payload)

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
        return _frame_response(correlation_id, 0, [body])


def api_version_entries(dispatcher: Dispatcher) -> list[Message]:
    return [
        Message(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in dispatcher.advertised()
    ]


def _frame_response(
    correlation_id: int, header_version: int, parts: list[bytes | bytearray | Deferred]
) -> list[bytes | bytearray | Deferred]:
    head = bytearray(4)
    encode_response_header(head, correlation_id, header_version)
    INT32.pack_into(head, 0, len(head) - 4 + sum(len(p) for p in parts))
    first = parts[0]
    if isinstance(first, Deferred):
        return [head, *parts]
    head += first
    return [head, *parts[1:]]
