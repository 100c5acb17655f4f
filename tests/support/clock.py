"""A clock a test moves by hand, for code that takes its time source as a callable."""

from __future__ import annotations


class ManualClock:
    """Calling it reads ``now``; the test sets ``now`` (or adds to it) to move time on."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
