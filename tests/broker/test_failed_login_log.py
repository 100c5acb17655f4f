"""Failed logins: one INFO line per address and user a minute, the next one counting the
failures left out (a client retrying a wrong password opens dozens of connections a second)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.runtime.log_limiter import LogLimiter
from protocol.errors import ErrorCode
from tests.support.clock import ManualClock
from tests.support.in_process_broker import in_process_broker
from tests.support.raw_client import RawClient
from tests.support.sasl import plain_login, sasl_overrides


def test_failed_logins_are_counted_between_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="broker.net.sasl_session")
    clock = ManualClock(1000.0)
    with in_process_broker(tmp_path / "data", sasl_overrides()) as broker:
        assert broker.state is not None
        broker.state.failed_login_log = LogLimiter(60.0, clock=clock)
        port = broker.config.listeners[1].port

        def fail(user: str) -> None:
            with RawClient(port) as client:
                answer = plain_login(client, user, "wrong")
                assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
                assert client.closed_by_peer()

        for _ in range(5):
            fail("alice")
        fail("bob")
        clock.now += 61
        fail("alice")

    def lines(level: int) -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.levelno == level and "failed authentication" in r.getMessage()
        ]

    info = lines(logging.INFO)
    assert len(info) == 3, info
    assert "as 'alice' (Authentication failed: Invalid username or password)" in info[0]
    assert info[0].endswith("password)")
    assert "as 'bob'" in info[1]
    assert info[2].endswith("; 4 more from 127.0.0.1 as 'alice' since the last such line")
    assert len(lines(logging.DEBUG)) == 4
