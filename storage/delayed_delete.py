"""File removals that wait ``file.delete.delay.ms`` (Kafka's scheduler "delete-file" tasks).

Kafka never removes a log file the moment it stops being part of a log: retention,
DeleteRecords and DeleteTopics first rename it (segments ``*.deleted``, partition directories
``*.<uuid>-delete``) and remove it ``file.delete.delay.ms`` later (LocalLog.deleteSegmentFiles,
LogManager.deleteLogs), so a fetch response already being sent from it completes. The file
stays open until then; only the names change.

Storage schedules nothing itself (it is synchronous and has no clock of its own to run
on): the owner asks ``seconds_to_next`` when to come back and calls ``run_due`` then;
``on_schedule`` tells it that an earlier removal was added. ``run_all`` finishes every
pending removal (clean shutdown); ``abandon`` only closes the files (a crash, for tests),
leaving the renamed leftovers that the next open removes.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .segment import Segment

log = logging.getLogger(__name__)


@dataclass(order=True)
class _Pending:
    due: float
    seq: int
    what: str = field(compare=False)
    remove: Callable[[], None] = field(compare=False)
    close: Callable[[], None] = field(compare=False)


class DelayedDeletes:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._pending: list[_Pending] = []
        self._seq = itertools.count()
        # Called after each schedule(), so an owner sleeping until the next removal wakes.
        self.on_schedule: Callable[[], None] | None = None

    def __len__(self) -> int:
        return len(self._pending)

    def schedule(
        self,
        delay_ms: int,
        what: str,
        remove: Callable[[], None],
        close: Callable[[], None],
    ) -> None:
        """Run ``remove`` (close and delete) ``delay_ms`` from now; at once when <= 0.

        ``close`` only releases the files; ``abandon`` uses it.
        """
        if delay_ms <= 0:
            self._run(what, remove)
            return
        due = self._clock() + delay_ms / 1000
        heapq.heappush(self._pending, _Pending(due, next(self._seq), what, remove, close))
        if self.on_schedule is not None:
            self.on_schedule()

    def seconds_to_next(self) -> float | None:
        """Seconds until the next removal is due (0 if one is), None when none is pending."""
        if not self._pending:
            return None
        return max(self._pending[0].due - self._clock(), 0.0)

    def run_due(self) -> int:
        """Run the removals that are due; returns how many ran."""
        now = self._clock()
        ran = 0
        while self._pending and self._pending[0].due <= now:
            entry = heapq.heappop(self._pending)
            self._run(entry.what, entry.remove)
            ran += 1
        return ran

    def take_due(self) -> list[Callable[[], None]]:
        """Remove the due removals from the queue and return them, each a call that runs one
        (logging a failure as ``run_due`` does): for an owner that runs them on a worker
        thread, since removing a topic's directories may take a while."""
        now = self._clock()
        due: list[Callable[[], None]] = []
        while self._pending and self._pending[0].due <= now:
            entry = heapq.heappop(self._pending)
            due.append(functools.partial(self._run, entry.what, entry.remove))
        return due

    def run_all(self) -> int:
        """Run every pending removal now, due or not (clean shutdown)."""
        ran = 0
        while self._pending:
            entry = heapq.heappop(self._pending)
            self._run(entry.what, entry.remove)
            ran += 1
        return ran

    def abandon(self) -> None:
        """Close the files of every pending removal without deleting them (a crash)."""
        while self._pending:
            entry = heapq.heappop(self._pending)
            try:
                entry.close()
            except OSError:
                log.exception("closing the files of %s failed", entry.what)

    @staticmethod
    def _run(what: str, remove: Callable[[], None]) -> None:
        try:
            remove()
        except OSError:
            # Kafka logs it (and takes the log dir offline); the renamed leftovers are removed
            # at the next start-up.
            log.exception("deleting %s failed", what)
            return
        log.info("deleted %s", what)


def remove_segments(
    deleter: DelayedDeletes | None,
    delay_ms: int,
    what: str,
    segments: Sequence[Segment],
    txn_files: Sequence[Path] = (),
) -> None:
    """Delete segments already renamed ``.deleted`` (and their ``.txnindex`` files):
    ``file.delete.delay.ms`` later through ``deleter`` (reads in flight finish from the open
    files, as Kafka's asynchronous delete), or now without one."""

    def remove() -> None:
        for seg in segments:
            seg.delete()
        for path in txn_files:
            path.unlink(missing_ok=True)

    def close() -> None:
        for seg in segments:
            seg.close(flush=False)

    if deleter is None:
        remove()
    else:
        deleter.schedule(delay_ms, what, remove, close)
