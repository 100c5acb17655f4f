"""The group coordinator: the single owner of every group's state and committed offsets.

Handlers call it; nothing else touches groups. It runs on the event loop only, so no locks:
each operation checks and changes state without awaiting in between (the only awaits are a
parked JoinGroup/SyncGroup answer and the fsync of committed offsets, both after the change).

- ``groups`` maps group id -> ``ClassicGroup`` (the state machine in ``classic``). A group
  exists once a member joined or an offset was committed for it, and until DeleteGroups or
  the periodic cleanup deletes it (Empty, with no offsets left).
- Committed offsets live in ``storage.committed_offsets``; an OffsetCommit is answered only
  after its records are fsynced, through the broker's grouped flusher (one fsync serves all
  commits waiting at that moment).
- One timer task applies session, join, sync and pending-member expirations; it sleeps until
  the earliest deadline and is woken after every operation that might move one earlier.
- Group metadata survives restarts as in Kafka: when a group becomes Stable (the leader's
  SyncGroup), becomes Empty, or a static member gets a new id in a Stable group, its record
  (generation, protocol, leader, members with subscriptions and assignments) is appended to
  the committed-offsets log and fsynced in the next shared flush round; the SyncGroup
  answers wait for that round, as Kafka answers only once the record is written. At start-up
  each group is rebuilt Stable with those members (or Empty), their sessions running from
  the load, so members carry on heartbeating with their member id and generation and no
  rebalance happens. A restart in the middle of a rebalance goes back to the last Stable
  generation; members then get ILLEGAL_GENERATION and rejoin, as with Kafka.
- KIP-848 consumer groups live in ``consumer`` (a ``ConsumerGroupManager``) beside the classic
  ones; a group id names one kind at a time. An Empty group of one kind is replaced by the
  other kind when a member of the other protocol joins, keeping its offsets (Kafka's
  maybeDeleteEmptyClassicGroup / maybeDeleteEmptyConsumerGroup). A non-empty one migrates
  online as ``group.consumer.migration.policy`` allows: a ConsumerGroupHeartbeat join
  upgrades a classic group (``_upgrade``, ``migration.to_consumer_group``), whose classic
  members are then served from the consumer group (``consumer_classic``); when the last
  consumer-protocol member leaves or is fenced, ``_downgrade`` makes it a classic group again
  and starts a rebalance. Otherwise a ConsumerGroupHeartbeat gets GROUP_ID_NOT_FOUND, a
  JoinGroup INCONSISTENT_GROUP_PROTOCOL, as Kafka's.
- ``cleanup_group_metadata`` is Kafka's GroupCoordinatorShard.cleanupGroupMetadata, run by
  the broker's background task every offsets.retention.check.interval.ms: the offsets that
  ``offset_expiration`` finds expired are tombstoned in the committed-offsets log, and a
  group left without offsets (or that never had any) is deleted if it is Empty (Kafka's
  GroupMetadataManager.maybeDeleteGroup), so neither grows without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from broker.coordinator.groups import consumer_classic, consumer_protocol, migration
from broker.coordinator.groups.classic import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
    GroupSettings,
    GroupState,
    JoinRequest,
    JoinResult,
    Member,
    SyncResult,
    wall_ms,
)
from broker.coordinator.groups.consumer import ConsumerGroup
from broker.coordinator.groups.consumer_manager import (
    ConsumerGroupManager,
    ConsumerGroupSettings,
    GroupConfigs,
    HeartbeatRequest,
    HeartbeatResult,
    Resolution,
    TopicsView,
)
from broker.coordinator.groups.offset_expiration import (
    ExpiringGroup,
    ModernGroupExpiration,
    expired_offsets,
)
from broker.runtime import offload
from broker.runtime.flusher import Flusher
from protocol.errors import ErrorCode
from storage.committed_offsets import (
    CommittedOffset,
    CommittedOffsets,
    GroupRecord,
    MemberRecord,
    PendingCompaction,
    RecordTooLarge,
)

log = logging.getLogger(__name__)

# Kafka's offset.metadata.max.bytes default.
OFFSET_METADATA_MAX_BYTES = 4096
GROUP_ID_NOT_FOUND = ErrorCode.GROUP_ID_NOT_FOUND
NON_EMPTY_GROUP = ErrorCode.NON_EMPTY_GROUP
GROUP_SUBSCRIBED_TO_TOPIC = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass(slots=True)
class OffsetToCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(slots=True)
class FetchedOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    error: int = ErrorCode.NONE


class GroupCoordinator:
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
        # Wall-clock ms: commit timestamps, group state timestamps, offset expiration.
        self._clock = clock
        self.groups: dict[str, ClassicGroup] = {}
        self._wake = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None
        self._compaction: asyncio.Task[None] | None = None
        # The flush round that will cover the group records written since it was created
        # (None once it started), and, per group, the round its last record waits for.
        self._next_flush: asyncio.Task[None] | None = None
        self._group_flushes: dict[str, asyncio.Task[None]] = {}
        # Regex resolutions running on a worker thread.
        self._resolutions: set[asyncio.Task[Resolution]] = set()
        self.closed = False
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

    def _resolve_off_loop(
        self, work: Callable[[], Resolution], done: Callable[[Resolution | None], None]
    ) -> None:
        """Regexes are matched on a worker thread (Kafka resolves them on the coordinator's
        executor), so no request waits for them; ``done`` runs back on the loop."""
        task = asyncio.get_running_loop().create_task(offload.run(work))
        self._resolutions.add(task)

        def finished(task: asyncio.Task[Resolution]) -> None:
            self._resolutions.discard(task)
            if task.cancelled() or self.closed:
                return
            error = task.exception()
            if error is not None:
                log.error("Couldn't update regular expressions due to: %s", error)
                done(None)
                return
            done(task.result())

        task.add_done_callback(finished)

    async def close(self) -> None:
        self.shutdown()
        for resolution in set(self._resolutions):
            resolution.cancel()
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
            self._timer = None
        # Let group-record flushes already scheduled, and a compaction under way, finish
        # before the file is closed.
        await asyncio.gather(*set(self._group_flushes.values()), return_exceptions=True)
        if self._compaction is not None:
            await asyncio.gather(self._compaction, return_exceptions=True)
        self.store.close()

    async def abandon(self) -> None:
        """Stop without answering or writing anything (a crash, for fault injection)."""
        self.closed = True
        for resolution in set(self._resolutions):
            resolution.cancel()
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
            self._timer = None
        for task in set(self._group_flushes.values()):
            task.cancel()
        if self._compaction is not None:
            self._compaction.cancel()
        self.store.close_unclean()

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

    def _maybe_compact(self) -> None:
        """Compaction off the loop (issue 13): the live entries are copied here, encoded and
        written on a worker thread; the records committed meanwhile are added at the end."""
        if self._compaction is not None:
            return
        pending = self.store.prepare_compaction()
        if pending is not None:
            self._compaction = asyncio.get_running_loop().create_task(self._compact(pending))

    async def _compact(self, pending: PendingCompaction) -> None:
        try:
            try:
                await offload.run(pending.write)
            except OSError:
                log.exception("committed offsets: compaction failed")
            try:
                self.store.finish_compaction(pending)
            except OSError:
                log.exception("committed offsets: compaction failed")
        finally:
            self._compaction = None

    def _poke(self) -> None:
        self._wake.set()

    def _new_group(self, group_id: str, record: GroupRecord | None) -> ClassicGroup:
        return ClassicGroup(
            group_id,
            self.settings,
            generation=record.generation if record is not None else 0,
            protocol_type=record.protocol_type if record is not None else None,
            on_change=self._persist_group,
            clock=self._clock,
        )

    def _load_group(self, group_id: str, record: GroupRecord | None, now: int) -> ClassicGroup:
        group = self._new_group(group_id, record)
        if record is not None:
            # As Kafka's replay of GroupMetadataValue: the time of the state it was written
            # in, so an Empty group's offsets expire counted from before the restart. A
            # group known only by its offsets gets the load time (a new group), which
            # matters little: without a protocol type its offsets count from their commits.
            group.state_timestamp_ms = record.state_timestamp_ms
        if record is None or not record.members or record.protocol_name is None:
            return group
        protocol_type = record.protocol_type or ""
        members = [
            Member(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                protocol_type=protocol_type,
                # Kafka keeps only the selected protocol's metadata, so a member rejoining
                # with its full protocol list after a restart triggers a rebalance there too.
                protocols=[(record.protocol_name, m.subscription)],
                assignment=m.assignment,
            )
            for m in record.members
        ]
        group.restore(record.protocol_name, record.leader, members, now)
        log.info(
            "group %s: loaded Stable, generation %d, %d member(s)",
            group_id,
            group.generation_id,
            len(members),
        )
        return group

    def _persist_group(self, group: ClassicGroup) -> None:
        record = _group_record(group)
        try:
            self.store.put_group(group.group_id, record)
        except RecordTooLarge:
            # Too big to store (Kafka fails the SyncGroup then): keep at least the generation;
            # after a restart the members get UNKNOWN_MEMBER_ID and rejoin.
            log.warning("group %s: metadata too large to keep its members", group.group_id)
            self.store.put_group(
                group.group_id,
                GroupRecord(
                    record.protocol_type,
                    record.generation,
                    state_timestamp_ms=record.state_timestamp_ms,
                ),
            )
        except OSError:
            log.exception("group %s: writing the group record failed", group.group_id)
            return
        self._schedule_flush(group.group_id)

    def _persist_consumer_group(self, group: ConsumerGroup) -> None:
        try:
            self.store.put_consumer_group(group.group_id, group.record())
        except (OSError, RecordTooLarge):
            log.exception("group %s: writing the consumer group record failed", group.group_id)
            return
        self._schedule_flush(group.group_id)

    def _schedule_flush(self, group_id: str) -> None:
        # One task per burst of writes: it starts at the next loop iteration, so every record
        # written before then shares its fsync round (with any offset commits waiting too).
        task = self._next_flush
        if task is None:
            task = self._next_flush = asyncio.get_running_loop().create_task(self._flush_records())
            task.add_done_callback(self._flush_done)
        self._group_flushes[group_id] = task

    async def _flush_records(self) -> None:
        self._next_flush = None  # records written from now on need a later round
        await self._flush()

    def _flush_done(self, task: asyncio.Task[None]) -> None:
        for group_id in [g for g, t in self._group_flushes.items() if t is task]:
            del self._group_flushes[group_id]
        if not task.cancelled():
            task.exception()  # retrieved: the flusher has logged it, waiters re-raise it

    async def _durable(self, group_id: str) -> None:
        """Wait until the group's last metadata record is fsynced."""
        task = self._group_flushes.get(group_id)
        if task is not None:
            await asyncio.shield(task)

    def _refusal(self, group_id: str) -> ErrorCode | None:
        """Kafka's first checks of every group request: a coordinator that is shutting
        down answers NOT_COORDINATOR (the client finds it again), an empty id
        INVALID_GROUP_ID."""
        if self.closed:
            return ErrorCode.NOT_COORDINATOR
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        return None

    def _live(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if group is not None and group.state is not GroupState.DEAD else None

    # --- membership ------------------------------------------------------------------------

    async def join(self, group_id: str, req: JoinRequest) -> JoinResult:
        refused = self._refusal(group_id)
        if refused is not None:
            return JoinResult(refused, req.member_id)
        if not (
            self.settings.min_session_timeout_ms
            <= req.session_timeout_ms
            <= self.settings.max_session_timeout_ms
        ):
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id)
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            if not consumer_group.is_empty():
                # classicGroupJoinToConsumerGroup: answered at once, once its record is
                # written.
                joined = consumer_classic.join(self.consumer, consumer_group, req, monotonic_ms())
                self._poke()
                if joined.error == ErrorCode.NONE:
                    await self._durable(group_id)
                return joined
            self._drop_empty_consumer_group(group_id)
        group = self._live(group_id)
        if group is None:
            if req.member_id != "":
                # Kafka: a known member id for a group that does not exist.
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id)
            group = self.groups[group_id] = self._new_group(group_id, None)
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        group.join(req, waiter, monotonic_ms())
        self._poke()
        result = await waiter
        if result.error == ErrorCode.NONE:
            await self._durable(group_id)
        return result

    async def sync(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        refused = self._refusal(group_id)
        if refused is not None:
            return SyncResult(refused)
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            synced = consumer_classic.sync(
                self.consumer,
                consumer_group,
                member_id,
                group_instance_id,
                generation_id,
                protocol_type,
                protocol_name,
                monotonic_ms(),
            )
            self._poke()
            return synced
        group = self._live(group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        waiter: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        group.sync(
            member_id,
            group_instance_id,
            generation_id,
            protocol_type,
            protocol_name,
            assignments,
            waiter,
            monotonic_ms(),
        )
        self._poke()
        result = await waiter
        if result.error == ErrorCode.NONE:
            await self._durable(group_id)
        return result

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> int:
        refused = self._refusal(group_id)
        if refused is not None:
            return refused
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            answer = consumer_classic.heartbeat(
                self.consumer,
                consumer_group,
                member_id,
                group_instance_id,
                generation_id,
                monotonic_ms(),
            )
            self._poke()
            return answer
        group = self._live(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = group.heartbeat(member_id, group_instance_id, generation_id, monotonic_ms())
        self._poke()
        return error

    def leave(
        self, group_id: str, members: list[tuple[str, str | None, str | None]]
    ) -> tuple[int, list[int]]:
        """(top-level error, per-member errors) for (member_id, instance_id, reason) items."""
        refused = self._refusal(group_id)
        if refused is not None:
            return refused, []
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            errors = consumer_classic.leave(self.consumer, consumer_group, members)
            self._poke()
            return ErrorCode.NONE, errors
        group = self._live(group_id)
        if group is None:
            # Kafka 4.0 (GroupCoordinatorService.leaveGroup): "group not found" becomes
            # UNKNOWN_MEMBER_ID for each member, not a top-level error.
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        now = monotonic_ms()
        errors = [
            group.leave(member_id, instance_id, now, f"left the group ({reason or 'no reason'})")
            for member_id, instance_id, reason in members
        ]
        self._poke()
        return ErrorCode.NONE, errors

    # --- offsets ---------------------------------------------------------------------------

    def validate_commit(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        version: int,
    ) -> int:
        """Kafka's OffsetMetadataManager.validateOffsetCommit + ClassicGroup's (or
        ConsumerGroup's, with member epochs), in order."""
        refused = self._refusal(group_id)
        if refused is not None:
            return refused
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self.consumer.validate_commit(
                consumer_group, member_id, generation_id, version, txn=False
            )
        group = self._live(group_id)
        if group is None:
            if generation_id < 0:
                # A simple consumer (no group management): the group is created for it.
                self.groups[group_id] = self._new_group(group_id, None)
                return ErrorCode.NONE
            # v9+ says so; older versions keep the historical ILLEGAL_GENERATION.
            return GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
        if generation_id < 0 and group.is_empty():
            return ErrorCode.NONE
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            error = group.validate_member(member_id, group_instance_id)
            if error:
                return error
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not group.is_empty():
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def validate_txn_commit(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> int:
        """TxnOffsetCommit: OffsetMetadataManager.validateTransactionalOffsetCommit and
        ClassicGroup.validateOffsetCommit(isTransactional=true): no member information (v0-2)
        is accepted in any state and the rebalance state is not checked."""
        refused = self._refusal(group_id)
        if refused is not None:
            return refused
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return self.consumer.validate_commit(
                consumer_group, member_id, generation_id, 5, txn=True
            )
        group = self.groups.get(group_id)
        if group is None:
            if generation_id < 0:
                self.groups[group_id] = self._new_group(group_id, None)
                return ErrorCode.NONE
            return ErrorCode.ILLEGAL_GENERATION
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_empty():
            return ErrorCode.NONE
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            error = group.validate_member(member_id, group_instance_id)
            if error:
                return error
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    async def commit(
        self, group_id: str, offsets: list[OffsetToCommit], retention_time_ms: int = -1
    ) -> list[int]:
        """Store validated offsets; returns once they are on disk. Per-offset errors.

        ``retention_time_ms`` (OffsetCommit v2-4) other than -1 gives the offsets an expire
        timestamp that replaces offsets.retention.minutes for them, as Kafka 4.0's
        OffsetMetadataManager.expireTimestampMs (-1 is DEFAULT_RETENTION_TIME)."""
        now = self._clock()
        expire = None if retention_time_ms == -1 else now + retention_time_ms
        errors: list[int] = []
        accepted: list[tuple[str, int, CommittedOffset]] = []
        for item in offsets:
            size = len(item.metadata.encode()) if item.metadata is not None else 0
            if size > OFFSET_METADATA_MAX_BYTES:
                errors.append(ErrorCode.OFFSET_METADATA_TOO_LARGE)
                continue
            errors.append(ErrorCode.NONE)
            value = CommittedOffset(item.offset, item.leader_epoch, item.metadata, now, expire)
            accepted.append((item.topic, item.partition, value))
        if accepted:
            self.store.commit(group_id, accepted)
            await self._flush()
        return errors

    async def _flush(self) -> None:
        await self._flusher.flush([self.store])

    def fetch_offsets(
        self,
        group_id: str,
        partitions: list[tuple[str, int]] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> tuple[int, list[FetchedOffset]]:
        """(group error, offsets); ``partitions`` None = everything the group committed.
        The member id and epoch (OffsetFetch v9) are checked for consumer groups only
        (ConsumerGroup.validateOffsetFetch; ClassicGroup's ignores them)."""
        refused = self._refusal(group_id)
        if refused is not None:
            return refused, []
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            error = self.consumer.validate_fetch(consumer_group, member_id, member_epoch)
            if error:
                return error, []
        committed = self.store.offsets(group_id)
        if partitions is None:
            return ErrorCode.NONE, [
                FetchedOffset(t, p, v.offset, v.leader_epoch, v.metadata)
                for (t, p), v in sorted(committed.items())
            ]
        out = []
        for topic, partition in partitions:
            value = committed.get((topic, partition))
            if value is None:
                # Nothing committed: offset -1 and empty metadata, no error (Kafka).
                out.append(FetchedOffset(topic, partition, -1, -1, ""))
            else:
                out.append(
                    FetchedOffset(
                        topic, partition, value.offset, value.leader_epoch, value.metadata
                    )
                )
        return ErrorCode.NONE, out

    async def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, list[int]]:
        """OffsetDelete: (group error, per-partition errors)."""
        refused = self._refusal(group_id)
        if refused is not None:
            return refused, []
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            # ConsumerGroup.validateOffsetDelete accepts any state; subscribed topics are kept.
            subscribed: set[str] | None = set(consumer_group.subscription_metadata)
            return await self._delete_unsubscribed(group_id, partitions, subscribed)
        group = self._live(group_id)
        if group is None:
            return GROUP_ID_NOT_FOUND, []
        if not group.is_empty() and group.protocol_type != "consumer":
            return NON_EMPTY_GROUP, []
        subscribed = group.subscribed_topics() if not group.is_empty() else set()
        return await self._delete_unsubscribed(group_id, partitions, subscribed)

    async def _delete_unsubscribed(
        self, group_id: str, partitions: list[tuple[str, int]], subscribed: set[str] | None
    ) -> tuple[int, list[int]]:
        errors: list[int] = []
        deletable = []
        for topic, partition in partitions:
            if subscribed is None or topic in subscribed:
                errors.append(GROUP_SUBSCRIBED_TO_TOPIC)
            else:
                errors.append(ErrorCode.NONE)
                deletable.append((topic, partition))
        if deletable:
            self.store.delete_offsets(group_id, deletable)
            await self._flush()
        return ErrorCode.NONE, errors

    async def cleanup_group_metadata(self) -> None:
        """Kafka's GroupCoordinatorShard.cleanupGroupMetadata: expire offsets, then delete
        each Empty group that has no offsets left (or never had any). Tombstones reach the
        disk in one shared fsync round, so expired offsets stay gone after a restart."""
        if self.closed:
            return
        started = monotonic_ms()
        now = self._clock()
        tombstones = deleted = 0
        candidates: list[tuple[str, ExpiringGroup, bool]] = [
            (group_id, group, group.is_empty())
            for group_id, group in self.groups.items()
            if group.state is not GroupState.DEAD
        ]
        candidates += [
            (group_id, ModernGroupExpiration(self.consumer.subscribed_topics(g)), g.is_empty())
            for group_id, g in self.consumer.groups.items()
        ]
        for group_id, view, empty in candidates:
            expired, none_left = expired_offsets(
                view, self.store.offsets(group_id), now, self.settings.offsets_retention_ms
            )
            if expired:
                self.store.delete_offsets(group_id, expired)
                tombstones += len(expired)
                log.info(
                    "group %s: %d committed offset(s) expired: %s",
                    group_id,
                    len(expired),
                    ", ".join(f"{t}-{p}" for t, p in expired),
                )
            if none_left and empty:
                self.store.delete_group(group_id)  # first: a failed write keeps the group
                classic = self.groups.pop(group_id, None)
                if classic is not None:
                    classic.mark_dead()
                self.consumer.groups.pop(group_id, None)
                deleted += 1
                log.info("group %s: Empty without committed offsets: deleted", group_id)
        if tombstones or deleted:
            log.info(
                "group cleanup: %d offset(s) expired and %d group(s) deleted in %d ms",
                tombstones,
                deleted,
                monotonic_ms() - started,
            )
            await self._flush()

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

    # --- KIP-848 consumer groups ----------------------------------------------------------

    async def consumer_heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        if self.closed:
            # GroupCoordinatorService answers COORDINATOR_NOT_AVAILABLE when not active.
            return HeartbeatResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        classic = self._live(req.group_id) if req.group_id else None
        max_size = self.consumer.settings.max_size
        if (
            classic is not None
            and req.member_epoch == 0
            and len(classic.members) == max_size
            and self.consumer.valid_request(req)
        ):
            # Kafka converts (the group is not over the limit) then finds it full and
            # discards the whole change: the group stays classic.
            return HeartbeatResult(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {max_size} members.",
            )
        if classic is not None and self.consumer.valid_request(req):
            refusal = self._classic_in_the_way(classic, req.member_epoch == 0)
            if refusal is not None:
                return HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, refusal)
        result = self.consumer.heartbeat(req, monotonic_ms())
        self._poke()
        for group_id in result.changed:
            await self._durable(group_id)
        return result

    def _classic_in_the_way(self, classic: ClassicGroup, joining: bool) -> str | None:
        """Kafka's getOrMaybeCreateConsumerGroup for a group id held by a classic group: an
        Empty one is replaced (its offsets stay); else the answer's message."""
        group_id = classic.group_id
        if not joining:
            return f"Group {group_id} is not a consumer group."
        if not classic.is_empty():
            return self._upgrade(classic)
        classic.mark_dead()
        del self.groups[group_id]
        log.info("group %s: converted the empty classic group to a consumer group", group_id)
        return None

    def _upgrade(self, classic: ClassicGroup) -> str | None:
        """Kafka's validateOnlineUpgrade + convertToConsumerGroup: the classic group becomes
        a consumer group with its members (still served through the classic APIs); members
        parked in JoinGroup/SyncGroup get REBALANCE_IN_PROGRESS and rejoin. Else the
        GROUP_ID_NOT_FOUND message."""
        group_id = classic.group_id
        refusal = None
        if not migration.upgrade_enabled(self.consumer.settings.migration_policy):
            refusal = "online upgrade is disabled"
        elif classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            refusal = "the group does not use the consumer embedded protocol"
        elif len(classic.members) > self.consumer.settings.max_size:
            refusal = "the group size exceeds the consumer group maximum size"
        if refusal is not None:
            log.info(
                "Cannot upgrade classic group %s to consumer group because %s.", group_id, refusal
            )
            return f"Cannot upgrade classic group {group_id} to consumer group because {refusal}."
        try:
            converted = migration.to_consumer_group(classic, self.consumer.topics())
        except consumer_protocol.MalformedProtocol as e:
            log.warning("Cannot upgrade classic group %s: %s", group_id, e)
            return (
                f"Cannot upgrade classic group {group_id} to consumer group because the "
                "embedded consumer protocol is malformed."
            )
        except migration.CustomAssignorInUse:
            return (
                f"Cannot upgrade classic group {group_id} to consumer group because an "
                "unsupported custom assignor is in use. Please refer to the documentation or "
                "switch to a default assignor before re-attempting the upgrade."
            )
        classic.unload(ErrorCode.REBALANCE_IN_PROGRESS)
        classic.mark_dead()
        del self.groups[group_id]
        self.consumer.load(converted, monotonic_ms())
        self._persist_consumer_group(converted)
        log.info("[GroupId %s] Converted the classic group to a consumer group.", group_id)
        return None

    def _downgrade(self, group: ConsumerGroup, leaving: set[str], rebalance: bool) -> None:
        """Kafka's convertToClassicGroup: a Stable classic group at the group epoch with the
        remaining (classic) members and their target assignments, written, then a rebalance
        so they rejoin (for members leaving, or a replacing static member whose subscription
        differs)."""
        group_id = group.group_id
        names = {tid: name for name, (tid, _) in self.consumer.topics().items()}
        protocol, members = migration.to_classic_members(group, leaving, names)
        del self.consumer.groups[group_id]
        classic = self._new_group(group_id, None)
        classic.generation_id = group.group_epoch
        classic.protocol_type = CONSUMER_PROTOCOL_TYPE
        now = monotonic_ms()
        classic.restore(protocol, None, members, now)
        self.groups[group_id] = classic
        self._persist_group(classic)
        if rebalance and leaving:
            classic.prepare_rebalance(
                now, f"Downgrade group {group_id} from consumer to classic for member leaving."
            )
        elif rebalance:
            classic.prepare_rebalance(
                now,
                f"Downgrade group {group_id} from consumer to classic for static member "
                "replacement with different subscription.",
            )
        log.info("[GroupId %s] Converted the consumer group to a classic group.", group_id)

    def _drop_empty_consumer_group(self, group_id: str) -> None:
        """An Empty consumer group gives way to a classic group of the same id (Kafka's
        maybeDeleteEmptyConsumerGroup); the classic group's record replaces it on disk."""
        del self.consumer.groups[group_id]
        self.groups[group_id] = self._new_group(group_id, None)
        log.info("group %s: converted the empty consumer group to a classic group", group_id)

    def describe_consumer_group(self, group_id: str) -> ConsumerGroup | str:
        """The group, or the GROUP_ID_NOT_FOUND message Kafka gives."""
        group = self.consumer.groups.get(group_id)
        if group is not None:
            return group
        if self._live(group_id) is not None:
            return f"Group {group_id} is not a consumer group."
        return f"Group {group_id} not found."


def _group_record(group: ClassicGroup) -> GroupRecord:
    """Kafka's GroupMetadataValue for the group: members only while it is Stable."""
    if group.state is not GroupState.STABLE:
        return GroupRecord(
            group.protocol_type, group.generation_id, state_timestamp_ms=group.state_timestamp_ms
        )
    return GroupRecord(
        group.protocol_type,
        group.generation_id,
        group.protocol_name,
        group.leader_id,
        tuple(
            MemberRecord(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                subscription=m.metadata(group.protocol_name),
                assignment=m.assignment,
            )
            for m in group.members.values()
        ),
        group.state_timestamp_ms,
    )
