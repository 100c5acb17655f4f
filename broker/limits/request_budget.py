"""Broker-wide bounds on requests read and not yet answered.

- ``queued.max.requests`` (default 500): Kafka's RequestChannel queue between the network
  threads and the request handlers; when it is full the network threads stop reading.
  Here: connections whose next request is read and waits to start (one slot each at most,
  none while a request is handled or parked: broker.net.connection); at the limit the
  connections stop reading until one is started.
- ``queued.max.request.bytes`` (default -1 = no limit): Kafka's MemoryPool
  (SimpleMemoryPool, not strict): a request's whole size is taken from the pool before it is
  read; while the pool has anything left one more request may take it (so it is overdrawn
  by at most one request), otherwise the connection is muted until memory is released.
  Here the bytes go back when the request has been handled.
Deviation: a request no larger than a connection's read-ahead budget never waits for the
pool (their memory is bounded per connection anyway), so small requests (ApiVersions,
heartbeats) keep flowing while large produces have drained it; Kafka mutes them too.
"""

from __future__ import annotations

import collections
from collections.abc import Callable


class RequestBudget:
    def __init__(self, max_requests: int, max_bytes: int) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.queued_requests = 0
        self.available_bytes = max_bytes
        self._request_waiters: dict[int, Callable[[], None]] = {}
        self._byte_waiters: collections.deque[tuple[int, Callable[[], None]]] = collections.deque()

    # -- queued.max.requests ----------------------------------------------------------------

    @property
    def requests_full(self) -> bool:
        return self.queued_requests >= self.max_requests

    def request_queued(self) -> None:
        self.queued_requests += 1

    def request_started(self) -> None:
        was_full = self.requests_full
        self.queued_requests -= 1
        if was_full and not self.requests_full:
            waiters = list(self._request_waiters.values())
            self._request_waiters.clear()
            for resume in waiters:
                resume()

    def wait_for_request_room(self, key: int, resume: Callable[[], None]) -> None:
        """Call ``resume`` once the queue is below its limit again."""
        self._request_waiters[key] = resume

    def forget(self, key: int) -> None:
        self._request_waiters.pop(key, None)

    # -- queued.max.request.bytes -----------------------------------------------------------

    @property
    def limits_bytes(self) -> bool:
        return self.max_bytes > 0

    def try_reserve(self, size: int, granted: Callable[[], None]) -> bool:
        """Take ``size`` bytes now (True), or queue and call ``granted`` once taken."""
        if not self.limits_bytes:
            return True
        if self.available_bytes > 0 and not self._byte_waiters:
            self.available_bytes -= size
            return True
        self._byte_waiters.append((size, granted))
        return False

    def release(self, size: int) -> None:
        if not self.limits_bytes or size <= 0:
            return
        self.available_bytes += size
        while self.available_bytes > 0 and self._byte_waiters:
            wanted, granted = self._byte_waiters.popleft()
            self.available_bytes -= wanted
            granted()
