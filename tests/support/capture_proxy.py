"""A loopback TCP proxy that records the request frames clients send to a broker.

Put it between real clients and a broker to see exactly what goes on the wire (golden
frames, debugging). The broker must advertise the proxy's address (advertised.listeners),
otherwise clients bootstrap through the proxy and then connect to the broker directly.

The proxy runs its own asyncio loop in a daemon thread, so synchronous clients
(kafka-python, confluent-kafka) can use it as well as asyncio ones. It is bounded: it
records at most ``max_frames`` frames, refuses frames above ``max_frame_bytes`` (closing
that connection, as a broker would) and serves at most ``max_connections`` clients at once.
Responses are relayed unparsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

_LENGTH = struct.Struct(">i")
_LOOPBACK = "127.0.0.1"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CapturedFrame:
    connection: int  # the proxy's number for the client connection, from 1
    frame: bytes  # the request without its 4-byte length prefix

    @property
    def api_key(self) -> int:
        return int.from_bytes(self.frame[0:2], "big", signed=True)

    @property
    def api_version(self) -> int:
        return int.from_bytes(self.frame[2:4], "big", signed=True)


class CaptureProxy:
    def __init__(
        self,
        *,
        max_frames: int = 10_000,
        max_frame_bytes: int = 16 * 1024 * 1024,
        max_connections: int = 64,
    ) -> None:
        self.max_frames = max_frames
        self.max_frame_bytes = max_frame_bytes
        self.max_connections = max_connections
        self.port = 0
        self.upstream_port = 0
        self.dropped = 0  # frames relayed but not recorded (over max_frames)
        self._frames: list[CapturedFrame] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._connections = 0

    @property
    def bootstrap(self) -> str:
        return f"{_LOOPBACK}:{self.port}"

    def start(self) -> CaptureProxy:
        """Listen on an ephemeral loopback port; set the upstream before clients connect."""
        self._thread.start()
        self._server = self._call(
            asyncio.start_server(self._accept, _LOOPBACK, 0, limit=self.max_frame_bytes + 4)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def set_upstream(self, port: int) -> None:
        self.upstream_port = port

    def take(self) -> list[CapturedFrame]:
        """Frames recorded since the previous take(), in arrival order."""
        with self._lock:
            frames, self._frames = self._frames, []
        return frames

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> CaptureProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- inside the proxy's loop -------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._connections += 1
        number = self._connections
        up_writer: asyncio.StreamWriter | None = None
        try:
            if len(self._tasks) > self.max_connections or not self.upstream_port:
                return
            up_reader, up_writer = await asyncio.open_connection(_LOOPBACK, self.upstream_port)
            requests = asyncio.create_task(self._relay_requests(number, reader, up_writer))
            responses = asyncio.create_task(self._relay_bytes(up_reader, writer))
            try:
                # Either side closing ends the conversation, as it would for a direct one.
                await asyncio.wait({requests, responses}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for side in (requests, responses):
                    side.cancel()
                await asyncio.gather(requests, responses, return_exceptions=True)
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            for w in (writer, up_writer):
                if w is not None:
                    w.close()
                    with contextlib.suppress(OSError, asyncio.CancelledError):
                        await w.wait_closed()

    async def _relay_requests(
        self, number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, OSError):
            while True:
                prefix = await reader.readexactly(4)
                (length,) = _LENGTH.unpack(prefix)
                if length <= 0 or length > self.max_frame_bytes:
                    return
                frame = await reader.readexactly(length)
                self._record(CapturedFrame(number, frame))
                writer.write(prefix + frame)
                await writer.drain()

    @staticmethod
    async def _relay_bytes(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()

    def _record(self, captured: CapturedFrame) -> None:
        with self._lock:
            if len(self._frames) < self.max_frames:
                self._frames.append(captured)
            else:
                self.dropped += 1
