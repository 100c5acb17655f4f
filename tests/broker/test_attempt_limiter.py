"""broker.runtime.attempt_limiter: a key's failures counted in a window; past the limit a
wait until the window ends; the table bounded."""

from __future__ import annotations

from broker.runtime.attempt_limiter import MAX_KEYS, AttemptLimiter
from tests.support.clock import ManualClock


def test_past_the_limit_a_key_waits_until_its_window_ends() -> None:
    clock = ManualClock(100.0)
    limiter = AttemptLimiter(3, 60.0, clock)
    for _ in range(2):
        limiter.failed("a")
    assert limiter.wait("a") == 0.0
    limiter.failed("a")
    assert limiter.wait("a") == 60.0
    assert limiter.wait("b") == 0.0  # other keys are not held back
    clock.now = 130.0
    assert limiter.wait("a") == 30.0
    limiter.failed("a")  # failures within the window do not lengthen it
    assert limiter.wait("a") == 30.0
    clock.now = 160.0
    assert limiter.wait("a") == 0.0
    limiter.failed("a")  # a new window, counted from one
    assert limiter.wait("a") == 0.0


def test_the_number_of_keys_is_bounded() -> None:
    clock = ManualClock()
    limiter = AttemptLimiter(1, 60.0, clock)
    for i in range(MAX_KEYS * 3):
        clock.now = i * 0.001
        limiter.failed(i)
    assert len(limiter) <= MAX_KEYS
    # The newest keys are kept, held back as before.
    assert limiter.wait(MAX_KEYS * 3 - 1) > 0
