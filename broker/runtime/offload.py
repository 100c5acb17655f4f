"""Heavy work off the event loop: one small pool of worker threads (issue 13).

Kafka parses requests on its network threads and runs handlers on a pool of I/O threads,
so one expensive request never stops the others. Our single event loop would: decoding a
request of a million elements, validating a million-record batch or creating thousands of
partition directories takes seconds. Those run here instead, while the loop keeps serving.

Two workers: the C decompressors, crc32c and file I/O release the GIL, pure-Python
decoding does not, so more threads would only take the GIL from the loop more often.
The GIL switch interval is lowered from 5 ms to 1 ms so that the loop, whenever it wants
the GIL back from a busy worker, waits at most about that long per switch.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

WORKERS = 2
SWITCH_INTERVAL_S = 0.001

_executor: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        _executor = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="heavy")
    return _executor


async def run(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` on a worker thread; the caller's task waits, the loop does not."""
    return await asyncio.get_running_loop().run_in_executor(_pool(), fn, *args)
