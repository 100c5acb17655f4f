"""Registry ApiKey -> handler and served version range; ApiVersions is derived from it.

A handler module declares ``API`` (its description), the versions it serves and a
``handle(ctx, request)`` function. Registering it here is what makes the broker advertise
it: the broker never advertises an API it cannot serve. A module may be registered by name
and versions only (``register_lazy``): it is imported on its first request, so a broker
starts without importing the handlers (and their dependencies) that no client asks for.
Those every client soon asks for (``warm_after_first``) are imported after the first
request, one per turn of the event loop, so their first request does not wait for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from broker.core import request_log
from broker.core.request_context import RequestContext
from broker.runtime import offload
from protocol import codec
from protocol.codec import Deferred, Encoded
from protocol.primitives import DecodeError, Reader
from protocol.schema import Api, Message

log = logging.getLogger(__name__)

# Array elements one request may hold, all arrays together (beyond: DecodeError, and the
# connection is closed with a log line). Deviation: Kafka has no such limit, but no client
# comes near it (the largest requests list thousands of partitions), while a 100 MiB frame
# of one-byte elements would take this codec minutes and gigabytes; Kafka itself parses it
# into some 100 million Java objects, past its default heap.
MAX_DECODED_ELEMENTS = 1_000_000
# Bodies from this size on are decoded on a worker thread (broker.runtime.offload): decoding costs
# up to a few microseconds per byte, so a body this large may hold the loop for tens of ms.
# Unless it holds few elements: the bulk of a Produce request is its records, decoded as
# one slice, and a thread hop costs more than that decode (issue 19). So such a body is
# first decoded on the loop within INLINE_DECODE_ELEMENTS array elements and tagged fields
# (a step of Python each), and only one holding more goes to a worker.
OFFLOAD_DECODE_BYTES = 16 * 1024
INLINE_DECODE_ELEMENTS = 256
# Background imports of handler modules (warm_after_first) wait this long while requests are
# being handled, doubling up to the second.
WARM_RETRY_S = 0.005
WARM_RETRY_MAX_S = 1.0


class CloseConnection(Exception):
    """Raised by a handler when Kafka would close the connection (after earlier responses)."""


# A handler may answer with its body encoded already (a cached answer: ApiVersions).
HandlerResult = Message | Encoded | None
HandlerFn = Callable[[RequestContext, Message], HandlerResult | Awaitable[HandlerResult]]


@dataclass(frozen=True, slots=True)
class Handler:
    api: Api
    min_version: int
    max_version: int
    # Versions advertised but answered with an error (Produce v0-2 in Kafka 4.0).
    advertised_min: int
    fn: HandlerFn

    def serves(self, version: int) -> bool:
        return self.advertised_min <= version <= self.max_version


@dataclass(frozen=True, slots=True)
class PendingHandler:
    """A handler module registered by name and versions, not imported yet."""

    key: int
    module: str
    max_version: int
    advertised_min: int


Interceptor = Callable[[RequestContext, Message], Awaitable[None] | None]


class HandlerWrapper(Protocol):
    """Runs handlers its own way while ``engaged``: the test toolkit's fault injection
    (broker.toolkit.faults) wraps the dispatcher from outside through this."""

    @property
    def engaged(self) -> bool: ...

    async def around(self, handler: Handler, ctx: RequestContext, request: Message) -> Any: ...


class Dispatcher:
    def __init__(self) -> None:
        self.handlers: dict[int, Handler] = {}
        # A seam for tests: called before each handler.
        self.interceptors: list[Interceptor] = []
        # Fault injection (broker.toolkit.faults) wraps the handler while any fault is set.
        self.wrapper: HandlerWrapper | None = None
        # Handlers behind a feature flag (share.version: share groups), served and advertised
        # only once ``enable`` names the feature; until then their keys are unknown APIs, as
        # on a Kafka 4.0 broker.
        self._gated: dict[str, list[Handler | PendingHandler]] = {}
        # Registered by name, imported on the first request for their key (``handler``).
        self._pending: dict[int, PendingHandler] = {}
        # Keys whose modules are imported in the background once the first request came.
        self._warm: list[int] = []
        self._warming = False
        self._warm_delay = WARM_RETRY_S / 2
        # Requests being decoded, handled or encoded (``call``) right now.
        self.in_flight = 0
        # advertised()'s answer, the same list until what is advertised changes (every
        # connection's ApiVersions reads it; see broker.handlers.api_versions).
        self._advertised: list[tuple[int, int, int]] | None = None

    def register(
        self,
        api: Api,
        fn: HandlerFn,
        min_version: int,
        max_version: int,
        advertised_min: int | None = None,
        feature: str | None = None,
    ) -> None:
        assert api.versions.low <= min_version <= max_version <= api.versions.high, api.name
        handler = Handler(
            api,
            min_version,
            max_version,
            min_version if advertised_min is None else advertised_min,
            fn,
        )
        if feature is None:
            self._advertise(api.key, handler.advertised_min, max_version)
            self.handlers[api.key] = handler
        else:
            self._gated.setdefault(feature, []).append(handler)

    def register_lazy(
        self,
        key: int,
        module: str,
        min_version: int,
        max_version: int,
        advertised_min: int | None = None,
        feature: str | None = None,
    ) -> None:
        """Register the handler module ``module`` (which declares these versions) without
        importing it: it is imported on the first request for ``key``."""
        pending = PendingHandler(
            key, module, max_version, min_version if advertised_min is None else advertised_min
        )
        if feature is None:
            self._advertise(key, pending.advertised_min, max_version)
            self._pending[key] = pending
        else:
            self._gated.setdefault(feature, []).append(pending)

    def enable(self, feature: str) -> None:
        """Serve (and advertise) the handlers registered under ``feature``."""
        self._advertised = None
        for handler in self._gated.pop(feature, []):
            if isinstance(handler, PendingHandler):
                self._pending[handler.key] = handler
            else:
                self.handlers[handler.api.key] = handler

    def handler(self, key: int) -> Handler | None:
        """The handler serving ``key``, its module imported now if it was registered lazily;
        None for a key not served."""
        handler = self.handlers.get(key)
        if handler is not None:
            return handler
        pending = self._pending.pop(key, None)
        if pending is None:
            return None
        self._load(pending)
        if not self._warming:
            self._warming = True
            # No loop (a test or tool calling this directly): no warming.
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().call_soon(self._warm_next)
        return self.handlers[key]

    def warm_after_first(self, keys: list[int]) -> None:
        """Import the modules of ``keys`` in the background once a first request came: one
        per loop turn and only while no request is being handled (a client's first requests
        come in a burst; those find their modules imported on demand), so a request waits
        for one import at most."""
        self._warm = list(keys)

    def _warm_next(self) -> None:
        if self.in_flight and self._warm:
            # Busy: try again later, less often the longer it stays busy (a consumer's
            # long-polling Fetch is always in flight); what is asked for meanwhile is
            # imported on demand.
            self._warm_delay = min(2 * self._warm_delay, WARM_RETRY_MAX_S)
            asyncio.get_running_loop().call_later(self._warm_delay, self._warm_next)
            return
        self._warm_delay = WARM_RETRY_S / 2
        while self._warm:
            pending = self._pending.pop(self._warm.pop(0), None)
            if pending is not None:
                self._load(pending)
                if self._warm:
                    asyncio.get_running_loop().call_soon(self._warm_next)
                return

    def _load(self, pending: PendingHandler) -> None:
        module = importlib.import_module(pending.module)
        self.register(
            module.API,
            module.handle,
            module.MIN_VERSION,
            module.MAX_VERSION,
            getattr(module, "ADVERTISED_MIN_VERSION", None),
        )

    def _advertise(self, key: int, lo: int, hi: int) -> None:
        """``key`` is to be served with versions ``lo``-``hi``: advertised() is made anew
        unless it says so already (a lazily registered module loaded on its first request
        declares the versions it was registered with)."""
        advertised = self._advertised
        if advertised is not None and (key, lo, hi) not in advertised:
            self._advertised = None

    def advertised(self) -> list[tuple[int, int, int]]:
        """(api_key, min, max) in ascending key order, as Kafka lists them: the same list
        object until what is served changes (callers must not change it)."""
        if self._advertised is not None:
            return self._advertised
        served = {k: (h.advertised_min, h.max_version) for k, h in self.handlers.items()}
        for k, p in self._pending.items():
            served.setdefault(k, (p.advertised_min, p.max_version))
        self._advertised = [(k, lo, hi) for k, (lo, hi) in sorted(served.items())]
        return self._advertised

    async def call(
        self, handler: Handler, ctx: RequestContext, body: memoryview, head: bytes = b""
    ) -> list[bytes | bytearray | Deferred] | None:
        """Decode, run the handler, encode. Returns the response body as parts (records the
        connection sends itself stay Deferred), the first starting with ``head``, or None
        (no response)."""
        # Counted so that background imports (warming) wait while requests are handled.
        self.in_flight += 1
        try:
            api = handler.api
            flexible = api.is_flexible(ctx.version)
            decoded = None
            if len(body) >= OFFLOAD_DECODE_BYTES:
                decoded = decode_on_loop(api, ctx.version, flexible, body)
            if decoded is not None:
                request, reader = decoded
            else:
                reader = Reader(body, max_elements=MAX_DECODED_ELEMENTS)
                if len(body) >= OFFLOAD_DECODE_BYTES:
                    request = await offload.run(_decode, api, ctx.version, flexible, reader)
                else:
                    request = _decode(api, ctx.version, flexible, reader)
            if reader.remaining:
                # Kafka's AbstractRequest.parseRequest reads the fields it knows and never checks
                # that the body was consumed: librdkafka's all-topics Metadata v13 carries 3 bytes
                # more, and Kafka answers it. So do we, with a debug line only.
                log.debug(
                    "ignoring %d bytes after the %s v%d request body (%s)",
                    reader.remaining,
                    api.name,
                    ctx.version,
                    ctx.describe(),
                )
            for interceptor in self.interceptors:
                res = interceptor(ctx, request)
                if inspect.isawaitable(res):
                    await res
            wrapper = self.wrapper
            result: Any
            if wrapper is not None and wrapper.engaged:
                result = await wrapper.around(handler, ctx, request)
            else:
                result = handler.fn(ctx, request)
                if inspect.isawaitable(result):
                    result = await result
            if request_log.log.isEnabledFor(logging.DEBUG):
                request_log.log.debug("%s", request_log.describe(api, ctx, request, result))
            if result is None:
                return None
            return codec.encode_parts(api.response, ctx.version, flexible, result, head)
        finally:
            self.in_flight -= 1


def _decode(api: Api, version: int, flexible: bool, reader: Reader) -> Message:
    return codec.decode(api.request, version, flexible, reader, exact=False)


def decode_on_loop(
    api: Api, version: int, flexible: bool, body: memoryview
) -> tuple[Message, Reader] | None:
    """The request and its reader if it decodes within INLINE_DECODE_ELEMENTS, else None.

    Any DecodeError also gives None: the worker decodes it again with the full budget, so
    a malformed body is refused exactly as before, with the same message.
    """
    reader = Reader(body, max_elements=INLINE_DECODE_ELEMENTS)
    try:
        return _decode(api, version, flexible, reader), reader
    except DecodeError:
        return None
