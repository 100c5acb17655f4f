"""How long one heavy or hostile client stalls everybody else (issue 13).

A probe in its own process keeps one connection busy with ApiVersions round trips while a
heavy client works on another connection; the figure is the probe's round-trip
distribution (p50/p99/max, ms) during the heavy work, plus what the heavy work itself took.
    python -m bench.stall [--only NAME[,NAME]] [--scale X]
Workloads: a 100 MiB frame of tiny fields (DescribeConfigs with ~100M empty keys), a
million-record zstd batch, CreateTopics with 10,000 partitions (refused as Kafka refuses
it) and with 2,000 (created; 9,999 would need 30,000 open files), DeleteTopics of a topic of
2,000 partitions. The probe measures only
while the heavy request is in flight (from its first byte sent to its answer). Each
checks what the broker stored; nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.hostile import percentiles
from bench.process import BenchBroker
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.delete_topics import DELETE_TOPICS
from protocol.messages.list_offsets import LIST_OFFSETS
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.produce import create_topic, create_topics_request, init_producer, produce
from tests.support.raw_client import ConnectionClosed, RawClient

# ApiVersions v0, correlation id 1, client id "probe".
_PROBE_REQUEST = struct.pack(">ihhih", 0, 18, 0, 1, 5) + b"probe"
_PROBE_FRAME = struct.pack(">i", len(_PROBE_REQUEST) - 4) + _PROBE_REQUEST[4:]


def probe_main(port: int) -> None:
    """The probe process: round trips until a line arrives on stdin, then print them."""
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    samples: list[float] = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        print("ready", flush=True)
        while not stop.is_set():
            started = time.perf_counter()
            sock.sendall(_PROBE_FRAME)
            (length,) = struct.unpack(">i", _recv(sock, 4))
            _recv(sock, length)
            samples.append((time.perf_counter() - started) * 1000)
            time.sleep(0.001)
    print(json.dumps(samples), flush=True)


def _recv(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("probe connection closed")
        data += chunk
    return bytes(data)


class Window:
    """``with window:`` measures the probe's round trips during the block."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.round_trips: dict[str, float] = {}
        self._probe: Probe | None = None

    def __enter__(self) -> Window:
        self._probe = Probe(self.port)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._probe is not None
        self.round_trips = self._probe.finish()


