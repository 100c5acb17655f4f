"""broker.runtime.log_limiter: one line per key and interval, with the count of the ones
left out."""

from __future__ import annotations

from broker.runtime.log_limiter import MAX_KEYS, LogLimiter
from tests.support.clock import ManualClock


def test_one_line_per_key_and_interval_then_the_suppressed_count() -> None:
    clock = ManualClock()
    limiter = LogLimiter(60.0, clock)
    assert limiter.allow("a") == 0
    assert [limiter.allow("a") for _ in range(5)] == [None] * 5
    assert limiter.allow("b") == 0
    clock.now = 59.9
    assert limiter.allow("a") is None
    clock.now = 60.0
    assert limiter.allow("a") == 6
    assert limiter.allow("a") is None


def test_the_number_of_keys_is_bounded() -> None:
    clock = ManualClock()
    limiter = LogLimiter(60.0, clock)
    for i in range(MAX_KEYS * 3):
        clock.now = i * 0.001
        assert limiter.allow(i) == 0
    assert len(limiter._seen) <= MAX_KEYS
