"""At most one log line per key and interval, counting the ones left out.

For lines a misbehaving or busy client can trigger on every request (a regex-subscribing
client names invalid topics in thousands of Metadata requests a minute): the first occurrence
is logged, the rest within the interval are counted and the count is reported with the next
line logged for that key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

MAX_KEYS = 4096


class LogLimiter:
    def __init__(
        self, interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        # key -> (time of the last line logged, occurrences suppressed since)
        self._seen: dict[Hashable, tuple[float, int]] = {}

    def allow(self, key: Hashable) -> int | None:
        """None: suppress this occurrence. Otherwise log it, with this many left out before."""
        now = self._clock()
        last = self._seen.get(key)
        if last is not None and now - last[0] < self.interval_s:
            self._seen[key] = (last[0], last[1] + 1)
            return None
        if last is None and len(self._seen) >= MAX_KEYS:
            self._forget_older_than(now - self.interval_s)
        self._seen[key] = (now, 0)
        return 0 if last is None else last[1]

    def _forget_older_than(self, cutoff: float) -> None:
        # Keys whose interval has passed would be logged anyway; only their counts go.
        stale = [k for k, (at, _) in self._seen.items() if at < cutoff]
        for key in stale or list(self._seen)[: MAX_KEYS // 2]:
            del self._seen[key]
