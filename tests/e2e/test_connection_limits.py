"""Bounded reading, connection limits and idle expiry, as Kafka's SocketServer.

Kafka mutes a channel after each complete request until its response is sent, bounds what
all connections hold with queued.max.request.bytes, limits connections with
max.connections / max.connections.per.ip(.overrides) (ConnectionQuotas) and closes idle
ones after connections.max.idle.ms. Memory is read from /proc/<pid>/status of the broker.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from protocol import codec
from protocol.errors import ErrorCode
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.fetch import FETCH
from protocol.messages.produce import PRODUCE
from protocol.primitives import Reader
from protocol.records import build_batch
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_topic, fetch_request, produce, produce_request, stored
from tests.support.raw_client import SOFTWARE, ConnectionClosed, RawClient

MIB = 1024 * 1024


def memory_mb(broker: BrokerProcess, field: str = "VmRSS") -> float:
    assert broker.proc is not None
    for line in Path(f"/proc/{broker.proc.pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc/{broker.proc.pid}/status")


def produce_frame(topic: str, size: int, correlation_id: int) -> bytes:
    """A Produce v9 frame (acks=1) with one batch of about ``size`` bytes."""
    record = b"m" * 100_000
    data = build_batch([(None, record)] * max(1, size // len(record)))
    encoder = RawClient.__new__(RawClient)
    encoder.client_id = "pipeliner"
    return encoder.encode(PRODUCE, 9, produce_request(topic, data, acks=1), correlation_id)


def read_answers(sock: socket.socket, count: int) -> list[tuple[int, bytes]]:
    """``count`` response frames: (correlation id, body)."""
    answers: list[tuple[int, bytes]] = []
    buf = bytearray()
    while len(answers) < count:
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">i", buf)[0]:
            length = struct.unpack_from(">i", buf)[0]
            (correlation_id,) = struct.unpack_from(">i", buf, 4)
            answers.append((correlation_id, bytes(buf[8 : 4 + length])))
            del buf[: 4 + length]
        if len(answers) < count:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"closed after {len(answers)} of {count} answers")
            buf += chunk
    return answers


def produce_error(body: bytes) -> int:
    """The first partition's error code of a Produce v9 response body (header v1 stripped)."""
    reader = Reader(body)
    reader.pos += 1  # response header v1's empty tagged fields
    answer = codec.decode(PRODUCE.response, 9, True, reader)
    error: int = answer.responses[0].partition_responses[0].error_code
    return error


def pipeline(port: int, frames: list[bytes], errors: list[BaseException]) -> None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
            for frame in frames:
                sock.sendall(frame)
            answers = read_answers(sock, len(frames))
            expected = [struct.unpack_from(">i", f, 8)[0] for f in frames]
            assert [cid for cid, _ in answers] == expected
            assert {produce_error(body) for _, body in answers} == {
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            }
    except BaseException as exc:
        errors.append(exc)


def run_pipeliners(port: int, connections: int, frames: list[bytes]) -> None:
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=pipeline, args=(port, frames, errors)) for _ in range(connections)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not errors, errors[:3]


def api_versions_ok(client: RawClient) -> bool:
    answer = client.request(API_VERSIONS, 3, SOFTWARE)
    return bool(answer.error_code == 0)


def test_a_parked_long_poll_leaves_pipelined_frames_in_the_socket_not_in_memory(
    tmp_path: Path,
) -> None:
    with running(tmp_path / "data") as broker:
        with RawClient(broker.port) as client, RawClient(broker.port) as other:
            create_topic(other, "parked")
            base = memory_mb(broker)
            client.send(FETCH, 12, fetch_request("parked", 0, max_wait_ms=60_000))
            frames = [produce_frame("absent", 4_000_000, 100 + i) for i in range(31)]
            pending = memoryview(b"".join(frames))
            client.sock.setblocking(False)
            peak = base
            deadline = time.monotonic() + 3
            while pending and time.monotonic() < deadline:
                with contextlib.suppress(BlockingIOError):
                    pending = pending[client.sock.send(pending[: 1 << 20]) :]
                peak = max(peak, memory_mb(broker))
            # The broker stopped reading behind the parked fetch: the kernel holds the rest.
            assert pending, "all 124 MB were read while the fetch was parked"
            assert peak - base < 40, f"resident memory rose {peak - base:.0f} MB"

            client.sock.setblocking(True)
            client.sock.settimeout(120)
            sender = threading.Thread(target=client.sock.sendall, args=(pending,))
            sender.start()
            assert produce(other, "parked", build_batch([(None, b"wake")])).error_code == 0
            answers = read_answers(client.sock, 32)
            sender.join(60)
        assert [cid for cid, _ in answers] == [1] + [100 + i for i in range(31)]
        reader = Reader(answers[0][1])
        reader.pos += 1
        fetched = codec.decode(FETCH.response, 12, True, reader).responses[0].partitions[0]
        assert bytes(fetched.records) == stored(broker.data_dir, "parked")[0][1]
        assert {produce_error(body) for _, body in answers[1:]} == {
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        }


