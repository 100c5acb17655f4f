"""broker.console.logins on its own (a clock moved by hand): failed Basic logins logged one
line per address and user a minute with the count left out, held back with 429 and
Retry-After past a few a minute per user and per address, good ones remembered."""

from __future__ import annotations

import base64
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from broker.config.loader import make_config
from broker.console import logins
from broker.console.logins import PER_ADDRESS, PER_USER, Logins
from broker.net.local_http import Refused
from tests.support.clock import ManualClock
from tests.support.sasl import sasl_overrides

CONFIG = make_config(sasl_overrides())
STATE: Any = SimpleNamespace(scram_credentials=SimpleNamespace(get=lambda user, kind: None))


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


async def status(limiter: Logins, authorization: str, address: str = "10.0.0.1") -> int | str:
    try:
        return await limiter.principal(CONFIG, STATE, authorization, address)
    except Refused as exc:
        return exc.status


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1000.0)


@pytest.fixture
def limiter(clock: ManualClock) -> Logins:
    made = Logins(clock)
    made.failed_delay_s = 0.0
    return made


@pytest.mark.asyncio
async def test_a_user_guessing_from_an_address_is_held_back_until_the_minute_ends(
    limiter: Logins, clock: ManualClock
) -> None:
    assert await status(limiter, basic("alice", "alice-secret")) == "User:alice"
    assert [await status(limiter, basic("alice", f"guess{i}")) for i in range(PER_USER)] == [
        401
    ] * PER_USER
    try:
        await limiter.principal(CONFIG, STATE, basic("alice", "guess"), "10.0.0.1")
    except Refused as exc:
        assert exc.status == 429 and exc.headers["Retry-After"] == "60", exc.headers
    else:
        raise AssertionError("not held back")
    # Held back, the right password is not even tried: a guesser learns nothing.
    assert await status(limiter, basic("alice", "alice-secret")) == 429
    # Another user from there, the same user from elsewhere: answered as before.
    assert await status(limiter, basic("admin", "admin-secret")) == "User:admin"
    assert await status(limiter, basic("alice", "alice-secret"), "10.0.0.2") == "User:alice"
    clock.now += 60
    assert await status(limiter, basic("alice", "alice-secret")) == "User:alice"


@pytest.mark.asyncio
async def test_an_address_trying_many_users_is_held_back(limiter: Logins) -> None:
    for i in range(PER_ADDRESS):
        assert await status(limiter, basic(f"user{i}", "x")) == 401
    assert await status(limiter, basic("admin", "admin-secret")) == 429
    assert await status(limiter, "Basic !!!") == 429  # malformed, from there too
    assert await status(limiter, basic("admin", "admin-secret"), "10.0.0.2") == "User:admin"


@pytest.mark.asyncio
async def test_failures_are_logged_a_line_per_address_and_user_a_minute_with_a_count(
    limiter: Logins, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="broker.console.logins")
    for _ in range(PER_USER + 3):  # the last three answered 429
        await status(limiter, basic("alice", "wrong"))
    await status(limiter, basic("bob", "wrong"))
    await status(limiter, "")  # no credentials: a browser's first request, not a failure
    clock.now += 61
    await status(limiter, basic("alice", "wrong"))
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert info == [
        "console: failed login from 10.0.0.1 as 'alice' (invalid user name or password)",
        "console: failed login from 10.0.0.1 as 'bob' (invalid user name or password)",
        "console: failed login from 10.0.0.1 as 'alice' (invalid user name or password); "
        f"{PER_USER + 2} more from 10.0.0.1 as 'alice' since the last such line",
    ]


@pytest.mark.asyncio
async def test_a_refused_password_is_answered_after_kafkas_failed_authentication_delay(
    clock: ManualClock,
) -> None:
    import time

    made = Logins(clock)
    assert made.failed_delay_s == logins.FAILED_DELAY_S == 0.1
    started = time.monotonic()
    assert await status(made, basic("alice", "wrong")) == 401
    assert time.monotonic() - started >= 0.1
