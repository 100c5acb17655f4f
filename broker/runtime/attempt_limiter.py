"""At most ``limit`` failed attempts per key in a window, then a wait until the window ends.

For what a guesser repeats (a login with wrong passwords): each key (an address, an address
and a user) counts its failures in a fixed window opened by the first one; once ``limit`` are
counted, ``wait`` names the seconds left of the window and the caller refuses without trying.
The table is bounded as broker.runtime.log_limiter's is: past ``MAX_KEYS`` the keys whose
window ended go first, then the oldest half.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

MAX_KEYS = 4096


class AttemptLimiter:
    def __init__(
        self, limit: int, interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.interval_s = interval_s
        self._clock = clock
        # key -> (start of its window, failures counted in it)
        self._windows: dict[Hashable, tuple[float, int]] = {}

    def wait(self, key: Hashable) -> float:
        """0 when ``key`` may try now, else the seconds until its window ends."""
        window = self._windows.get(key)
        if window is None or window[1] < self.limit:
            return 0.0
        left = window[0] + self.interval_s - self._clock()
        return left if left > 0 else 0.0

    def failed(self, key: Hashable) -> None:
        now = self._clock()
        window = self._windows.get(key)
        if window is not None and now - window[0] < self.interval_s:
            self._windows[key] = (window[0], window[1] + 1)
            return
        if window is None and len(self._windows) >= MAX_KEYS:
            self._forget_older_than(now - self.interval_s)
        self._windows[key] = (now, 1)

    def __len__(self) -> int:
        return len(self._windows)

    def _forget_older_than(self, cutoff: float) -> None:
        ended = [k for k, (start, _) in self._windows.items() if start < cutoff]
        for key in ended or list(self._windows)[: MAX_KEYS // 2]:
            del self._windows[key]
