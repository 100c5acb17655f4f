"""``__consumer_offsets`` as a real, compacted topic, in Kafka 4.0's record formats: the
group coordinator's only store.

Kafka's group coordinator keeps its state in this topic; clients, kafka-console-consumer's
OffsetsMessageFormatter and lag monitors read it. Here too: the coordinator's maps
(``storage.committed_offsets.OffsetsInTopic``) tell this listener of each change before
they take it, and it appends the change, as Kafka's records (protocol.coordinator_records),
to the partition Kafka picks for the group (``abs(groupId.hashCode) %
offsets.topic.num.partitions``): OffsetCommitKey/Value per committed partition,
GroupMetadataKey/Value for classic groups, the ConsumerGroup* records for consumer-protocol
groups (only those whose content changed), and tombstones when offsets or groups are
deleted. ``flush`` fsyncs the partitions written since the last one; an OffsetCommit is
answered after it, as Kafka answers once its records are in the log. At start the state is
loaded from the topic (broker.coordinator.offsets_topic_load), as Kafka's
GroupMetadataManager loads a partition. The topic is created as Kafka creates it, at the
first FindCoordinator for a group (or the first change), compacted
(``cleanup.policy=compact``, ``compression.type=producer``, ``segment.bytes`` 100 MiB, as
Kafka's offsets topic configs), so the log cleaner keeps the latest record per key.

A data directory written by an older minikafka, whose state is in ``committed-offsets.log``,
is moved once (``migrate``): what that log holds and the topic lacks is written into the
topic, the topic fsynced, and the file renamed ``committed-offsets.log.migrated`` so it is
never read again.

ConsumerGroupPartitionMetadata (the subscribed topics' ids and partition counts, Kafka 4.0's
subscription metadata, without racks as 4.0 writes it) when it changes, before the group
epoch; ConsumerGroupRegularExpression per resolved regex when its topics change, a tombstone
when no member subscribes to it any more.

Deviations: a regex record's ``version`` (Kafka: the metadata image's offset at resolution)
is 0, its ``timestamp`` when it is written; the subscription metadata's topics are sorted by
name (Kafka: a hash map's order); the records are appended in one batch per change
(broker.coordinator.internal_topic). TxnOffsetCommit's offsets are appended when received
as a transactional batch of the producer (its id and epoch), pending (``pending``) until
EndTxn writes the transaction's COMMIT/ABORT marker to the group's partition, as Kafka's
transaction coordinator sends it; at a COMMIT marker each offset takes effect unless a plain
commit of that partition was written after it (``written_at``), as in Kafka.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from broker.coordinator.internal_topic import InternalTopic, KafkaRecord
from broker.coordinator.offsets_topic_load import PendingTxnOffsets, RecordOffsets, restore
from broker.coordinator.transactions import COORDINATOR_EPOCH, partition_for
from protocol import coordinator_records as cr
from storage.atomic_file import fsync_dir
from storage.committed_offsets import (
    FILE_NAME,
    MIGRATED_SUFFIX,
    CommittedOffset,
    CommittedOffsets,
    GroupRecord,
    TopicPartition,
)
from storage.consumer_group_records import (
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    Partitions,
)
from storage.partition_log import PartitionLog
from storage.store import Store, TopicInfo

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
# Kafka's offsets topic configs (GroupCoordinatorService.groupMetadataTopicConfigs).
TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "compression.type": "producer",
    "segment.bytes": "104857600",
}


class OffsetsTopic:
    """The ChangeListener of the group coordinator's store that writes ``__consumer_offsets``."""

    def __init__(
        self,
        store: Store,
        partitions: int,
        set_configs: Callable[[TopicInfo, dict[str, str]], None],
        notify_appended: Callable[[Iterable[PartitionLog]], None],
    ) -> None:
        self._store = store
        # Per consumer group, the subscription metadata last written (topic, id, partitions).
        self._metadata: dict[str, SubscriptionMetadata] = {}
        # TxnOffsetCommit's offsets written as transactional records, per producer id and
        # group, until the transaction's marker (Kafka's pendingTransactionalOffsets).
        self.pending: PendingTxnOffsets = {}
        # Where each partition's last plain commit record (or tombstone) of a group is.
        self.written_at: RecordOffsets = {}
        self.topic = InternalTopic(
            store,
            OFFSETS_TOPIC,
            partitions,
            TOPIC_CONFIGS,
            set_configs,
            notify_appended,
            is_store=True,
        )

    def ensure(self) -> None:
        """The topic, created (compacted, ``offsets.topic.num.partitions``) when missing."""
        self.topic.ensure()

    def load(self, offsets: CommittedOffsets) -> int:
        """At start-up: the state the topic holds, written into ``offsets`` (empty, without
        a listener); the number of groups loaded."""
        info = self.topic.info()
        if info is None:
            return 0
        count = restore(info, offsets, self.pending, self.written_at)
        log.info("loaded %d group(s) from %s", count, OFFSETS_TOPIC)
        return count

    def flush(self) -> None:
        self.topic.flush()

    def migrate_log(self, data_dir: Path, offsets: CommittedOffsets) -> None:
        """A data directory of an older minikafka keeps its groups in
        ``committed-offsets.log``: what the topic lacks of it is written there and fsynced,
        then the file is renamed, so it is read this once (a crash before the rename
        repeats the move at the next start, which then writes nothing)."""
        path = data_dir / FILE_NAME
        if not path.exists():
            return
        legacy = CommittedOffsets.open(data_dir)
        try:
            written = self.migrate(legacy, offsets)
            groups = len(legacy.groups()) + len(legacy.consumer_groups())
        finally:
            legacy.close_unclean()
        self.flush()
        os.replace(path, path.with_name(path.name + MIGRATED_SUFFIX))
        fsync_dir(data_dir)
        log.info(
            "moved %d group(s) from %s into %s (%d written); the file is now %s%s",
            groups,
            FILE_NAME,
            OFFSETS_TOPIC,
            written,
            FILE_NAME,
            MIGRATED_SUFFIX,
        )

    def migrate(self, legacy: CommittedOffsets, offsets: CommittedOffsets) -> int:
        """Write into the topic (through ``offsets``, loaded from it, with this listener)
        the groups and offsets of an older data directory's committed-offsets log
        ``legacy`` that it lacks or holds otherwise; the number of groups written."""
        classic = legacy.groups()
        consumers = legacy.consumer_groups()
        changed = 0
        # Only added or replaced: a group or offset the topic has and the file lacks was
        # written by a newer start, never deleted from the file alone.
        for group in sorted({*classic, *consumers}):
            before = _snapshot(offsets, group)
            old = legacy.offsets(group)
            current = offsets.offsets(group)
            fresh = [(t, p, v) for (t, p), v in old.items() if current.get((t, p)) != v]
            if fresh:
                offsets.commit(group, fresh)
            record = classic.get(group)
            if group in consumers:
                offsets.put_consumer_group(group, consumers[group])
            elif record is not None:
                offsets.put_group(group, record)
            changed += _snapshot(offsets, group) != before
        return changed

    # --- ChangeListener ----------------------------------------------------------------

    def offsets_committed(self, group: str, items: list[tuple[str, int, CommittedOffset]]) -> None:
        base = self.topic.append(group, _offset_records(group, items))
        self._written(group, [(t, p) for t, p, _ in items], base)

    def transactional_offsets(
        self,
        group: str,
        items: list[tuple[str, int, CommittedOffset]],
        producer_id: int,
        producer_epoch: int,
    ) -> None:
        # As Kafka's OffsetMetadataManager.commitTransactionalOffset: the records go in at
        # once, in a transactional batch of the producer, and wait for its marker.
        base = self.topic.append(
            group, _offset_records(group, items), (producer_id, producer_epoch)
        )
        waiting = self.pending.setdefault(producer_id, {}).setdefault(group, {})
        waiting.update({(t, p): (v, base + i) for i, (t, p, v) in enumerate(items)})

    def transaction_ended(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        groups: list[str],
        known: dict[str, list[tuple[str, int, CommittedOffset]]],
    ) -> dict[str, list[tuple[str, int, CommittedOffset]]]:
        """The COMMIT/ABORT marker in the partition of each of ``groups`` (each partition
        once: Kafka's markers go per partition); the offsets that take effect. Offsets of
        ``known`` never written as transactional records (a transaction open across the
        move from an older data directory) are written as plain commits when committed."""
        partitions: dict[int, str] = {}
        count = len(self.topic.ensure().partitions)
        for group in groups:
            partitions.setdefault(partition_for(group, count), group)
        for group in partitions.values():
            self.topic.append_marker(group, producer_id, producer_epoch, commit, COORDINATOR_EPOCH)
        mine = self.pending.get(producer_id, {})
        resolved = {g: mine.pop(g) for g in groups if g in mine}
        if not mine:
            self.pending.pop(producer_id, None)
        if not commit:
            return {}
        # OffsetMetadataManager.replayEndTransactionMarker: an offset takes effect unless a
        # plain commit of the partition was written after it.
        out: dict[str, list[tuple[str, int, CommittedOffset]]] = {}
        for group, items in resolved.items():
            for (topic, partition), (value, at) in items.items():
                if at > self.written_at.get((group, topic, partition), -1):
                    self.written_at[(group, topic, partition)] = at
                    out.setdefault(group, []).append((topic, partition, value))
        for group, kept in known.items():
            written = resolved.get(group, {})
            rest = [(t, p, v) for t, p, v in kept if (t, p) not in written]
            if rest:
                self.offsets_committed(group, rest)
                out.setdefault(group, []).extend(rest)
        return out

    def offsets_deleted(self, group: str, items: list[TopicPartition]) -> None:
        base = self.topic.append(group, [_offset_tombstone(group, t, p) for t, p in items])
        self._written(group, items, base)

    def _written(self, group: str, items: list[TopicPartition], base: int) -> None:
        if base >= 0:
            for i, (topic, partition) in enumerate(items):
                self.written_at[(group, topic, partition)] = base + i

    def group_written(self, group: str, record: GroupRecord) -> None:
        self.topic.append(group, [_group_record(group, record)])

    def consumer_group_written(
        self, group: str, record: ConsumerGroupRecord, previous: ConsumerGroupRecord | None
    ) -> None:
        metadata = self._new_metadata(group, record)
        self.topic.append(group, _consumer_diff(group, previous, record, metadata))

    def group_deleted(
        self,
        group: str,
        offsets: list[TopicPartition],
        classic: bool,
        consumer: ConsumerGroupRecord | None,
    ) -> None:
        # GroupMetadataManager deletes the offsets first, then the group's own records.
        out = [_offset_tombstone(group, t, p) for t, p in offsets]
        self._metadata.pop(group, None)
        if consumer is not None:
            out += _consumer_tombstones(group, consumer)
        elif classic or offsets:
            out.append((cr.encode_key(cr.GROUP_METADATA, {"group": group}), None))
        self._written(group, offsets, self.topic.append(group, out))

    def _new_metadata(self, group: str, record: ConsumerGroupRecord) -> KafkaRecord | None:
        """The group's ConsumerGroupPartitionMetadata record when its subscription metadata
        changed (ModernGroup.computeSubscriptionMetadata: every topic a member subscribes to
        by name or through a resolved regex, that exists), else None."""
        names = {n for m in record.members for n in m.subscribed_topic_names}
        for _, topics in record.resolved_regexes:
            names.update(topics)
        metadata: SubscriptionMetadata = []
        for name in sorted(names):
            info = self._store.topic(name)
            if info is not None:
                metadata.append((name, info.topic_id, len(info.partitions)))
        if self._metadata.get(group) == metadata:
            return None
        self._metadata[group] = metadata
        value = {
            "topics": [
                {"topic_id": i, "topic_name": n, "num_partitions": c, "partition_metadata": []}
                for n, i, c in metadata
            ]
        }
        key = cr.encode_key(cr.CONSUMER_GROUP_PARTITION_METADATA, {"group_id": group})
        return key, cr.encode_consumer_group_value(cr.CONSUMER_GROUP_PARTITION_METADATA, value)


