"""Broker-bound ingest ceiling (issue 19): the client is nearly free, the broker does the work.

Idempotent Produce requests (acks=all, v9) of 64 x 1 KiB uncompressed records each are built
once, before the clock starts, with consecutive sequences; then one raw socket sends them
with a fixed number in flight and only reads the response frames while timed. Every
response is decoded and checked (error code 0, offsets consecutive) after the clock stops,
so a broker that refused records cannot post a figure.

Works against any Kafka-compatible broker that supports CreateTopics v5, InitProducerId v4
and Produce v9 (minikafka, Apache Kafka, Tansu).
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

from protocol import codec
from protocol.header import decode_response_header
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.primitives import Reader
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.produce import create_topics_request, init_producer, produce_request
from tests.support.raw_client import RawClient

PRODUCE_VERSION = 9
RECORDS_PER_BATCH = 64
RECORD_SIZE = 1024


def create_topic(port: int, name: str, partitions: int = 1) -> None:
    """CreateTopics, then Metadata until the partition has a leader (brokers differ in
    whether the topic is usable when CreateTopics answers)."""
    with RawClient(port, client_id="bench") as client:
        request = create_topics_request(name, partitions, 30000)
        answer = client.request(CREATE_TOPICS, 5, request)
        code = answer.topics[0].error_code
        assert code in (0, 36), f"CreateTopics answered {code}"  # 36: TOPIC_ALREADY_EXISTS
        deadline = time.monotonic() + 30
        while True:
            meta = client.request(METADATA, 12, Message(topics=[Message(name=name)]))
            parts = meta.topics[0].partitions
            if meta.topics[0].error_code == 0 and parts and parts[0].leader_id >= 0:
                return
            assert time.monotonic() < deadline, f"topic {name} never got a leader: {meta}"
            time.sleep(0.01)


def build_requests(
    port: int,
    name: str,
    count: int,
    first_correlation_id: int = 1,
    base_timestamp: int | None = None,
) -> tuple[list[bytes], int]:
    """``count`` framed Produce requests continuing one new idempotent producer's sequence
    (records stamped now, or ``base_timestamp``)."""
    with RawClient(port, client_id="bench") as client:
        producer_id = init_producer(client)
    payload = b"x" * RECORD_SIZE
    records = [(None, payload)] * RECORDS_PER_BATCH
    encoder = RawClient.__new__(RawClient)
    encoder.client_id = "bench"
    frames = []
    for i in range(count):
        data = build_batch(
            records,
            producer_id=producer_id,
            producer_epoch=0,
            base_sequence=i * RECORDS_PER_BATCH,
            base_timestamp=base_timestamp,
        )
        body = produce_request(name, data, acks=-1)
        frames.append(encoder.encode(PRODUCE, PRODUCE_VERSION, body, first_correlation_id + i))
    return frames, len(data) * count


class _FrameReader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def next_frame(self) -> bytes:
        while True:
            if len(self.buf) >= 4:
                (size,) = struct.unpack_from(">i", self.buf)
                if len(self.buf) >= 4 + size:
                    frame = bytes(self.buf[4 : 4 + size])
                    del self.buf[: 4 + size]
                    return frame
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("broker closed the connection")
            self.buf += chunk


def send_pipelined(port: int, frames: list[bytes], in_flight: int) -> tuple[float, list[bytes]]:
    """Send every frame with at most ``in_flight`` unanswered; seconds and the responses."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reader = _FrameReader(sock)
    responses: list[bytes] = []
    try:
        started = time.perf_counter()
        sent = 0
        while sent < min(in_flight, len(frames)):
            sock.sendall(frames[sent])
            sent += 1
        while len(responses) < len(frames):
            responses.append(reader.next_frame())
            if sent < len(frames):
                sock.sendall(frames[sent])
                sent += 1
        elapsed = time.perf_counter() - started
    finally:
        sock.close()
    return elapsed, responses


