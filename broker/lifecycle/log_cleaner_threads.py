"""The log cleaner's threads (Kafka's LogCleaner with its CleanerThreads and
LogCleanerManager): ``log.cleaner.threads`` asyncio tasks, each with its own worker thread
and bounded offset map.

Each round, as CleanerThread.doWork: pick the filthiest compacted log not being cleaned
(``storage.cleaner_selection``, on the loop: sizes and timestamps the log keeps in memory),
take what the cleaning reads (``PartitionLog.cleaning_job``), clean it on the worker thread
(``storage.log_cleaner.clean``: every read, decode, rebuild and write is there), then swap
each cleaned segment in on the loop (``PartitionLog.replace_segments``: renames under the
log's lock) and move the log's cleaner checkpoint (``cleaner-offset-checkpoint``, written
on the worker thread). Then retention of every compacted log not being cleaned
(deletableLogs: for ``compact,delete`` the time and size retention Kafka's cleaner thread
runs, not the retention task). With nothing cleaned the task sleeps
``log.cleaner.backoff.ms``. A cleaning that fails marks its log uncleanable until a restart
(markPartitionUncleanable); the log is served as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from broker.core.state import BrokerState
from broker.runtime import offload
from storage import cleaner_checkpoint
from storage.cleaner_selection import LogToClean, log_to_clean
from storage.io_throttle import Throttler
from storage.log_cleaner import CleaningAborted, CleaningJob, CleaningResult, clean
from storage.offset_map import OffsetMap
from storage.partition_log import PartitionLog

log = logging.getLogger("kafka.log.LogCleaner")

INT_MAX = 2**31 - 1
# While a cleaning runs, its thread holds the GIL for all but the loop's turns: the loop
# waits up to a switch interval each time it wakes to get it back (offload's 1 ms made
# another connection's median round trip 1.3 ms instead of 0.2). A fifth of that while
# cleaning, measured to cost the cleaning nothing.
CLEANING_SWITCH_INTERVAL_S = 0.0002


def now_ms() -> int:
    return int(time.time() * 1000)


class LogCleanerThreads:
    def __init__(
        self,
        state: BrokerState,
        retention: Callable[[list[PartitionLog]], Awaitable[None]],
    ) -> None:
        config = state.config
        self.state = state
        self.retention = retention
        self.threads = config.cleaner_threads
        self.backoff_s = config.cleaner_backoff_ms / 1000
        self.load_factor = config.cleaner_io_buffer_load_factor
        self.throttler = Throttler(config.cleaner_io_max_bytes_per_second)
        # LogCleaner: the dedupe buffer shared among the threads, at most 2 GiB each.
        self.map_memory = min(config.cleaner_dedupe_buffer_size // max(self.threads, 1), INT_MAX)
        self._executor: ThreadPoolExecutor | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._in_progress: dict[PartitionLog, CleaningJob | None] = {}
        self._uncleanable: set[PartitionLog] = set()
        # First dirty offsets by log; read back from the data dir's checkpoint at start.
        self.checkpoints: dict[PartitionLog, int] = {}
        self._stored = cleaner_checkpoint.read(state.store.data_dir)
        self.cleanings = 0  # completed cleanings (tests, bench)
        self._running = 0  # cleanings on the worker threads now

    @property
    def enabled(self) -> bool:
        return self.state.config.cleaner_enable and self.threads > 0

    def start(self) -> None:
        if not self.enabled:
            return
        # The record walk holds the GIL: a 1 ms switch interval lets the loop back in
        # within about that (as broker.runtime.offload's workers).
        sys.setswitchinterval(offload.SWITCH_INTERVAL_S)
        self._executor = ThreadPoolExecutor(
            max_workers=self.threads, thread_name_prefix="kafka-log-cleaner-thread"
        )
        loop = asyncio.get_running_loop()
        for i in range(self.threads):
            offset_map = OffsetMap(self.map_memory)
            self._tasks.append(
                loop.create_task(self._run(offset_map), name=f"kafka-log-cleaner-thread-{i}")
            )

    async def stop(self) -> None:
        for job in self._in_progress.values():
            if job is not None:
                job.abort.set()  # the worker stops at its next batch
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    async def _run(self, offset_map: OffsetMap) -> None:
        while True:
            try:
                cleaned = await self._clean_filthiest(offset_map)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("log cleaner round failed")
                cleaned = False
            if not cleaned:
                await asyncio.sleep(self.backoff_s)

    def _checkpoint(self, plog: PartitionLog) -> int | None:
        if plog not in self.checkpoints:
            stored = self._stored.pop((plog.topic, plog.partition), None)
            if stored is not None:
                self.checkpoints[plog] = stored
        return self.checkpoints.get(plog)

    def _grab_filthiest(self, now: int) -> tuple[PartitionLog, LogToClean] | None:
        """LogCleanerManager.grabFilthiestCompactedLog."""
        best: tuple[PartitionLog, LogToClean] | None = None
        for plog in self.state.store.partition_logs():
            if (
                not plog.config.compact
                or plog in self._in_progress
                or plog in self._uncleanable
                or plog.offline is not None
            ):
                continue
            ltc = log_to_clean(plog, self._checkpoint(plog), now)
            if ltc.force_update_checkpoint:
                self.checkpoints[plog] = ltc.first_dirty_offset
            if ltc.total_bytes == 0 or not ltc.cleanable(plog.config.min_cleanable_ratio):
                continue
            if best is None or ltc.cleanable_ratio > best[1].cleanable_ratio:
                best = (plog, ltc)
        return best

    async def _clean_filthiest(self, offset_map: OffsetMap) -> bool:
        """CleanerThread.cleanFilthiestLog."""
        now = now_ms()
        found = self._grab_filthiest(now)
        cleaned = False
        if found is not None:
            plog, ltc = found
            self._in_progress[plog] = None
            try:
                await self._clean(plog, ltc, offset_map, now)
                cleaned = True
            finally:
                self._in_progress.pop(plog, None)
        deletable = [
            plog
            for plog in self.state.store.partition_logs()
            if plog.config.compact
            and plog.config.delete
            and plog not in self._in_progress
            and plog not in self._uncleanable
        ]
        if deletable:
            await self.retention(deletable)
        return cleaned

    async def _run_clean(self, job: CleaningJob, offset_map: OffsetMap) -> CleaningResult:
        """``clean`` on the worker thread, the switch interval lowered meanwhile."""
        assert self._executor is not None
        loop = asyncio.get_running_loop()
        self._running += 1
        sys.setswitchinterval(CLEANING_SWITCH_INTERVAL_S)
        try:
            return await loop.run_in_executor(
                self._executor, clean, job, offset_map, self.load_factor, self.throttler
            )
        finally:
            self._running -= 1
            if self._running == 0:
                sys.setswitchinterval(offload.SWITCH_INTERVAL_S)

    async def _clean(
        self, plog: PartitionLog, ltc: LogToClean, offset_map: OffsetMap, now: int
    ) -> None:
        assert self._executor is not None
        loop = asyncio.get_running_loop()
        job = plog.cleaning_job(ltc, now)
        self._in_progress[plog] = job
        started = time.monotonic()
        try:
            result = await self._run_clean(job, offset_map)
        except CleaningAborted:
            return
        except Exception:
            gone = self.state.store.partition(plog.topic, plog.partition) is not plog
            if not gone and plog.offline is None and not job.segments[-1].closed:
                log.warning(
                    "Unexpected exception thrown when cleaning log %s. Marking it uncleanable",
                    plog.name,
                    exc_info=True,
                )
                self._uncleanable.add(plog)
            return
        swapped = True
        for group in result.groups:
            # Renames only, under the log's lock: appends to other partitions wait for
            # microseconds. Once one group could not be swapped, none after it is.
            if swapped and plog.replace_segments(group):
                # Each group is a swap of its own (Kafka's replaceSegments per group): the
                # loop serves others between them (a 1 GB log is 64 groups, 0.35 ms each).
                # Stopped here, the rest stay .swap files that the next open finishes.
                await asyncio.sleep(0)
                continue
            swapped = False
            await loop.run_in_executor(self._executor, group.discard)
        if not swapped:
            return
        self.checkpoints[plog] = result.end_offset
        self.cleanings += 1
        stats = result.stats
        elapsed = time.monotonic() - started
        log.info(
            "Cleaned log %s: offsets %d..%d, %d segment(s) into %d, %.1f MB read, "
            "%.1f MB written, %d of %d records kept, %.3f s",
            plog.name,
            ltc.first_dirty_offset,
            result.end_offset,
            sum(len(g.replaced) for g in result.groups),
            len(result.groups),
            stats.bytes_read / 1e6,
            stats.bytes_written / 1e6,
            stats.records_kept,
            stats.records_read,
            elapsed,
        )
        store = self.state.store
        # Deleted topics' logs leave the checkpoints (Kafka's updateCheckpoints on deletion).
        self.checkpoints = {
            p: offset
            for p, offset in self.checkpoints.items()
            if store.partition(p.topic, p.partition) is p
        }
        offsets = {tp: o for tp, o in self._stored.items() if store.partition(*tp) is not None}
        offsets.update(((p.topic, p.partition), o) for p, o in self.checkpoints.items())
        with contextlib.suppress(OSError):
            await loop.run_in_executor(
                self._executor, cleaner_checkpoint.write, self.state.store.data_dir, offsets
            )