SubscriptionMetadata = list[tuple[str, bytes, int]]


def _snapshot(offsets: CommittedOffsets, group: str) -> tuple[object, ...]:
    return (
        offsets.groups().get(group),
        offsets.consumer_groups().get(group),
        dict(offsets.offsets(group)),
    )


def _offset_records(group: str, items: list[tuple[str, int, CommittedOffset]]) -> list[KafkaRecord]:
    out: list[KafkaRecord] = []
    for topic, partition, value in items:
        expiring = value.expire_timestamp_ms is not None
        version = cr.OFFSET_COMMIT_VALUE_WITH_EXPIRY if expiring else cr.OFFSET_COMMIT_VALUE_VERSION
        body = {
            "offset": value.offset,
            "leader_epoch": value.leader_epoch,
            "metadata": value.metadata or "",
            "commit_timestamp": value.commit_timestamp_ms,
            "expire_timestamp": value.expire_timestamp_ms if expiring else -1,
        }
        key = cr.encode_key(
            cr.OFFSET_COMMIT, {"group": group, "topic": topic, "partition": partition}
        )
        out.append((key, cr.encode_offset_commit_value(body, version)))
    return out


def _offset_tombstone(group: str, topic: str, partition: int) -> KafkaRecord:
    key = cr.encode_key(cr.OFFSET_COMMIT, {"group": group, "topic": topic, "partition": partition})
    return key, None


