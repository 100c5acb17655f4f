"""One connection's pipelined requests never hold the broker-wide request queue.

Kafka's SocketServer mutes a channel after each complete request (Processor
processCompletedReceives) until its answer is sent: one connection has at most one request
in the RequestChannel queue (queued.max.requests), a request parked in purgatory (a
long-polling Fetch) holds none, and what the client pipelined behind it waits in the socket,
uncharged. So a client that sends a long-polling Fetch and then hundreds of tiny requests in
one write must not stop the broker from reading everybody else's requests; its own are
answered, in order, once the Fetch is.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.fetch import FETCH
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import (
    batch,
    create_topic,
    fetch_partition,
    fetch_request,
    init_producer,
    produce,
    stored,
)
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.e2e

PIPELINED = 600
POLL_MS = 6_000
# How long the probe keeps asking while the Fetch is parked, and the p99 it must see.
PROBE_S = 3.0
P99_LIMIT_S = 0.2
# A probe request not answered this fast means the broker stopped reading it.
PROBE_TIMEOUT_S = 2.0


def _attack(client: RawClient, topic: str) -> None:
    """A Fetch that waits POLL_MS for 10 MB of an empty topic, then PIPELINED ApiVersions
    v0 requests, all in one write."""
    parts = [
        client.encode(
            FETCH,
            12,
            fetch_request(topic, 0, max_wait_ms=POLL_MS, min_bytes=10_000_000),
            correlation_id=1,
        )
    ]
    client.pending.append((1, FETCH, 12))
    for correlation_id in range(2, 2 + PIPELINED):
        parts.append(client.encode(API_VERSIONS, 0, Message(), correlation_id))
        client.pending.append((correlation_id, API_VERSIONS, 0))
    client.send_raw(b"".join(parts))


def test_pipelined_requests_behind_a_long_poll_leave_others_served(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port, client_id="setup") as setup:
        create_topic(setup, "quiet")
        create_topic(setup, "busy")
    attacker = RawClient(broker.port, client_id="attacker")
    attacker.sock.settimeout(POLL_MS / 1000 + 10)
    try:
        sent = time.monotonic()
        _attack(attacker, "quiet")
        probe_latencies: list[float] = []
        with RawClient(broker.port, client_id="probe") as probe:
            probe.sock.settimeout(PROBE_TIMEOUT_S)
            stop = time.monotonic() + PROBE_S
            while time.monotonic() < stop:
                started = time.monotonic()
                answer = probe.request(API_VERSIONS, 0, Message())
                probe_latencies.append(time.monotonic() - started)
                assert answer.error_code == 0
        # Other clients produce and consume meanwhile (the Fetch is still parked).
        with RawClient(broker.port, client_id="producer") as client:
            client.sock.settimeout(PROBE_TIMEOUT_S)
            producer = init_producer(client)
            answer = produce(client, "busy", batch(producer, 0, 0))
            assert (answer.error_code, answer.base_offset) == (0, 0)
            fetched = fetch_partition(client, "busy", 0)
            assert fetched.error_code == 0 and len(fetched.records) > 0
        assert len(stored(broker.data_dir, "busy")) == 1
        assert time.monotonic() - sent < POLL_MS / 1000, "the Fetch should still be parked"

        probe_latencies.sort()
        p99 = probe_latencies[int(len(probe_latencies) * 0.99) - 1]
        assert p99 < P99_LIMIT_S, f"probe p99 {p99 * 1000:.0f} ms"

        # The attacker's requests are answered once its Fetch is: all, in order (receive()
        # checks each answers the oldest request pending).
        _, fetch_answer = attacker.receive()
        assert fetch_answer.responses[0].partitions[0].error_code == 0
        assert time.monotonic() - sent >= POLL_MS / 1000 - 0.5
        for _ in range(PIPELINED):
            _, versions = attacker.receive()
            assert versions.error_code == 0
        assert not attacker.pending
    finally:
        attacker.close()


def test_many_long_polls_with_pipelined_requests_hold_no_slot(tmp_path: Path) -> None:
    """More such connections than queued.max.requests has slots: each holds none while its
    Fetch is parked (Kafka: the muted channel's request left the queue for purgatory)."""
    proc = BrokerProcess(tmp_path / "data", {"queued.max.requests": "3"}).start()
    attackers: list[RawClient] = []
    try:
        with RawClient(proc.port, client_id="setup") as setup:
            create_topic(setup, "quiet")
        attackers = [RawClient(proc.port, client_id=f"attacker-{i}") for i in range(4)]
        for attacker in attackers:
            _attack(attacker, "quiet")
        with RawClient(proc.port, client_id="probe") as probe:
            probe.sock.settimeout(PROBE_TIMEOUT_S)
            stop = time.monotonic() + PROBE_S
            while time.monotonic() < stop:
                assert probe.request(API_VERSIONS, 0, Message()).error_code == 0
        for attacker in attackers:
            attacker.sock.settimeout(POLL_MS / 1000 + 10)
            for _ in range(PIPELINED + 1):
                attacker.receive()
            assert not attacker.pending
    finally:
        for attacker in attackers:
            attacker.close()
        proc.kill() if not proc.is_running() else proc.stop()