def check_responses(responses: list[bytes], first_correlation_id: int) -> None:
    flexible = PRODUCE.is_flexible(PRODUCE_VERSION)
    header_version = PRODUCE.response_header_version(PRODUCE_VERSION)
    expected_offset: int | None = None
    for i, frame in enumerate(responses):
        reader = Reader(frame)
        correlation_id = decode_response_header(reader, header_version)
        assert correlation_id == first_correlation_id + i, (correlation_id, i)
        body = codec.decode(PRODUCE.response, PRODUCE_VERSION, flexible, reader)
        part = body.responses[0].partition_responses[0]
        assert part.error_code == 0, f"request {i} answered error {part.error_code}"
        if expected_offset is not None:
            assert part.base_offset == expected_offset, (part.base_offset, expected_offset)
        expected_offset = part.base_offset + RECORDS_PER_BATCH


_names = iter(range(1_000_000))


def cpu_seconds(pid: int, children: bool = True) -> float:
    """User + system CPU time the process and (``children``) its live children
    (minikafka's validation workers) have used (Linux /proc)."""
    total = 0
    for one in (pid, *(_children(pid) if children else ())):
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(child) for child in text.split()]


def ingest_mb_s(
    port: int, requests: int, in_flight: int = 5, pid: int | None = None
) -> dict[str, Any]:
    """One run on a new topic; MB/s of record-batch bytes acknowledged.

    With the broker's ``pid``, also the broker's CPU time per request and the MB it takes
    per CPU-second: on a shared machine the wall-clock figure moves with everyone else's
    load, the CPU cost much less.
    """
    name = f"bench-ingest-{next(_names)}-{time.monotonic_ns()}"
    create_topic(port, name)
    warm, _ = build_requests(port, name, min(50, requests))
    send_pipelined(port, warm, in_flight)
    frames, batch_bytes = build_requests(port, name, requests)
    cpu_before = cpu_seconds(pid) if pid is not None else 0.0
    own_before = cpu_seconds(pid, children=False) if pid is not None else 0.0
    elapsed, responses = send_pipelined(port, frames, in_flight)
    cpu = cpu_seconds(pid) - cpu_before if pid is not None else float("nan")
    own = cpu_seconds(pid, children=False) - own_before if pid is not None else float("nan")
    check_responses(responses, 1)
    return {
        "mb_s": batch_bytes / elapsed / 1e6,
        "requests_s": requests / elapsed,
        "seconds": elapsed,
        "cpu_us_per_request": cpu / requests * 1e6,
        # The broker process alone (its event loop and threads), without its workers.
        "process_cpu_us_per_request": own / requests * 1e6,
        "mb_per_cpu_s": batch_bytes / cpu / 1e6 if cpu > 0 else float("nan"),
    }


def confluent_latency(port: int, count: int) -> dict[str, float]:
    """Sequential confluent-kafka produce, linger 0, acks=all, idempotent: ms percentiles."""
    from confluent_kafka import Producer

    name = f"bench-latency-{next(_names)}-{time.monotonic_ns()}"
    create_topic(port, name)
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,
        }
    )
    done = threading.Event()
    errors: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)
        done.set()

    for _ in range(100):  # warm-up: connections, metadata, producer id
        producer.produce(name, b"warm-up", on_delivery=delivered)
    producer.flush(30)
    samples: list[float] = []
    for _ in range(count):
        done.clear()
        t0 = time.perf_counter()
        producer.produce(name, b"ping", on_delivery=delivered)
        # poll() blocks until an event (the delivery report) is served. Not poll(0.0005):
        # confluent-kafka truncates the timeout to whole milliseconds, so that was poll(0),
        # a busy loop that kept one of this machine's two cores taken and preempted the
        # broker under test for milliseconds at a time (p99 of 1.5-4 ms for both brokers,
        # 0.4-0.8 ms without it).
        while not done.is_set():
            producer.poll(1.0)
        samples.append((time.perf_counter() - t0) * 1000)
    assert producer.flush(30) == 0 and not errors, errors[:3]
    samples.sort()

    def pct(q: float) -> float:
        return samples[min(int(len(samples) * q), len(samples) - 1)]

    return {"p50": pct(0.5), "p99": pct(0.99), "p999": pct(0.999)}