def _group_record(group: str, record: GroupRecord) -> KafkaRecord:
    value = {
        "protocol_type": record.protocol_type or "",
        "generation": record.generation,
        "protocol": record.protocol_name,
        "leader": record.leader,
        "current_state_timestamp": -1
        if record.state_timestamp_ms is None
        else record.state_timestamp_ms,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout_ms,
                "session_timeout": m.session_timeout_ms,
                "subscription": m.subscription,
                "assignment": m.assignment,
            }
            for m in record.members
        ],
    }
    key = cr.encode_key(cr.GROUP_METADATA, {"group": group})
    return key, cr.encode_group_metadata_value(value)


def _partitions(parts: Partitions) -> list[dict[str, object]]:
    return [{"topic_id": tid, "partitions": list(ps)} for tid, ps in parts]


def _member_key(record_type: int, group: str, member_id: str) -> bytes:
    return cr.encode_key(record_type, {"group_id": group, "member_id": member_id})


def _member_metadata(m: ConsumerMemberRecord) -> dict[str, object]:
    classic = (
        None
        if m.classic_session_timeout_ms is None
        else {
            "session_timeout_ms": m.classic_session_timeout_ms,
            "supported_protocols": [{"name": n, "metadata": d} for n, d in m.classic_protocols],
        }
    )
    return {
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "subscribed_topic_names": list(m.subscribed_topic_names),
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "server_assignor": m.server_assignor,
        "classic_member_metadata": classic,
    }


