"""How the cost grows with the number of client connections: 10 to 5,000.

For each size N a fresh broker (minikafka, and Tansu 0.6 beside it unless --no-tansu) gets N
connections, each asking ApiVersions once as every client's first request does; then:

- accept rate: N over the time from the first connect to the last of the N answers (the
  connections are opened and asked one after another, the answers read after);
- memory: resident memory (the process and its children) with the N connections open and
  idle, and that growth over a broker with one connection, per connection;
- probe p99 among N idle connections: 200 ApiVersions round trips on one more connection;
- N active connections: each of the N sends one Metadata (no topics) per round, the answers
  read after; the median of 5 rounds' time, as requests per second.

Growth exponents are fitted as in bench.growth. ``python -m bench.growth_connections
[--sizes 10,100,1000,5000] [--no-tansu]`` writes bench/results/growth-connections.json and
.md and prints the table. The process needs two file descriptors per connection (this end and
the broker's): the size is capped by ``ulimit -n``.
"""

from __future__ import annotations

import resource
import selectors
import socket
import statistics
import struct
import time

from bench.growth import command
from bench.startup import FramedClient, Spawned, Spawner, spawn_minikafka, tree_rss_mb
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.metadata import METADATA
from protocol.schema import Message

PROBES = 200
ACTIVE_ROUNDS = 5

FIGURES = {
    "accept_per_s": ("connections opened and answered per second", "/s", 0),
    "rss_mb": ("resident memory with the connections idle", "MB", 1),
    "kb_per_connection": ("memory per connection", "KB", 1),
    "probe_p99_ms": ("probe round trip p99 among idle connections", "ms", 2),
    "active_per_s": ("Metadata requests per second, every connection active", "/s", 0),
}

API_VERSIONS_BODY = Message(client_software_name="bench", client_software_version="1")
METADATA_BODY = Message(
    topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False
)


def _read_answer(sock: socket.socket) -> None:
    """One whole answer off ``sock`` (its length, then that many bytes)."""
    head = _read_exactly(sock, 4)
    _read_exactly(sock, struct.unpack(">i", head)[0])


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed by the broker")
        out += chunk
    return bytes(out)


def _ask_all(socks: list[socket.socket], frame: bytes) -> None:
    """Send ``frame`` on every connection, then read every answer as it comes."""
    for sock in socks:
        sock.sendall(frame)
    pending = {sock.fileno(): sock for sock in socks}
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            selector.register(sock, selectors.EVENT_READ)
        while pending:
            for key, _ in selector.select(timeout=60):
                sock = pending.pop(key.fd)
                selector.unregister(sock)
                _read_answer(sock)


def one_size(spawn: Spawner, connections: int) -> dict[str, float]:
    broker: Spawned = spawn()
    probe = FramedClient()
    socks: list[socket.socket] = []
    try:
        probe.connect(broker.port, time.perf_counter() + 60)
        probe.ask(probe.frame(API_VERSIONS, 3, API_VERSIONS_BODY))
        baseline_mb = tree_rss_mb(broker.pid)
        # Every connection sends the same bytes: the answers are not matched to requests.
        hello = probe.frame(API_VERSIONS, 3, API_VERSIONS_BODY)[0]
        started = time.perf_counter()
        for _ in range(connections):
            sock = socket.create_connection(("127.0.0.1", broker.port), timeout=60)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(hello)
            socks.append(sock)
        for sock in socks:
            _read_answer(sock)
        accept_s = time.perf_counter() - started
        rss = tree_rss_mb(broker.pid)
        rounds = []
        for _ in range(PROBES):
            request = probe.frame(API_VERSIONS, 3, API_VERSIONS_BODY)
            t0 = time.perf_counter()
            probe.ask(request)
            rounds.append((time.perf_counter() - t0) * 1000)
        metadata = probe.frame(METADATA, 12, METADATA_BODY)[0]
        active = []
        for _ in range(ACTIVE_ROUNDS):
            t0 = time.perf_counter()
            _ask_all(socks, metadata)
            active.append(time.perf_counter() - t0)
        return {
            "accept_per_s": connections / accept_s,
            "rss_mb": rss,
            "kb_per_connection": max(rss - baseline_mb, 0.0) * 1024 / connections,
            "probe_p99_ms": statistics.quantiles(rounds, n=100)[98],
            "active_per_s": connections / statistics.median(active),
        }
    finally:
        for sock in socks:
            sock.close()
        probe.close()
        broker.close()


def descriptors_for(sizes: list[int]) -> str | None:
    """Two file descriptors a connection (this end and the broker's), and some to spare."""
    need = max(sizes) * 2 + 64
    if need > resource.getrlimit(resource.RLIMIT_NOFILE)[0]:
        return f"{max(sizes)} connections need `ulimit -n` of {need}"
    return None


def main(argv: list[str] | None = None) -> int:
    return command(
        argv,
        "growth_connections",
        one_size,
        FIGURES,
        sizes="10,100,1000,5000",
        dimension="connections",
        how="a fresh broker per size, each connection first asking ApiVersions",
        out="growth-connections",
        minikafka=spawn_minikafka,
        check=descriptors_for,
    )


if __name__ == "__main__":
    raise SystemExit(main())
