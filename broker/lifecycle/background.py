"""Periodic housekeeping on the event loop, each task on its own Kafka-named interval.

- retention (log.retention.check.interval.ms): delete whole expired or surplus segments;
  the producer-state snapshot each partition needs before its log start moves is written
  on a worker thread first; compacted logs are left to the log cleaner's threads while
  they run (Kafka's pauseCleaningForNonCompactedPartitions), which apply the same
  retention to ``compact,delete`` logs;
- the log cleaner (log_cleaner_threads): log.cleaner.threads cleaners of compacted logs;
- producer expiration (producer.id.expiration.check.interval.ms): forget producers idle
  longer than producer.id.expiration.ms, counted from their last batch's max timestamp, as
  Kafka's ProducerStateManager.removeExpiredProducers does; also once at start-up, where
  Kafka's loadFromSnapshot skips the producers already expired;
- producer-state snapshots (minikafka.producer.snapshot.interval.ms): snapshot partitions
  whose producer state changed, so a crash replays only the batches after it; encoded on
  the loop, written on a worker thread (broker.runtime.offload), as are the snapshots of rolls;
- flush: partitions whose policy asks for it (log.flush.interval.ms, checked every
  log.flush.scheduler.interval.ms) and segments rolled since their last fsync;
- file deletion (on a worker thread): files of deleted segments and topics, each when its
  file.delete.delay.ms is up (Kafka's "delete-file" and "kafka-delete-logs" scheduler
  tasks); the task sleeps until the next one is due and is woken when an earlier one is
  added;
- group cleanup (offsets.retention.check.interval.ms): expired committed offsets and Empty
  groups without offsets go (Kafka's "expire-group-metadata" timer, first run one interval
  after the coordinator loads, as here);
- share-member fencing (with minikafka.share.version >= 1): a share-group member not heard
  from within its session timeout is fenced when its deadline passes, as Kafka's
  scheduleShareGroupSessionTimeout timer does; the task sleeps until the soonest deadline
  and is woken when a member joins.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from broker.core.state import BrokerState
from broker.lifecycle.log_cleaner_threads import LogCleanerThreads
from broker.runtime import offload
from protocol.errors import ErrorCode
from storage.partition_log import PartitionLog, PendingSnapshot

log = logging.getLogger(__name__)

NEVER = 2**63 - 1
ROLLED_FLUSH_CHECK_MS = 1000
# Segments one retention step deletes before the loop serves others (a few ms of renames).
RETENTION_STEP = 16


def now_ms() -> int:
    return int(time.time() * 1000)


class Background:
    def __init__(self, state: BrokerState) -> None:
        self.state = state
        self.tasks: list[asyncio.Task[None]] = []
        self._snapshot_writes: set[asyncio.Task[None]] = set()
        # The log cleaner's threads, from start() on.
        self.cleaner: LogCleanerThreads | None = None

    def start(self) -> None:
        config = self.state.config
        # Kafka drops expired producers while loading its snapshot (loadFromSnapshot with
        # isProducerExpired), so a producer that expired while the broker was down is
        # unknown from the first request on, not only after the first periodic check.
        self._expire()
        self._every(config.retention_check_interval_ms, "retention", self._retention)
        self._every(
            config.producer_id_expiration_check_interval_ms, "producer-expiration", self._expire
        )
        self._every(config.snapshot_interval_ms, "producer-snapshots", self._snapshots)
        self._every(
            config.offsets_retention_check_interval_ms, "group-cleanup", self._cleanup_groups
        )
        # Rolled segments are fsynced in the background (Kafka flushes them asynchronously
        # on roll), so this runs whatever the flush policy; flush.ms may ask for more often.
        self._every(
            min(config.flush_scheduler_interval_ms, ROLLED_FLUSH_CHECK_MS), "flush", self._flush
        )
        replication = self.state.replication
        if replication is not None:
            # Kafka's isr-expiration task: every half of replica.lag.time.max.ms.
            self._every(
                max(config.replica_lag_time_max_ms // 2, 1),
                "isr-expiration",
                replication.shrink_lagging,
            )
            if config.auto_leader_rebalance_enable:
                self._every(
                    config.leader_imbalance_check_interval_seconds * 1000,
                    "leader-rebalance",
                    self._rebalance_leaders,
                )
        loop = asyncio.get_running_loop()
        self.tasks.append(loop.create_task(self._delete_files(), name="delete-files"))
        if config.share_version >= 1:
            self.tasks.append(
                loop.create_task(self._fence_share_members(), name="share-member-fencing")
            )
        self.cleaner = LogCleanerThreads(self.state, self.retain)
        self.cleaner.start()
        # A roll's producer-state snapshot is written on a worker thread too.
        self.state.store.set_snapshot_writer(self._write_roll_snapshot)

    def _rebalance_leaders(self) -> None:
        """KRaft's maybeBalancePartitionLeaders: each partition whose preferred replica is
        alive and in the ISR but does not lead gets a preferred election (an epoch bump)."""
        cluster, replication = self.state.cluster, self.state.replication
        if cluster is None or replication is None:
            return
        moved = [
            key
            for key in cluster.imbalanced()
            if cluster.elect(*key, unclean=False) == ErrorCode.NONE
        ]
        if moved:
            log.info("leader rebalance: %d partition(s) back to their preferred leader", len(moved))
            replication.refresh()
            self.state.complete_parked_fetches()

    def _every(
        self, interval_ms: int, name: str, job: Callable[[], Coroutine[Any, Any, None] | None]
    ) -> None:
        if interval_ms >= NEVER:
            return

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_ms / 1000)
                try:
                    result = job()
                    if result is not None:
                        await result
                except asyncio.CancelledError:
                    raise
                except Exception:
                    # A failing housekeeping round must not kill the broker; the next round
                    # retries.
                    log.exception("background task %s failed", name)

        self.tasks.append(asyncio.get_running_loop().create_task(loop(), name=name))

    async def stop(self) -> None:
        self.state.store.set_snapshot_writer(None)
        if self.cleaner is not None:
            await self.cleaner.stop()
        # A partition's closing snapshot waits for a write still running on a worker.
        for task in [*self.tasks, *self._snapshot_writes]:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks.clear()

    async def _delete_files(self) -> None:
        deletes = self.state.store.delayed_deletes
        wake = asyncio.Event()
        deletes.on_schedule = wake.set
        try:
            while True:
                wake.clear()  # before looking, so a removal added meanwhile is not missed
                timeout = deletes.seconds_to_next()
                if timeout is None or timeout > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), timeout)
                # On a worker thread: removing a deleted topic's directories takes a while.
                # Each removal touches only files already out of every log.
                due = deletes.take_due()
                if due:
                    try:
                        await offload.run(_run_each, due)
                    except Exception:
                        log.exception("background task delete-files failed")
        finally:
            deletes.on_schedule = None

    async def _fence_share_members(self) -> None:
        shares = self.state.shares
        wake = asyncio.Event()
        shares.on_member_joined = wake.set
        try:
            while True:
                wake.clear()  # before looking, so a member joining meanwhile is not missed
                soonest = shares.next_member_deadline()
                timeout = None
                if soonest is not None:
                    timeout = max(soonest - int(time.monotonic() * 1000), 0) / 1000
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout)
                try:
                    if shares.expire_members():
                        shares.persist()
                except Exception:
                    log.exception("background task share-member-fencing failed")
                    await asyncio.sleep(1)  # not a busy loop on a deadline that stays due
        finally:
            shares.on_member_joined = None

    async def _retention(self) -> None:
        logs = self.state.store.partition_logs()
        if self.cleaner is not None and self.cleaner.enabled:
            logs = [plog for plog in logs if not plog.config.compact]
        await self.retain(logs)

    async def retain(self, logs: list[PartitionLog]) -> None:
        """Retention (Kafka's deleteOldSegments) of ``logs``."""
        now = now_ms()
        # Before the log start moves, a snapshot at or above the new start must be on disk
        # (PartitionLog._snapshot_before_the_log_start_moves). Encoded here, written on a
        # worker thread, so deleting segments on the loop afterwards needs none in line; a
        # failed write leaves the in-line one to apply_retention.
        pending = [
            job
            for plog in logs
            if plog.retention_due(now) and (job := plog.prepare_snapshot()) is not None
        ]
        if pending:
            await self._write_off_loop(pending)
        deleted = 0
        for plog in logs:
            # A few segments at a time, other clients served in between: renaming thousands
            # of expired segments' files at once held the loop for a second (Kafka deletes
            # on its scheduler thread, away from the request handlers).
            while not plog.closed:
                done = plog.apply_retention(now, max_segments=RETENTION_STEP)
                deleted += done
                if done:
                    await asyncio.sleep(0)
                if done < RETENTION_STEP:
                    break
        if deleted:
            log.info("retention deleted %d segment(s)", deleted)

    def _expire(self) -> None:
        expired = self.state.store.expire_producers(
            now_ms(), self.state.config.producer_id_expiration_ms
        )
        if expired:
            log.info("forgot %d expired producer id(s)", expired)

    async def _cleanup_groups(self) -> None:
        await self.state.groups.cleanup_group_metadata()

    def _write_roll_snapshot(self, pending: PendingSnapshot) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the loop (no roll happens there today): in line
            _write_snapshots([pending])
            pending.plog.finish_snapshot(pending)
            return
        task = loop.create_task(self._write_off_loop([pending]))
        self._snapshot_writes.add(task)
        task.add_done_callback(self._snapshot_writes.discard)

    async def _write_off_loop(self, pending: list[PendingSnapshot]) -> None:
        try:
            await offload.run(_write_snapshots, pending)
        finally:
            # Cancelled (shutdown) while writing: the unfinished ones stay pending, and the
            # partition's closing snapshot waits for them.
            for job in pending:
                if job.done.is_set():
                    job.plog.finish_snapshot(job)

    async def _snapshots(self) -> None:
        # Encoded on the loop (the producer state of this moment), written on a worker
        # thread: a write and its fsyncs per changed partition would hold the loop for
        # milliseconds each.
        pending = [
            job
            for plog in self.state.store.partition_logs()
            if (job := plog.prepare_snapshot()) is not None
        ]
        if pending:
            await self._write_off_loop(pending)

    async def _flush(self) -> None:
        now = now_ms()
        due = [plog for plog in self.state.store.partition_logs() if plog.needs_flush(now)]
        if due:
            await self.state.flusher.flush(due)


def _run_each(jobs: list[Callable[[], None]]) -> None:
    for job in jobs:
        job()


def _write_snapshots(pending: list[PendingSnapshot]) -> None:
    for job in pending:
        try:
            job.write()
        except OSError:
            # The partition keeps its previous snapshot state; the next round retries.
            log.exception("writing the producer-state snapshot of %s failed", job.plog.path)