def _current_assignment(m: ConsumerMemberRecord) -> dict[str, object]:
    return {
        "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch,
        "state": m.state,
        "assigned_partitions": _partitions(m.assigned),
        "partitions_pending_revocation": _partitions(m.pending_revocation),
    }


def _regex_records(
    group: str, previous: ConsumerGroupRecord | None, record: ConsumerGroupRecord
) -> list[KafkaRecord]:
    """ConsumerGroupRegularExpression records of the regexes resolved anew or to other
    topics, tombstones of those no longer subscribed to."""
    old = {} if previous is None else dict(previous.resolved_regexes)
    new = dict(record.resolved_regexes)
    out: list[KafkaRecord] = []
    now_ms = int(time.time() * 1000)
    for regex in sorted(old.keys() - new.keys()):
        out.append((_regex_key(group, regex), None))
    for regex, topics in sorted(new.items()):
        if old.get(regex) != topics:
            value = {"topics": sorted(topics), "version": 0, "timestamp": now_ms}
            out.append(
                (
                    _regex_key(group, regex),
                    cr.encode_consumer_group_value(cr.CONSUMER_GROUP_REGULAR_EXPRESSION, value),
                )
            )
    return out


def _regex_key(group: str, regex: str) -> bytes:
    return cr.encode_key(
        cr.CONSUMER_GROUP_REGULAR_EXPRESSION, {"group_id": group, "regular_expression": regex}
    )


