"""Hostile and heavy clients (issue 13), measured from another connection.

While one workload works the broker, a separate process (``probe``) sends ApiVersions
requests on its own connection, one at a time, and records each round trip: that is what
every other client of the broker feels. Memory is the broker's resident set (VmRSS, and
VmHWM, the peak) from /proc. Each workload returns its figures; nothing is asserted here
(tests/e2e/test_connection_limits.py asserts the bounds about memory and correctness).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

from bench.process import BenchBroker
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.fetch import FETCH
from protocol.messages.produce import PRODUCE
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.produce import create_topic, fetch_request, produce_request
from tests.support.raw_client import SOFTWARE, RawClient

MIB = 1024 * 1024


def status_mb(pid: int, field: str) -> float:
    """A /proc/<pid>/status memory field (VmRSS, VmHWM) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak(pid: int) -> None:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


# --- the probe ---------------------------------------------------------------------------


def _probe_main(port: int, stop: multiprocessing.synchronize.Event, out: Any, ready: Any) -> None:
    samples: list[float] = []
    with RawClient(port, client_id="probe") as client:
        client.sock.settimeout(120)
        client.request(API_VERSIONS, 3, SOFTWARE)
        ready.set()
        while not stop.is_set():
            started = time.perf_counter()
            client.request(API_VERSIONS, 3, SOFTWARE)
            samples.append((time.perf_counter() - started) * 1000)
            # One request every 2 ms: the probe measures, it must not be the load.
            time.sleep(0.002)
    out.put(samples)


