"""Record oracle conversations: real clients talking to a live Apache Kafka through a proxy.

``python -m tests.oracle.record [--version 4.0.0] [--out DIR] [SCENARIO ...]`` starts, for
each scenario of tests/oracle/scenarios.py, a fresh KRaft Kafka (tests/support/kafka_reference)
whose client listener advertises this proxy's port, so every connection a client opens after
bootstrap goes through it too; the broker's calls to itself (transaction markers) use a
listener of their own and the controller listener stays direct, so only clients are recorded.
The proxy frames each connection's size-prefixed requests and responses, pairs them per
connection in order (Kafka answers in request order; acks=0 Produce gets no answer) and writes
``<scenario>.jsonl`` in the ``kafka-oracle/1`` format that replay.py reads (see
tests/oracle/corpus/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import struct
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from protocol.api_keys import ALL_APIS
from protocol.header import decode_request_header
from protocol.messages.produce import PRODUCE
from protocol.primitives import DecodeError, Reader
from tests.support.kafka_reference import VERSIONS, KafkaReference, free_port

FORMAT = "kafka-oracle/1"
CORPUS = Path(__file__).parent / "corpus"
# Larger than any frame Kafka accepts (socket.request.max.bytes, 100 MiB) or sends with its
# default fetch limits; a longer size prefix ends the connection instead of being buffered.
MAX_FRAME = 256 * 1024 * 1024
# What every recording broker has beyond Kafka's defaults, and what a replay target needs.
BASE_BROKER_CONFIG = {
    "node.id": "1",
    "num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}


@dataclass
class Exchange:
    n: int
    conn: int
    seq: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: bytes
    t_request_ms: float
    response: bytes | None = None
    t_response_ms: float | None = None
    no_response: str | None = None
    server_closed_after: bool = False
    response_correlation_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        line: dict[str, Any] = {
            "type": "exchange",
            "n": self.n,
            "conn": self.conn,
            "seq": self.seq,
            "api_key": self.api_key,
            "api_version": self.api_version,
            "correlation_id": self.correlation_id,
            "client_id": self.client_id,
            "request": self.request.hex(),
            "response": None if self.response is None else self.response.hex(),
            "t_request_ms": self.t_request_ms,
            "t_response_ms": self.t_response_ms,
            "no_response": self.no_response,
            "server_closed_after": self.server_closed_after,
        }
        if self.response_correlation_id is not None:
            line["response_correlation_id"] = self.response_correlation_id
        return line


@dataclass
class Connection:
    conn: int
    t_open_ms: float
    t_close_ms: float | None = None
    closed_by: str | None = None
    exchanges: list[Exchange] = field(default_factory=list)
    # Requests Kafka has yet to answer, oldest first.
    pending: deque[Exchange] = field(default_factory=deque)

    def to_json(self) -> dict[str, Any]:
        return {
            "conn": self.conn,
            "t_open_ms": self.t_open_ms,
            "t_close_ms": self.t_close_ms,
            "closed_by": self.closed_by,
        }


def expects_response(api_key: int, api_version: int, frame: bytes, header_end: int) -> bool:
    """False only for a Produce with acks=0, which Kafka never answers."""
    if api_key != PRODUCE.key:
        return True
    # Read up to acks by hand: it comes first in every version (after transactional_id from
    # v3), also in versions newer than those described here.
    reader = Reader(frame[header_end:])
    try:
        if api_version >= 3:
            size = reader.uvarint() - 1 if PRODUCE.is_flexible(api_version) else reader.int16()
            reader.skip(max(size, 0))
        return reader.int16() != 0
    except DecodeError:
        # Unreadable here: Kafka refuses it too, answering or closing; either is recorded.
        return True


def parse_request(frame: bytes) -> tuple[int, int, int, str | None, bool]:
    """api_key, api_version, correlation_id, client_id, whether an answer is due."""
    reader = Reader(frame)
    api_key, api_version = struct.unpack_from(">hh", frame, 0)
    known = ALL_APIS.get(api_key)
    header_version = known.request_header_version(api_version) if known else 1
    header = decode_request_header(reader, header_version)
    answered = expects_response(api_key, api_version, frame, reader.pos)
    return header.api_key, header.api_version, header.correlation_id, header.client_id, answered


async def read_frame(reader: asyncio.StreamReader) -> tuple[bytes | None, bytes]:
    """(frame, b"") for a whole frame; (None, partial bytes) when the stream ends first."""
    try:
        prefix = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        return None, exc.partial
    (size,) = struct.unpack(">i", prefix)
    if size < 0 or size > MAX_FRAME:
        raise ValueError(f"frame size {size} outside 0..{MAX_FRAME}")
    try:
        return await reader.readexactly(size), b""
    except asyncio.IncompleteReadError as exc:
        return None, prefix + exc.partial


class Recorder:
    """The recording proxy: listens on 127.0.0.1, forwards to ``upstream`` (host, port)."""

    def __init__(self, upstream: tuple[str, int] | None = None) -> None:
        self.upstream = upstream
        self.connections: list[Connection] = []
        self.errors: list[str] = []
        self._count = 0
        self._t0 = time.perf_counter()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    def now_ms(self) -> float:
        return round((time.perf_counter() - self._t0) * 1000.0, 3)

    def begin(self) -> None:
        """Times count from here (the scenario's start)."""
        self._t0 = time.perf_counter()

    async def start(self, port: int = 0) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        """Stop listening and end every connection still open (its client has finished)."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def exchanges(self) -> list[Exchange]:
        return sorted((e for c in self.connections for e in c.exchanges), key=lambda e: e.n)

    async def _accept(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn = Connection(len(self.connections) + 1, self.now_ms())
        self.connections.append(conn)
        swriter: asyncio.StreamWriter | None = None
        try:
            assert self.upstream is not None, "the proxy has no upstream yet"
            sreader, swriter = await asyncio.open_connection(*self.upstream)
            up = asyncio.ensure_future(self._requests(conn, creader, swriter))
            down = asyncio.ensure_future(self._responses(conn, sreader, cwriter))
            try:
                done, _ = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in (up, down):
                    pump.cancel()
                await asyncio.gather(up, down, return_exceptions=True)
            for pump in done:
                if not pump.cancelled() and pump.exception() is not None:
                    self.errors.append(f"connection {conn.conn}: {pump.exception()!r}")
        except OSError as exc:
            self.errors.append(f"connection {conn.conn}: upstream: {exc!r}")
            self._closed(conn, "server")
        except asyncio.CancelledError:
            # Stopped with the connection open: the client process is done with it.
            self._closed(conn, "client")
        finally:
            self._tasks.discard(task)
            for writer in (cwriter, swriter):
                if writer is not None:
                    writer.close()
            self._closed(conn, "client")

    def _closed(self, conn: Connection, by: str) -> None:
        if conn.closed_by is not None:
            return
        conn.closed_by, conn.t_close_ms = by, self.now_ms()
        reason = "server_closed" if by == "server" else "client_closed"
        while conn.pending:
            conn.pending.popleft().no_response = reason
        if by == "server":
            for ex in conn.exchanges:
                if ex.no_response == "server_closed":
                    ex.server_closed_after = True
            if conn.exchanges:
                conn.exchanges[-1].server_closed_after = True

    async def _requests(
        self, conn: Connection, creader: asyncio.StreamReader, swriter: asyncio.StreamWriter
    ) -> None:
        while True:
            frame, partial = await read_frame(creader)
            if frame is None:
                if partial:
                    self.errors.append(f"connection {conn.conn}: client sent a partial frame")
                    swriter.write(partial)
                self._closed(conn, "client")
                return
            try:
                api_key, version, corr, client_id, answered = parse_request(frame)
            except (DecodeError, struct.error) as exc:
                self.errors.append(f"connection {conn.conn}: unreadable request header: {exc}")
                api_key, version, corr, client_id, answered = -1, -1, -1, None, True
            self._count += 1
            ex = Exchange(
                self._count,
                conn.conn,
                len(conn.exchanges) + 1,
                api_key,
                version,
                corr,
                client_id,
                frame,
                self.now_ms(),
            )
            conn.exchanges.append(ex)
            # Queued before it is forwarded, so its answer always finds it.
            if answered:
                conn.pending.append(ex)
            else:
                ex.no_response = "acks0"
            swriter.write(struct.pack(">i", len(frame)) + frame)
            await swriter.drain()

    async def _responses(
        self, conn: Connection, sreader: asyncio.StreamReader, cwriter: asyncio.StreamWriter
    ) -> None:
        while True:
            frame, partial = await read_frame(sreader)
            if frame is None:
                # Kafka closed the connection, perhaps in the middle of an answer: the client
                # gets the same bytes and the same end, the request counts as unanswered.
                if partial:
                    cwriter.write(partial)
                    with contextlib.suppress(ConnectionError):
                        await cwriter.drain()
                self._closed(conn, "server")
                return
            if not conn.pending:
                self.errors.append(f"connection {conn.conn}: an answer to no pending request")
            else:
                ex = conn.pending.popleft()
                ex.response, ex.t_response_ms = frame, self.now_ms()
                (corr,) = struct.unpack_from(">i", frame, 0)
                if corr != ex.correlation_id:
                    ex.response_correlation_id = corr
            cwriter.write(struct.pack(">i", len(frame)) + frame)
            await cwriter.drain()


class ProxyThread:
    """A Recorder on an event loop of its own, for scenarios that use blocking clients."""

    def __init__(self) -> None:
        self.recorder = Recorder()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> int:
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self.recorder.start(), self.loop).result(10)

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self.recorder.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


class ProxiedKafka(KafkaReference):
    """KafkaReference whose client listener advertises the proxy, with the broker's own
    connections to itself on a separate, unrecorded listener."""

    def __init__(self, version: str, proxy_port: int, overrides: dict[str, str]) -> None:
        super().__init__(version, overrides=overrides)
        self.proxy_port = proxy_port
        self.internal_port = 0

    def format_args(self) -> list[str]:
        return []

    def properties(self) -> dict[str, str]:
        settings = super().properties()
        taken = {self.port, self.controller_port, self.proxy_port}
        while not self.internal_port or self.internal_port in taken:
            self.internal_port = free_port()
        settings["listeners"] = (
            f"PLAINTEXT://127.0.0.1:{self.port},INTERNAL://127.0.0.1:{self.internal_port},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}"
        )
        settings["advertised.listeners"] = (
            f"PLAINTEXT://127.0.0.1:{self.proxy_port},INTERNAL://127.0.0.1:{self.internal_port}"
        )
        # A static voter set, as the corpus was first recorded with: a dynamic (standalone)
        # quorum makes ApiVersions finalize kraft.version=1, a deployment detail clients skip.
        del settings["controller.quorum.bootstrap.servers"]
        settings["controller.quorum.voters"] = f"1@127.0.0.1:{self.controller_port}"
        settings["inter.broker.listener.name"] = "INTERNAL"
        settings["listener.security.protocol.map"] = (
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"
        )
        return settings


def jsonable(value: Any) -> Any:
    """What a scenario returned, as JSON: bytes as text (hex when not UTF-8), tuples as lists."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return "0x" + value.hex()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def client_versions(version: str) -> dict[str, str]:
    import confluent_kafka

    found = {"librdkafka": confluent_kafka.libversion()[0]}
    for dist in ("kafka-python", "confluent-kafka", "aiokafka"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[dist] = metadata.version(dist)
    found["java-client"] = f"kafka-clients {version} (Kafka's bin/ tools)"
    return found


@dataclass
class Recording:
    lines: list[dict[str, Any]]
    returned: Any
    seconds: float


def record(scenario: Any, version: str = "4.0.0", settle: float = 0.5) -> Recording:
    """Run ``scenario`` (tests/oracle/scenarios.Scenario) against a fresh Kafka through the
    proxy and return the file's lines (header first)."""
    began = time.monotonic()
    proxy = ProxyThread()
    kafka: ProxiedKafka | None = None
    try:
        port = proxy.start()
        kafka = ProxiedKafka(version, port, scenario.broker_config)
        kafka.start()
        proxy.recorder.upstream = ("127.0.0.1", kafka.port)
        proxy.recorder.begin()
        recorded_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        returned = scenario.run(f"127.0.0.1:{port}")
        # Producers and admin clients have no close(): they let go of their connections when
        # collected; all clients close their sockets from their own threads a moment later.
        gc.collect()
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline and any(
            c.closed_by is None for c in proxy.recorder.connections
        ):
            time.sleep(0.02)
        proxy.stop()
    finally:
        proxy.stop()
        if kafka is not None:
            kafka.stop()
    recorder = proxy.recorder
    if recorder.errors:
        raise RuntimeError(f"{scenario.name}: the proxy saw " + "; ".join(recorder.errors))
    exchanges = recorder.exchanges()
    header = {
        "type": "header",
        "format": FORMAT,
        "scenario": scenario.name,
        "description": scenario.description,
        "steps": list(scenario.steps),
        "clients": list(scenario.clients),
        "client_versions": client_versions(version),
        "kafka_version": f"{version} (KRaft, single node, broker+controller, node id 1)",
        "broker_config": {**BASE_BROKER_CONFIG, **scenario.broker_config},
        "replay": scenario.replay,
        "recorded_at": recorded_at,
        "scenario_exit": 0,
        "exchange_count": len(exchanges),
        "connections": [c.to_json() for c in recorder.connections],
        "observed": jsonable(returned),
    }
    lines = [header, *(e.to_json() for e in exchanges)]
    return Recording(lines, returned, time.monotonic() - began)


def write(lines: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".jsonl.tmp")
    partial.write_text("".join(json.dumps(line) + "\n" for line in lines))
    partial.replace(path)


def main(argv: list[str] | None = None, log: Callable[[str], None] = print) -> int:
    from tests.oracle.scenarios import SCENARIOS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", help="names (default: all); commas allowed")
    parser.add_argument("--version", default="4.0.0", choices=VERSIONS)
    parser.add_argument("--out", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    names = [n for arg in args.scenarios for n in arg.split(",") if n] or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios {unknown}; known: {', '.join(SCENARIOS)}")
    failed = 0
    for name in names:
        try:
            rec = record(SCENARIOS[name], args.version)
        except Exception:
            failed += 1
            log(f"{name}: FAILED\n{traceback.format_exc()}")
            continue
        path = args.out / f"{name}.jsonl"
        write(rec.lines, path)
        log(f"{name}: {len(rec.lines) - 1} exchanges -> {path} ({rec.seconds:.1f}s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
