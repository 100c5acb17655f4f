"""One request frame to its answer: the header peeked and checked, the handler found and
called through the dispatcher, the answer framed. Anything that makes the request
unreadable closes the connection, logged with peer, client id and correlation id; a
Kafka error code belongs in the response (handlers do that).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from time import perf_counter
from typing import Any, cast

from broker.core.dispatch import CloseConnection, Handler
from broker.core.request_context import RequestContext
from broker.net.connection_base import (
    CLOSE,
    PRODUCE_KEY,
    Close,
    ConnectionBase,
    Response,
    framed,
    response_head,
)
from broker.net.frame_reader import Frame
from protocol import codec
from protocol.codec import Deferred
from protocol.errors import ErrorCode
from protocol.header import decode_request_header, peek_header
from protocol.messages.api_versions import API_VERSIONS
from protocol.primitives import DecodeError, Reader
from protocol.schema import Message

log = logging.getLogger("broker.net.connection")


class RequestDispatch(ConnectionBase):
    def _handle(self, frame: Frame) -> Coroutine[Any, Any, Response]:
        """The coroutine that handles ``frame``: _dispatch's own, not one wrapped around
        it (each layer of coroutines costs every request its creation and a resume)."""
        if self.sasl is not None and self.sasl.intercepts(frame):
            # Tokens are bytes to the mechanisms; frames here are small (a SASL listener
            # reads at most sasl.server.max.receive.size until authenticated).
            return self.sasl.handle(self, bytes(frame))
        # Not pipelined: _dispatch closes the connection itself, never returns a Close.
        return cast("Coroutine[Any, Any, Response]", self._dispatch(frame))

    async def dispatch_frame(self, frame: Frame) -> list[bytes | bytearray | Deferred] | None:
        response = await self._dispatch(frame)
        assert not isinstance(response, Close)  # only pipelined requests defer a close
        return response

    async def _dispatch(
        self,
        frame: Frame,
        *,
        after: asyncio.Future[None] | None = None,
        pipelined: bool = False,
    ) -> list[bytes | bytearray | Deferred] | Close | None:
        """Decode, handle, encode one request. ``pipelined``: a close is returned (as a
        Close, done once the responses before it are written) instead of done now."""
        try:
            api_key, api_version, correlation_id = peek_header(frame)
        except DecodeError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            return self._refuse(pipelined)
        handler = self.dispatcher.handlers.get(api_key)
        if handler is None:  # not asked for yet (its module is imported now), or unknown
            handler = self.dispatcher.handler(api_key)
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
        started = perf_counter()
        try:
            payload = await self.dispatcher.call(
                handler,
                ctx,
                body,
                response_head(correlation_id, api.response_header_version(api_version)),
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
        self.state.metrics.answered(api_key, api_version, perf_counter() - started)
        if api_key == PRODUCE_KEY:
            self._produce_offloaded = ctx.offloaded
        if payload is None:
            return None
        return framed(payload)

    def _refuse(self, pipelined: bool) -> Close | None:
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
        frame = bytearray(response_head(correlation_id, 0))
        frame += body
        return framed([frame])