def test_two_hundred_connections_pipelining_1mib_frames_keep_the_broker_under_300mb(
    tmp_path: Path,
) -> None:
    with running(tmp_path / "data") as broker:
        frames = [produce_frame("absent", MIB, 1 + i) for i in range(4)]
        run_pipeliners(broker.port, 200, frames)
        peak = memory_mb(broker, "VmHWM")
        assert peak < 300, f"peak resident memory {peak:.0f} MB"
        with RawClient(broker.port) as client:
            assert api_versions_ok(client)


def test_queued_max_request_bytes_bounds_what_all_connections_hold(tmp_path: Path) -> None:
    overrides = {
        "socket.request.max.bytes": str(4 * MIB),
        "queued.max.request.bytes": str(16 * MIB),
    }
    with running(tmp_path / "data", overrides) as broker:
        frames = [produce_frame("absent", 4_000_000, 1 + i) for i in range(2)]
        run_pipeliners(broker.port, 64, frames)
        peak = memory_mb(broker, "VmHWM")
        # 16 MiB of pool, one request over it, 64 read-ahead budgets, the interpreter.
        assert peak < 130, f"peak resident memory {peak:.0f} MB"


def test_an_idle_connection_is_closed_after_connections_max_idle_ms(tmp_path: Path) -> None:
    with running(tmp_path / "data", {"connections.max.idle.ms": "1000"}) as broker:
        with RawClient(broker.port) as idle:
            # Read before the request: the broker's last activity (its answer) comes later.
            asked = time.monotonic()
            assert api_versions_ok(idle)
            assert idle.closed_by_peer(timeout=20)
            closed_after = time.monotonic() - asked
        assert closed_after >= 0.95, f"closed after {closed_after:.2f} s of idleness"
        broker.wait_for_log(r"idle for \d+ ms \(connections.max.idle.ms=1000\)")


@pytest.mark.parametrize(
    "overrides",
    [
        {"max.connections.per.ip": "2"},
        {"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:2"},
    ],
    ids=["max.connections.per.ip", "overrides"],
)
def test_a_connection_over_the_per_ip_limit_is_closed_at_once(
    tmp_path: Path, overrides: dict[str, str]
) -> None:
    with running(tmp_path / "data", overrides) as broker:
        first, second = RawClient(broker.port), RawClient(broker.port)
        assert api_versions_ok(first) and api_versions_ok(second)
        with RawClient(broker.port) as third:
            assert third.closed_by_peer(timeout=10)
        broker.wait_for_log(
            r"Rejected connection from 127\.0\.0\.1, address already has the configured "
            r"maximum of 2 connections"
        )
        first.close()
        # Once the broker has seen the close, a new connection is served again.
        deadline = time.monotonic() + 10
        while True:
            with RawClient(broker.port) as again:
                try:
                    if api_versions_ok(again):
                        break
                except (ConnectionError, OSError, ConnectionClosed):
                    # Still over the limit: the broker closed this one at once.
                    assert time.monotonic() < deadline, "no slot came back after a close"
        assert api_versions_ok(second)
        second.close()


def test_a_connection_over_max_connections_waits_unread_for_a_slot(tmp_path: Path) -> None:
    with running(tmp_path / "data", {"max.connections": "2"}) as broker:
        first, second = RawClient(broker.port), RawClient(broker.port)
        assert api_versions_ok(first) and api_versions_ok(second)
        with RawClient(broker.port) as waiting:
            waiting.send(API_VERSIONS, 3, SOFTWARE)
            waiting.sock.settimeout(0.5)
            with pytest.raises(TimeoutError):
                waiting.sock.recv(1, socket.MSG_PEEK)
            first.close()
            waiting.sock.settimeout(10)
            assert waiting.receive()[1].error_code == 0
        assert api_versions_ok(second)
        second.close()


def test_a_thousand_idle_connections_stay_open_and_others_are_served(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    idle = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(1000)]
    try:
        with RawClient(broker.port) as client:
            for _ in range(20):
                assert api_versions_ok(client)
        assert memory_mb(broker) < 100
        for sock in idle:
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)  # still open, nothing sent: would block
    finally:
        for sock in idle:
            sock.close()
        broker.stop()
