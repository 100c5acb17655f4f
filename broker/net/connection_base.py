"""The fields one client connection's parts share, declared once so each part (reading
bounds, dispatch, answers, requests started in the read callback) type-checks on its own;
KafkaConnection (broker.net.connection) sets them all in ``__init__``."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any

from protocol.codec import Deferred
from protocol.header import encode_response_header
from protocol.primitives import INT32

if TYPE_CHECKING:
    from broker.config.model import Listener
    from broker.core.dispatch import Dispatcher
    from broker.core.state import BrokerState
    from broker.net.frame_reader import Frame, FrameReader
    from broker.net.sasl_session import SaslSession
    from broker.security.principal import KafkaPrincipal


class Close:
    """A pipelined request's verdict: close the connection once earlier answers are out."""


CLOSE = Close()
# What handling one request gives: the answer's parts (records the connection sends itself
# stay Deferred), or None (no answer).
Response = list[bytes | bytearray | Deferred] | None
PRODUCE_KEY = 0


class ConnectionBase:
    if TYPE_CHECKING:
        state: BrokerState
        dispatcher: Dispatcher
        listener: Listener
        sasl: SaslSession | None
        principal: KafkaPrincipal
        peer: str
        transport: asyncio.Transport | None
        idle: asyncio.Event
        _reader: FrameReader
        # Complete requests not yet started, with the pool bytes each holds.
        _frames: collections.deque[tuple[Frame, int]]
        _queued_bytes: int
        _partial_reserved: int
        _busy: bool
        _charged: bool
        _closing: bool
        _held: list[bytes | bytearray]
        _produce_offloaded: bool
        _wakeup: asyncio.Event
        _eager: tuple[Frame | None, int, Awaitable[Response]] | None
        _can_write: asyncio.Event
        _reading_paused: bool
        _pass_bytes: int
        _next_pass: asyncio.Handle | None
        _loop: asyncio.AbstractEventLoop | None
        _last_active: float

        def close(self) -> None: ...

        def _served(self, frame: Frame, reserved: int) -> None: ...

        def _update_reading(self) -> None: ...

        def _send_failed(self, exc: Exception) -> None: ...

        def _flush_held(self) -> None: ...

        def _handle(self, frame: Frame) -> Coroutine[Any, Any, Response]: ...


def is_produce(frame: Frame) -> bool:
    return len(frame) >= 2 and frame[0] == 0 and frame[1] == PRODUCE_KEY


def plain(*responses: list[bytes | bytearray | Deferred]) -> bool:
    # Loops, not all() over a generator: this runs for every answer.
    for parts in responses:
        for part in parts:
            if isinstance(part, Deferred):
                return False
    return True


def response_head(correlation_id: int, header_version: int) -> bytes:
    """A response frame's first bytes: room for its length, then the response header."""
    head = bytearray(4)
    encode_response_header(head, correlation_id, header_version)
    return bytes(head)


def framed(parts: list[bytes | bytearray | Deferred]) -> list[bytes | bytearray | Deferred]:
    """``parts`` of an answer whose first part starts with response_head: its length is
    written there now."""
    INT32.pack_into(parts[0], 0, sum(len(p) for p in parts) - 4)  # type: ignore[arg-type]
    return parts
