"""Waiting on a condition with a deadline (no sleeps to synchronise tests)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``check`` on the running loop until it holds or ``timeout`` seconds pass; its
    last answer."""
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return check()


def until_sync(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    """``until`` for a thread outside the loop (a client thread): polls every millisecond."""
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.001)
    return check()
