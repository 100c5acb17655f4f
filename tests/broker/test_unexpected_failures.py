"""An unexpected exception while a request is handled closes (or fails) that connection
with a log line; it never leaves the connection open without a handler.

Handlers answer or close for every failure they know of; these tests make one fail in a
way nobody planned for (a mechanism's bug, a SASL step raising) by patching one method of a
broker running in this process, and talk to it over real sockets.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.lifecycle.server import Broker
from broker.net.sasl_session import SaslSession
from broker.security.sasl_plain import PlainServer
from protocol.errors import ErrorCode
from protocol.messages.api_versions import API_VERSIONS
from protocol.schema import Message
from tests.support.in_process_broker import in_process_broker
from tests.support.raw_client import RawClient
from tests.support.sasl import plain_login, sasl_overrides

DEADLINE_S = 5.0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    overrides = {**sasl_overrides(), "connections.max.idle.ms": "600000"}
    with in_process_broker(tmp_path / "data", overrides) as started:
        yield started


def _port(broker: Broker, name: str) -> int:
    (listener,) = [lst for lst in broker.config.listeners if lst.name == name]
    return listener.port


def _probe(broker: Broker) -> None:
    with RawClient(_port(broker, "PLAINTEXT")) as probe:
        probe.sock.settimeout(DEADLINE_S)
        assert probe.request(API_VERSIONS, 0, Message()).error_code == 0


def test_a_mechanism_failing_unexpectedly_fails_authentication(
    broker: Broker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: PlainServer, token: bytes) -> bytes:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(PlainServer, "evaluate", broken)
    with caplog.at_level(logging.INFO), RawClient(_port(broker, "SASL_PLAINTEXT")) as client:
        client.sock.settimeout(DEADLINE_S)
        answer = plain_login(client, "alice", "alice-secret")
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        # SaslServerAuthenticator's message for a SaslException: no details.
        assert answer.error_message == (
            "Authentication failed during authentication due to invalid credentials with "
            "SASL mechanism PLAIN"
        )
        assert client.closed_by_peer(DEADLINE_S)
    assert "SASL PLAIN failed unexpectedly" in caplog.text
    assert "ZeroDivisionError" in caplog.text
    _probe(broker)


def test_an_exception_outside_the_handlers_closes_the_connection(
    broker: Broker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(self: SaslSession, conn: Any, frame: bytes) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(SaslSession, "handle", broken)
    with caplog.at_level(logging.INFO), RawClient(_port(broker, "SASL_PLAINTEXT")) as client:
        client.sock.settimeout(DEADLINE_S)
        client.send(API_VERSIONS, 0, Message())
        assert client.closed_by_peer(DEADLINE_S)
    assert "handling a request failed" in caplog.text
    assert broker.state.request_budget.queued_requests == 0
    _probe(broker)
