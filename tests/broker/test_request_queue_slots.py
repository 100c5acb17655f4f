"""What one connection holds of queued.max.requests and of requests read ahead
(broker.net.connection ``_sync_charge``, broker.net.frame_reader ``backlog``).

Kafka mutes a channel once a request is complete (SocketServer.Processor), so a connection
has at most one request in the RequestChannel queue, none while it is handled or parked in
purgatory, and what it pipelined behind waits in the socket. A broker on this loop, a real
socket: a long-polling Fetch and 600 tiny requests in one write; the broker's own counters
are read while the Fetch is parked and recorded at every change afterwards.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import minikafka
from broker.limits.request_budget import RequestBudget
from broker.net.connection import KafkaConnection
from broker.net.read_bounds import READ_AHEAD_REQUESTS
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.fetch import FETCH
from protocol.schema import Message
from tests.support.polling import until
from tests.support.produce import create_topic, fetch_request
from tests.support.raw_client import RawClient

PIPELINED = 600
POLL_MS = 2_000


def _state(broker: minikafka.Broker) -> Any:
    assert broker._host is not None and broker._host.broker is not None
    return broker._host.broker.state


def test_a_parked_fetch_with_pipelined_requests_behind_holds_no_slot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    most = {"queued": 0}
    queued = RequestBudget.request_queued

    def recording(self: RequestBudget) -> None:
        queued(self)
        most["queued"] = max(most["queued"], self.queued_requests)

    monkeypatch.setattr(RequestBudget, "request_queued", recording)

    def attack(port: int) -> list[int]:
        with RawClient(port) as setup:
            create_topic(setup, "quiet")
        with RawClient(port, client_id="attacker") as client:
            client.sock.settimeout(POLL_MS / 1000 + 10)
            fetch = fetch_request("quiet", 0, max_wait_ms=POLL_MS, min_bytes=10_000_000)
            parts = [client.encode(FETCH, 12, fetch, 1)]
            client.pending.append((1, FETCH, 12))
            for correlation_id in range(2, 2 + PIPELINED):
                parts.append(client.encode(API_VERSIONS, 0, Message(), correlation_id))
                client.pending.append((correlation_id, API_VERSIONS, 0))
            client.send_raw(b"".join(parts))
            return [client.receive()[0] for _ in range(PIPELINED + 1)]

    async def scenario() -> tuple[list[int], dict[str, int], int]:
        async with minikafka.Broker() as broker:
            state = _state(broker)
            answers = asyncio.create_task(asyncio.to_thread(attack, broker.port))

            def attacker() -> KafkaConnection | None:
                for conn in state.connections:
                    if conn._frames and conn._busy:
                        return conn  # type: ignore[no-any-return]
                return None

            assert await until(lambda: attacker() is not None)
            conn = attacker()
            assert conn is not None
            # The Fetch is parked: the connection holds no slot, a bounded read-ahead, and
            # has stopped reading its socket.
            parked = {
                "queued": state.request_budget.queued_requests,
                "frames": len(conn._frames),
                "paused": int(conn._reading_paused),
            }
            ids = await answers
            await until(lambda: state.request_budget.queued_requests == 0)
            return ids, parked, state.request_budget.queued_requests

    ids, parked, queued_after = asyncio.run(scenario())
    assert parked == {"queued": 0, "frames": READ_AHEAD_REQUESTS, "paused": 1}
    # Every request answered, in order; never more than one slot held at once (the
    # attacker's next request waiting for its worker task).
    assert ids == list(range(1, PIPELINED + 2))
    assert most["queued"] <= 1
    assert queued_after == 0
