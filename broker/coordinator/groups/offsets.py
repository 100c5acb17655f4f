"""Committed offsets at the coordinator: OffsetCommit and TxnOffsetCommit (the checks, then
the write), OffsetFetch, OffsetDelete, and their periodic expiry.

- The checks are Kafka's OffsetMetadataManager.validateOffsetCommit and
  validateTransactionalOffsetCommit, then the group's own (ClassicGroup's, or
  ConsumerGroup's with member epochs). A commit without a generation for an unknown group
  (a simple consumer, no group management) creates the group, as Kafka does.
- Committed offsets live in ``storage.committed_offsets`` (the broker's: kept in
  ``__consumer_offsets``); an OffsetCommit is answered only after its records are
  fsynced, through the broker's grouped flusher (one fsync serves all commits waiting at
  that moment).
- ``cleanup_group_metadata`` is Kafka's GroupCoordinatorShard.cleanupGroupMetadata, run by
  the broker's background task every offsets.retention.check.interval.ms: the offsets that
  ``offset_expiration`` finds expired are tombstoned in ``__consumer_offsets``, and a
  group left without offsets (or that never had any) is deleted if it is Empty (Kafka's
  GroupMetadataManager.maybeDeleteGroup), so neither grows without bound.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from broker.coordinator.groups.classic import GroupState
from broker.coordinator.groups.coordinator_base import monotonic_ms
from broker.coordinator.groups.group_records import GroupRecords
from broker.coordinator.groups.offset_expiration import (
    ExpiringGroup,
    ModernGroupExpiration,
    expired_offsets,
)
from protocol.errors import ErrorCode
from storage.committed_offsets import CommittedOffset

log = logging.getLogger(__name__)

# Kafka's offset.metadata.max.bytes default.
OFFSET_METADATA_MAX_BYTES = 4096
GROUP_ID_NOT_FOUND = ErrorCode.GROUP_ID_NOT_FOUND
NON_EMPTY_GROUP = ErrorCode.NON_EMPTY_GROUP
GROUP_SUBSCRIBED_TO_TOPIC = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC


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


class GroupOffsets(GroupRecords):
    """OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete and offset expiry."""

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

    async def commit_transactional(
        self, group_id: str, offsets: list[OffsetToCommit], producer_id: int, producer_epoch: int
    ) -> None:
        """TxnOffsetCommit's validated offsets written as the producer's transactional
        records, pending until its marker; returns once they are on disk."""
        now = self._clock()
        items = [
            (o.topic, o.partition, CommittedOffset(o.offset, o.leader_epoch, o.metadata, now))
            for o in offsets
        ]
        if items:
            self.store.commit_transactional(group_id, items, producer_id, producer_epoch)
            await self._flush()

    async def end_transaction(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        groups: list[str],
        known: dict[str, list[OffsetToCommit]],
    ) -> None:
        """The transaction's marker in its groups' partitions (Kafka's transaction
        coordinator sends it to the group coordinator), committing or dropping the
        producer's pending offsets; ``known`` are those the transaction coordinator kept.
        Returns once the markers are on disk."""
        now = self._clock()
        kept = {
            group: [
                (o.topic, o.partition, CommittedOffset(o.offset, o.leader_epoch, o.metadata, now))
                for o in items
            ]
            for group, items in known.items()
        }
        self.store.end_transaction(producer_id, producer_epoch, commit, groups, kept)
        await self._flush()

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
