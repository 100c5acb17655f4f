"""A rate limit on the log cleaner's reads and writes (Kafka's Throttler, as LogCleaner uses
it for ``log.cleaner.io.max.bytes.per.second``): bytes are counted over periods of at least
300 ms; a period that went faster than the rate sleeps off the difference. Shared by every
cleaner thread, as Kafka's one throttler is."""

from __future__ import annotations

import threading
import time

CHECK_INTERVAL_MS = 300.0


class Throttler:
    def __init__(self, bytes_per_second: float) -> None:
        self.bytes_per_second = bytes_per_second
        self._lock = threading.Lock()
        self._period_start = time.monotonic()
        self._observed = 0.0

    def maybe_throttle(self, observed: int) -> None:
        if self.bytes_per_second <= 0 or self.bytes_per_second >= 1.7e308:
            return  # Double.MaxValue: no limit
        with self._lock:
            self._observed += observed
            now = time.monotonic()
            elapsed_ms = (now - self._period_start) * 1000
            if elapsed_ms <= CHECK_INTERVAL_MS:
                return
            rate = self._observed * 1000 / elapsed_ms
            if rate > self.bytes_per_second:
                sleep_ms = self._observed / (self.bytes_per_second / 1000) - elapsed_ms
                if sleep_ms > 0:
                    time.sleep(sleep_ms / 1000)
            self._period_start = time.monotonic()
            self._observed = 0.0
