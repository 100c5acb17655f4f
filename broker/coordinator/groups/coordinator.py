"""The group coordinator: the single owner of every group's state and committed offsets.

Handlers call it; nothing else touches groups. It runs on the event loop only, so no locks:
each operation checks and changes state without awaiting in between (the only awaits are a
parked JoinGroup/SyncGroup answer and the fsync of committed offsets, both after the change).

- ``groups`` maps group id -> ``ClassicGroup`` (the state machine in ``classic``). A group
  exists once a member joined or an offset was committed for it, and until DeleteGroups or
  the periodic cleanup deletes it (Empty, with no offsets left). ``consumer`` holds the
  KIP-848 consumer groups; a group id names one kind at a time.
- One timer task applies session, join, sync and pending-member expirations; it sleeps until
  the earliest deadline and is woken after every operation that might move one earlier.

``GroupCoordinator`` is made of parts, one job each, that it inherits (every part reads the
same tables and store, and the hot paths, OffsetCommit and Heartbeat, pay no extra call):

- ``classic_requests``: JoinGroup, SyncGroup, Heartbeat, LeaveGroup;
- ``consumer_requests``: ConsumerGroupHeartbeat and ConsumerGroupDescribe, regex
  resolution, the online migration between classic and consumer groups;
- ``offsets``: OffsetCommit and TxnOffsetCommit checks and writes, OffsetFetch,
  OffsetDelete, the periodic expiry of offsets and Empty groups;
- ``group_records``: group records in ``__consumer_offsets`` (written, flushed in shared
  rounds, loaded at start-up);
- ``coordinator_base``: the fields they share and the first checks of every request.

This module: construction (groups loaded from the store), the timer task, shutdown, and the
admin requests (DescribeGroups, ListGroups, DeleteGroups).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from broker.coordinator.groups.classic import ClassicGroup, GroupSettings, GroupState, wall_ms
from broker.coordinator.groups.classic_requests import ClassicRequests
from broker.coordinator.groups.consumer import ConsumerGroup
from broker.coordinator.groups.consumer_manager import (
    ConsumerGroupManager,
    ConsumerGroupSettings,
    GroupConfigs,
    TopicsView,
)
from broker.coordinator.groups.consumer_requests import ConsumerGroupRequests
from broker.coordinator.groups.coordinator_base import monotonic_ms
from broker.coordinator.groups.offsets import (
    GROUP_ID_NOT_FOUND,
    NON_EMPTY_GROUP,
    OFFSET_METADATA_MAX_BYTES,
    FetchedOffset,
    GroupOffsets,
    OffsetToCommit,
)
from broker.runtime.flusher import Flusher
from protocol.errors import ErrorCode
from storage.committed_offsets import CommittedOffsets

# Importers take these from here, wherever the parts define them.
__all__ = [
    "OFFSET_METADATA_MAX_BYTES",
    "FetchedOffset",
    "GroupCoordinator",
    "OffsetToCommit",
    "monotonic_ms",
]

log = logging.getLogger(__name__)


class GroupCoordinator(ClassicRequests, GroupOffsets, ConsumerGroupRequests):
    """Every request path comes from the parts; the fields they share are declared in
    ``CoordinatorBase`` and set here."""

    def __init__(
        self,
        settings: GroupSettings,
        store: CommittedOffsets,
        flusher: Flusher,
        consumer_settings: ConsumerGroupSettings | None = None,
        topics: TopicsView | None = None,
        clock: Callable[[], int] = wall_ms,
        group_configs: GroupConfigs | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self._flusher = flusher
        self._clock = clock
        self.groups = {}
        self._wake = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None
        self._compaction = None
        self._next_flush = None
        self._group_flushes = {}
        self._resolutions = set()
        self.closed = False
        self.elsewhere = None
        now = monotonic_ms()
        for group_id, record in store.groups().items():
            self.groups[group_id] = self._load_group(group_id, record, now)
        self.consumer = ConsumerGroupManager(
            consumer_settings or ConsumerGroupSettings(),
            topics or dict,
            self._persist_consumer_group,
            group_configs,
            off_loop=self._resolve_off_loop,
        )
        for group_id, consumer_record in store.consumer_groups().items():
            self.consumer.load(ConsumerGroup.restore(group_id, consumer_record), now)
        self.consumer.on_downgrade = self._downgrade

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._timer = asyncio.get_running_loop().create_task(self._run_timers(), name="groups")

    def shutdown(self) -> None:
        """Answer parked JoinGroup/SyncGroup requests: NOT_COORDINATOR makes clients
        rediscover the coordinator (the restarted broker), as when Kafka moves a group."""
        self.closed = True
        for group in self.groups.values():
            group.unload(ErrorCode.NOT_COORDINATOR)

    async def close(self) -> None:
        self.shutdown()
        await self._stop_tasks()
        # Let group-record flushes already scheduled, and a compaction under way, finish
        # before the file is closed.
        await asyncio.gather(*set(self._group_flushes.values()), return_exceptions=True)
        if self._compaction is not None:
            await asyncio.gather(self._compaction, return_exceptions=True)
        self.store.close()

    async def abandon(self) -> None:
        """Stop without answering or writing anything (a crash, for fault injection)."""
        self.closed = True
        await self._stop_tasks()
        for task in set(self._group_flushes.values()):
            task.cancel()
        if self._compaction is not None:
            self._compaction.cancel()
        self.store.close_unclean()

    async def _stop_tasks(self) -> None:
        """Cancel the regex resolutions and stop the timer task, for close and abandon."""
        for resolution in set(self._resolutions):
            resolution.cancel()
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
            self._timer = None

    async def _run_timers(self) -> None:
        # Not ``while True``: Python 3.11's asyncio.wait_for swallows a cancel that arrives
        # as the event it waits on is set (a poke just before close()), so the loop also
        # ends on its own once the coordinator is closed.
        while not self.closed:
            now = monotonic_ms()
            deadlines = [d for g in self.groups.values() if (d := g.next_deadline()) is not None]
            consumer_deadline = self.consumer.next_deadline()
            if consumer_deadline is not None:
                deadlines.append(consumer_deadline)
            timeout = None if not deadlines else max(min(deadlines) - now, 0) / 1000
            self._wake.clear()
            if timeout is None or timeout > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
            now = monotonic_ms()
            for group in list(self.groups.values()):
                try:
                    group.tick(now)
                except Exception:
                    log.exception("group %s: timer failed", group.group_id)
            try:
                self.consumer.tick(now)
            except Exception:
                log.exception("consumer groups: timer failed")
            self._maybe_compact()

    # --- admin -----------------------------------------------------------------------------

    def describe(self, group_id: str) -> ClassicGroup | None:
        return self._live(group_id)

    def list_groups(self) -> list[ClassicGroup]:
        return [g for g in self.groups.values() if g.state is not GroupState.DEAD]

    async def delete_groups(self, group_ids: list[str]) -> list[int]:
        errors: list[int] = []
        deleted = False
        for group_id in group_ids:
            if self.closed:
                errors.append(ErrorCode.NOT_COORDINATOR)
                continue
            if not group_id:
                errors.append(ErrorCode.INVALID_GROUP_ID)
                continue
            consumer_group = self.consumer.groups.get(group_id)
            if consumer_group is not None:
                if not consumer_group.is_empty():
                    errors.append(NON_EMPTY_GROUP)
                    continue
                del self.consumer.groups[group_id]
                self.store.delete_group(group_id)
                deleted = True
                errors.append(ErrorCode.NONE)
                log.info("group %s deleted", group_id)
                continue
            group = self._live(group_id)
            if group is None:
                errors.append(GROUP_ID_NOT_FOUND)
                continue
            if not group.is_empty():
                errors.append(NON_EMPTY_GROUP)
                continue
            group.mark_dead()
            del self.groups[group_id]
            # Tombstones for the group and every offset it committed.
            self.store.delete_group(group_id)
            deleted = True
            errors.append(ErrorCode.NONE)
            log.info("group %s deleted", group_id)
        if deleted:
            await self._flush()
        return errors