class Probe:
    """ApiVersions round trips on another connection, from another process."""

    def __init__(self, port: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._stop = ctx.Event()
        self._ready = ctx.Event()
        self._out: Any = ctx.Queue()
        self._proc = ctx.Process(
            target=_probe_main, args=(port, self._stop, self._out, self._ready), daemon=True
        )

    def __enter__(self) -> Probe:
        self._proc.start()
        if not self._ready.wait(60):
            raise RuntimeError("the probe did not connect")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc.is_alive():
            self._stop.set()
            self._proc.join(5)
            self._proc.kill()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        samples: list[float] = self._out.get(timeout=180)
        self._proc.join(30)
        return percentiles(samples)


def percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan"), "n": 0}
    ordered = sorted(samples)

    def pct(q: float) -> float:
        return ordered[min(int(len(ordered) * q), len(ordered) - 1)]

    return {"p50": pct(0.5), "p99": pct(0.99), "max": ordered[-1], "n": len(ordered)}


# --- frames ------------------------------------------------------------------------------


def produce_frame(
    topic: str, payload_bytes: int, *, acks: int = 1, correlation_id: int = 7
) -> bytes:
    """One Produce v9 frame carrying a single batch of about ``payload_bytes``."""
    record = b"h" * min(payload_bytes, 100_000)
    count = max(1, payload_bytes // len(record))
    data = build_batch([(None, record)] * count)
    client = RawClient.__new__(RawClient)
    client.client_id = "hostile"
    return client.encode(PRODUCE, 9, produce_request(topic, data, acks=acks), correlation_id)


class FrameReader:
    """Size-prefixed frames from a socket, keeping what arrived beyond them."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def read(self, count: int) -> list[bytes]:
        frames: list[bytes] = []
        buf = self.buf
        while True:
            while len(frames) < count and len(buf) >= 4:
                (length,) = struct.unpack_from(">i", buf)
                if len(buf) < 4 + length:
                    break
                frames.append(bytes(buf[4 : 4 + length]))
                del buf[: 4 + length]
            if len(frames) >= count:
                return frames
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"closed after {len(frames)} of {count} answers")
            buf += chunk


def read_frames(sock: socket.socket, count: int) -> list[bytes]:
    return FrameReader(sock).read(count)


# --- workloads ---------------------------------------------------------------------------


def idle_connections(count: int = 1000, seconds: float = 3.0) -> dict[str, float]:
    """``count`` connections that connect and say nothing; the probe runs beside them."""
    with BenchBroker() as broker:
        assert broker.proc is not None
        socks = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(count)]
        try:
            with Probe(broker.port) as probe:
                time.sleep(seconds)
                rtt = probe.stop()
            rss = broker.rss_mb()
        finally:
            for s in socks:
                s.close()
    return {"p99_ms": rtt["p99"], "max_ms": rtt["max"], "rss_mb": rss}


def pipelining_large_frames(
    connections: int = 200,
    frames_each: int = 4,
    frame_bytes: int = MIB,
    overrides: dict[str, str] | None = None,
) -> dict[str, float]:
    """``connections`` clients each pipelining ``frames_each`` Produce frames of
    ``frame_bytes`` (to a topic that does not exist: every byte is read and decoded, nothing
    is stored), all at once; the probe runs beside them."""
    frame = produce_frame("no-such-topic", frame_bytes)
    with BenchBroker(overrides=overrides) as broker:
        assert broker.proc is not None
        pid = broker.proc.pid
        reset_peak(pid)
        errors: list[BaseException] = []
        start = threading.Barrier(connections + 1)

        def hostile() -> None:
            try:
                with socket.create_connection(("127.0.0.1", broker.port)) as s:
                    start.wait(60)
                    for _ in range(frames_each):
                        s.sendall(frame)
                    read_frames(s, frames_each)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=hostile) for _ in range(connections)]
        with Probe(broker.port) as probe:
            for t in threads:
                t.start()
            started = time.perf_counter()
            start.wait(60)
            for t in threads:
                t.join(600)
            elapsed = time.perf_counter() - started
            rtt = probe.stop()
        peak = status_mb(pid, "VmHWM")
    return {
        "p50_ms": rtt["p50"],
        "p99_ms": rtt["p99"],
        "max_ms": rtt["max"],
        "samples": rtt["n"],
        "peak_rss_mb": peak,
        "seconds": elapsed,
        "errors": float(len(errors)),
    }


def long_poll_with_pipelined_frames(frames: int = 31, frame_bytes: int = 4_000_000) -> float:
    """A 60 s long-poll Fetch followed by ``frames`` pipelined Produce frames on the same
    connection: how far the broker's RSS rises while the poll is parked (MB)."""
    with BenchBroker() as broker:
        assert broker.proc is not None
        pid = broker.proc.pid
        with RawClient(broker.port) as admin:
            create_topic(admin, "parked")
        frame = produce_frame("parked-other", frame_bytes)
        client = RawClient(broker.port)
        base = broker.rss_mb()
        client.send(FETCH, 12, fetch_request("parked", 0, max_wait_ms=60_000))
        sent = threading.Event()

        def push() -> None:
            for _ in range(frames):
                client.sock.sendall(frame)
            sent.set()

        pusher = threading.Thread(target=push, daemon=True)
        pusher.start()
        peak = base
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not sent.is_set():
            peak = max(peak, status_mb(pid, "VmRSS"))
            time.sleep(0.05)
        peak = max(peak, status_mb(pid, "VmRSS"))
        with RawClient(broker.port) as other:
            other.request(PRODUCE, 9, produce_request("parked", build_batch([(None, b"x")])))
        client.sock.settimeout(120)
        read_frames(client.sock, frames + 1)
        pusher.join(60)
        client.close()
    return peak - base


def create_topics(client: RawClient, name: str, partitions: int) -> None:
    client.sock.settimeout(300)
    topic = Message(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]
    )
    answer = client.request(
        CREATE_TOPICS, 7, Message(topics=[topic], timeout_ms=300_000, validate_only=False)
    )
    assert answer.topics[0].error_code == 0, answer


def produce_rate(port: int, topic: str, requests: int, in_flight: int = 5) -> float:
    """Records/s of one raw producer pipelining ``in_flight`` acks=1 Produce requests."""
    data = build_batch([(None, b"p" * 100)] * 50)
    with RawClient(port) as client:
        frame = client.encode(PRODUCE, 9, produce_request(topic, data, acks=1), 1)
        sock = client.sock
        sock.settimeout(300)
        answers = FrameReader(sock)
        started = time.perf_counter()
        for _ in range(min(in_flight, requests)):
            sock.sendall(frame)
        sent = min(in_flight, requests)
        answered = 0
        while answered < requests:
            answers.read(1)
            answered += 1
            if sent < requests:
                sock.sendall(frame)
                sent += 1
        return requests * 50 / (time.perf_counter() - started)


def parked_fetches(fetches: int = 500, requests: int = 4000) -> dict[str, float]:
    """Produce throughput alone, then with ``fetches`` long-poll fetches parked on other
    partitions (each on its own connection)."""
    with BenchBroker() as broker:
        with RawClient(broker.port) as admin:
            create_topic(admin, "stream")
            create_topics(admin, "parked", fetches)
        produce_rate(broker.port, "stream", 500)  # warm-up
        alone = produce_rate(broker.port, "stream", requests)
        parked = []
        for index in range(fetches):
            client = RawClient(broker.port)
            client.send(FETCH, 12, fetch_request("parked", 0, max_wait_ms=120_000, partition=index))
            parked.append(client)
        try:
            with_parked = produce_rate(broker.port, "stream", requests)
        finally:
            for client in parked:
                client.close()
    return {
        "alone_msg_s": alone,
        "with_parked_msg_s": with_parked,
        "ratio": with_parked / alone,
    }


def run_all(quick: bool = False) -> dict[str, Any]:
    scale = 0.25 if quick else 1.0
    workloads: dict[str, Any] = {
        "idle_1000": lambda: idle_connections(1000, 3.0 * scale + 1),
        "pipelining_200x1mib": lambda: pipelining_large_frames(200, 20, MIB),
        "pipelining_200x4mib_pool64mib": lambda: pipelining_large_frames(
            200,
            5,
            4 * MIB,
            {
                "socket.request.max.bytes": str(8 * MIB),
                "queued.max.request.bytes": str(64 * MIB),
            },
        ),
        "long_poll_31x4mb_rss_growth_mb": long_poll_with_pipelined_frames,
        "parked_500": lambda: parked_fetches(500, int(4000 * scale)),
    }
    figures: dict[str, Any] = {}
    for name, workload in workloads.items():
        try:
            figures[name] = workload()
        except Exception as exc:  # a failed workload is a figure too
            figures[name] = f"failed: {exc!r}"
        print(name, figures[name], flush=True)
    return figures