class Probe:
    """Runs probe_main in a child process around a block of heavy work."""

    def __init__(self, port: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.stall", "--probe", str(port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == b"ready"
        self.samples: list[float] = []

    def finish(self) -> dict[str, float]:
        out, _ = self.proc.communicate(b"stop\n", timeout=120)
        self.samples = sorted(json.loads(out.decode().splitlines()[-1]))
        return percentiles(self.samples)


def describe_configs_frame(keys: int) -> bytes:
    """DescribeConfigs v4 (flexible) for one topic with ``keys`` empty configuration keys."""
    body = bytearray()
    body += struct.pack(">hhih", 32, 4, 7, 5) + b"heavy" + b"\x00"  # header v2, no tags
    body += b"\x02"  # one resource
    body += b"\x02" + b"\x02" + b"t"  # resource_type 2 (topic), name "t"
    body += _uvarint(keys + 1) + b"\x01" * keys  # compact array of empty compact strings
    body += b"\x00"  # resource tags
    body += b"\x00\x00\x00"  # include_synonyms, include_documentation, request tags
    return struct.pack(">i", len(body)) + bytes(body)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def huge_frame(port: int, scale: float, window: Window) -> dict[str, Any]:
    """A frame just under socket.request.max.bytes (100 MiB) of one-byte fields."""
    keys = int((100 * 1024 * 1024 - 64) * scale)
    frame = describe_configs_frame(keys)
    with RawClient(port) as client:
        client.sock.settimeout(600)
        started = time.perf_counter()
        with window:
            client.send_raw(frame)
            client.pending.append((7, _describe_configs_api(), 4))
            try:
                outcome = f"error {client.receive()[1].results[0].error_code}"
            except (ConnectionClosed, ConnectionResetError):
                outcome = "connection closed"  # above broker.core.dispatch.MAX_DECODED_ELEMENTS
        took = time.perf_counter() - started
    return {"keys": keys, "answered_s": took, "outcome": outcome}


def _describe_configs_api() -> Any:
    from protocol.messages.describe_configs import DESCRIBE_CONFIGS

    return DESCRIBE_CONFIGS


def big_batch(port: int, scale: float, window: Window) -> dict[str, Any]:
    """One zstd batch of a million empty records, acks=all, idempotent."""
    count = int(1_000_000 * scale)
    name = f"stall-batch-{time.monotonic_ns()}"
    with RawClient(port) as client:
        client.sock.settimeout(600)
        create_topic(client, name)
        pid = init_producer(client)
        data = build_batch(
            [(None, b"")] * count, producer_id=pid, producer_epoch=0, base_sequence=0, codec=4
        )
        started = time.perf_counter()
        with window:
            answer = produce(client, name, data)
        took = time.perf_counter() - started
        # Acknowledged once: the log end says so (the test suite checks the segment files).
        end = client.request(
            LIST_OFFSETS,
            1,
            Message(
                replica_id=-1,
                topics=[Message(name=name, partitions=[Message(partition_index=0, timestamp=-1)])],
            ),
        )
    log_end = end.topics[0].partitions[0].offset
    assert answer.error_code == 0, answer
    assert log_end == count, (log_end, count)
    return {"records": count, "batch_bytes": len(data), "answered_s": took, "log_end": log_end}


def create_topics(port: int, partitions: int, window: Window) -> dict[str, Any]:
    name = f"stall-topics-{partitions}-{time.monotonic_ns()}"
    request = create_topics_request(name, partitions, 600_000)
    with RawClient(port) as client:
        client.sock.settimeout(600)
        started = time.perf_counter()
        with window:
            answer = client.request(CREATE_TOPICS, 7, request)
        took = time.perf_counter() - started
    topic = answer.topics[0]
    return {
        "partitions": partitions,
        "answered_s": took,
        "error": topic.error_code,
        "message": topic.error_message,
    }


def delete_topics(port: int, partitions: int, window: Window) -> dict[str, Any]:
    name = f"stall-delete-{partitions}-{time.monotonic_ns()}"
    with RawClient(port) as client:
        client.sock.settimeout(600)
        created = client.request(CREATE_TOPICS, 7, create_topics_request(name, partitions, 600_000))
        assert created.topics[0].error_code == 0, created
        started = time.perf_counter()
        with window:
            answer = client.request(
                DELETE_TOPICS,
                6,
                Message(topics=[Message(name=name, topic_id=bytes(16))], timeout_ms=60_000),
            )
        took = time.perf_counter() - started
    return {"partitions": partitions, "answered_s": took, "error": answer.responses[0].error_code}


WORKLOADS: dict[str, Callable[[int, float, Window], dict[str, Any]]] = {
    "huge_frame_100mib": huge_frame,
    "zstd_batch_1m_records": big_batch,
    "create_topics_10000": lambda port, scale, w: create_topics(port, int(10_000 * scale), w),
    "create_topics_2000": lambda port, scale, w: create_topics(port, int(2_000 * scale), w),
    "delete_topics_2000": lambda port, scale, w: delete_topics(port, int(2_000 * scale), w),
}


def measure(port: int, name: str, scale: float) -> dict[str, Any]:
    window = Window(port)
    work = WORKLOADS[name](port, scale, window)
    return {"round_trip_ms": window.round_trips, "work": work}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stall")
    parser.add_argument("--probe", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    if args.probe:
        probe_main(args.probe)
        return 0
    results: dict[str, Any] = {}
    for name in args.only.split(","):
        with BenchBroker() as broker:
            results[name] = measure(broker.port, name, args.scale)
            results[name]["rss_mb"] = broker.rss_mb()
        print(name, json.dumps(results[name]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