def _consumer_diff(
    group: str,
    previous: ConsumerGroupRecord | None,
    record: ConsumerGroupRecord,
    subscription_metadata: KafkaRecord | None,
) -> list[KafkaRecord]:
    """The records that take Kafka's view of the group from ``previous`` to ``record``, in
    the order its GroupMetadataManager writes them: subscriptions, regexes, subscription
    metadata (``subscription_metadata``, when it changed), group epoch, target assignment, current
    assignments."""
    old = {} if previous is None else {m.member_id: m for m in previous.members}
    new = {m.member_id: m for m in record.members}
    subscriptions: list[KafkaRecord] = []
    targets: list[KafkaRecord] = []
    currents: list[KafkaRecord] = []
    removed: list[KafkaRecord] = []
    for member_id, m in new.items():
        was = old.get(member_id)
        metadata = _member_metadata(m)
        if was is None or _member_metadata(was) != metadata:
            key = _member_key(cr.CONSUMER_GROUP_MEMBER_METADATA, group, member_id)
            value = cr.encode_consumer_group_value(cr.CONSUMER_GROUP_MEMBER_METADATA, metadata)
            subscriptions.append((key, value))
        if was is None or was.target != m.target:
            key = _member_key(cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group, member_id)
            value = cr.encode_consumer_group_value(
                cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                {"topic_partitions": _partitions(m.target)},
            )
            targets.append((key, value))
        current = _current_assignment(m)
        if was is None or _current_assignment(was) != current:
            key = _member_key(cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group, member_id)
            value = cr.encode_consumer_group_value(
                cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, current
            )
            currents.append((key, value))
    for member_id in old.keys() - new.keys():
        removed += _member_tombstones(group, member_id)
    out = removed + subscriptions + _regex_records(group, previous, record)
    if subscription_metadata is not None:
        out.append(subscription_metadata)
    if previous is None or previous.group_epoch != record.group_epoch:
        key = cr.encode_key(cr.CONSUMER_GROUP_METADATA, {"group_id": group})
        value = cr.encode_consumer_group_value(
            cr.CONSUMER_GROUP_METADATA, {"epoch": record.group_epoch}
        )
        out.append((key, value))
    out += targets
    if previous is None or previous.assignment_epoch != record.assignment_epoch:
        key = cr.encode_key(cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, {"group_id": group})
        value = cr.encode_consumer_group_value(
            cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
            {"assignment_epoch": record.assignment_epoch},
        )
        out.append((key, value))
    return out + currents


def _member_tombstones(group: str, member_id: str) -> list[KafkaRecord]:
    # ConsumerGroup.createGroupTombstoneRecords / removeMember: current assignment, target
    # assignment, then subscription.
    return [
        (_member_key(cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group, member_id), None),
        (_member_key(cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group, member_id), None),
        (_member_key(cr.CONSUMER_GROUP_MEMBER_METADATA, group, member_id), None),
    ]


def _consumer_tombstones(group: str, record: ConsumerGroupRecord) -> list[KafkaRecord]:
    out: list[KafkaRecord] = []
    for m in record.members:
        out += _member_tombstones(group, m.member_id)
    out += [(_regex_key(group, regex), None) for regex, _ in record.resolved_regexes]
    for record_type in (
        cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
        cr.CONSUMER_GROUP_PARTITION_METADATA,
        cr.CONSUMER_GROUP_METADATA,
    ):
        out.append((cr.encode_key(record_type, {"group_id": group}), None))
    return out
