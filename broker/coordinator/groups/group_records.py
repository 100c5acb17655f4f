"""Group metadata in the coordinator's store (``__consumer_offsets``): written, fsynced in
shared rounds, read back at start-up; and the compaction of a store kept in a file of its
own (tests; the topic has its log cleaner instead).

- Group metadata survives restarts as in Kafka: when a group becomes Stable (the leader's
  SyncGroup), becomes Empty, or a static member gets a new id in a Stable group, its record
  (``_group_record``, Kafka's GroupMetadataValue: generation, protocol, leader, members with
  subscriptions and assignments) is appended to the log and fsynced in the next shared flush
  round; the SyncGroup answers wait for that round (``_durable``), as Kafka answers only once
  the record is written. A KIP-848 consumer group writes its own record the same way.
- At start-up (``_load_group``) each group is rebuilt Stable with those members (or Empty),
  their sessions running from the load, so members carry on heartbeating with their member
  id and generation and no rebalance happens. A restart in the middle of a rebalance goes
  back to the last Stable generation; members then get ILLEGAL_GENERATION and rejoin, as
  with Kafka.
- ``_flush`` is one round of the broker's grouped flusher: one fsync serves every offset
  commit and group record waiting at that moment.
- ``_maybe_compact`` rewrites a file-kept store without its dead entries, the writing on a
  worker thread so no request waits for it (the broker's topic store never needs it).
"""

from __future__ import annotations

import asyncio
import logging

from broker.coordinator.groups.classic import ClassicGroup, GroupState, Member
from broker.coordinator.groups.consumer import ConsumerGroup
from broker.coordinator.groups.coordinator_base import CoordinatorBase
from broker.runtime import offload
from storage.committed_offsets import GroupRecord, MemberRecord, PendingCompaction, RecordTooLarge

log = logging.getLogger(__name__)


class GroupRecords(CoordinatorBase):
    """Writing, flushing and loading group records; compacting the log."""

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

    async def _flush(self) -> None:
        await self._flusher.flush([self.store])

    def _maybe_compact(self) -> None:
        """Compaction off the loop: the live entries are copied here, encoded and written on
        a worker thread; the records committed meanwhile are added at the end."""
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
