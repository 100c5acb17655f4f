"""File descriptors kept for the log: connections stop being accepted before they run out.

Every connection holds a descriptor, and anyone who reaches a port can open connections
before authenticating; the log needs descriptors too (three files a segment, more for a
roll, a flush or a snapshot). Left alone, connections could take the last one and make a
roll fail. So the acceptor stops accepting while ``reserve`` or fewer descriptors are free
below the process's RLIMIT_NOFILE (soft) limit, as it stops at ``max.connections``
(Kafka's Acceptor waits in ConnectionQuotas; a Kafka broker is expected to run with a limit
far above its connections, which a reserve measured from the limit makes explicit here).
The reserve is an eighth of the limit, at least 32 and at most 1024.

Counting the descriptors in use: on Linux 6.2+ the size of ``/proc/self/fd`` is the count
(one stat); before, its entries are counted, at most every ``RECOUNT_S``, with the
connections accepted since added.
"""

from __future__ import annotations

import logging
import os
import resource
import time

log = logging.getLogger(__name__)

MIN_RESERVE = 32
MAX_RESERVE = 1024
RECOUNT_S = 0.1
_FD_DIR = "/proc/self/fd"


def reserve_for(limit: int) -> int:
    return max(MIN_RESERVE, min(MAX_RESERVE, limit // 8))


class FdHeadroom:
    def __init__(self, fd_dir: str = _FD_DIR) -> None:
        self._fd_dir = fd_dir
        self._counted = 0
        self._counted_at = -RECOUNT_S
        self._accepted_since = 0
        # Whether accepting is stopped for want of descriptors (logged once per stop).
        self.stopped = False

    @staticmethod
    def limit() -> int | None:
        """RLIMIT_NOFILE's soft limit, read each time (prlimit can change it); None if none."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return None if soft == resource.RLIM_INFINITY else soft

    def in_use(self) -> int | None:
        """Descriptors this process has open; None where /proc cannot tell."""
        try:
            size = os.stat(self._fd_dir).st_size
        except OSError:
            return None
        if size > 0:
            return size
        now = time.monotonic()
        if now - self._counted_at >= RECOUNT_S:
            try:
                # Less the descriptor listdir itself holds open.
                self._counted = len(os.listdir(self._fd_dir)) - 1
            except OSError:
                return None
            self._counted_at, self._accepted_since = now, 0
        return self._counted + self._accepted_since

    def accepted(self) -> None:
        """One more descriptor taken by a connection (for the estimate between counts)."""
        self._accepted_since += 1

    def room_for_a_connection(self) -> bool:
        """True while more than the reserve stays free once one more connection is open."""
        limit, in_use = self.limit(), self.in_use()
        if limit is None or in_use is None:
            return True
        return limit - in_use - 1 >= reserve_for(limit)

    def describe(self) -> str:
        limit, in_use = self.limit(), self.in_use()
        reserve = reserve_for(limit) if limit is not None else 0
        return f"{in_use} of {limit} file descriptors in use, {reserve} kept for the log"
