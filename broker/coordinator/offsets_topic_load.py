"""Reading ``__consumer_offsets`` back: the group coordinator's state from Kafka's records.

As Kafka's GroupMetadataManager/GroupCoordinatorShard replay a partition at load: records in
offset order, the latest value of each key wins, a tombstone deletes it. Transactional
offsets (TxnOffsetCommit's records, written with the producer's id) wait for their
producer's marker in that partition, as in Kafka's OffsetMetadataManager: a COMMIT marker
applies each unless the group has a plain commit (or tombstone) of that partition later in
the log, an ABORT drops them, and those without a marker yet come back as pending
(``pending``). The broker loads the
group coordinator's state this way at every start (the topic is its only store); the
ConsumerGroup* records give the consumer groups back, with their resolved regexes
(ConsumerGroupRegularExpression).
ConsumerGroupPartitionMetadata is computed again from the topics at the next change, as
Kafka 4.0 does at the next heartbeat.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from protocol import coordinator_records as cr
from protocol.records import BatchHeader, CorruptBatchError, decode_records, parse_end_txn_marker
from protocol.schema import Message
from storage.committed_offsets import CommittedOffset, CommittedOffsets, GroupRecord, MemberRecord
from storage.consumer_group_records import ConsumerGroupRecord, ConsumerMemberRecord, Partitions
from storage.store import TopicInfo

log = logging.getLogger(__name__)


@dataclass
class _Group:
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    # The log offset of the record each offset (or its tombstone) came from.
    offset_at: dict[tuple[str, int], int] = field(default_factory=dict)
    classic: GroupRecord | None = None
    classic_at: int = -1
    epoch: int | None = None
    assignment_epoch: int = 0
    consumer_at: int = -1
    members: dict[str, Message] = field(default_factory=dict)
    targets: dict[str, Message] = field(default_factory=dict)
    currents: dict[str, Message] = field(default_factory=dict)
    regexes: dict[str, tuple[str, ...]] = field(default_factory=dict)


# Per producer id, per group, the transactional offsets still waiting for a marker, each
# with its record's offset in the log.
PendingTxnOffsets = dict[int, dict[str, dict[tuple[str, int], tuple[CommittedOffset, int]]]]
# Per (group, topic, partition), the log offset of its last plain OffsetCommit record.
RecordOffsets = dict[tuple[str, str, int], int]


def restore(
    info: TopicInfo,
    offsets: CommittedOffsets,
    pending: PendingTxnOffsets | None = None,
    written_at: RecordOffsets | None = None,
) -> int:
    """Write the state the topic holds into ``offsets`` (empty, without a listener), the
    transactional offsets without a marker yet into ``pending`` and where each partition's
    last plain commit record is into ``written_at``; the number of groups restored."""
    return restore_batches(
        ((plog.name, plog.batches(plog.log_start_offset)) for plog in info.partitions),
        offsets,
        pending,
        written_at,
    )


def restore_batches(
    partitions: Iterable[tuple[str, Iterable[tuple[BatchHeader, bytes]]]],
    offsets: CommittedOffsets,
    pending: PendingTxnOffsets | None = None,
    written_at: RecordOffsets | None = None,
) -> int:
    """``restore`` from each partition's (name, batches in offset order)."""
    groups: dict[str, _Group] = {}
    for name, batches in partitions:
        waiting = _replay(name, batches, groups)
        if pending is not None:
            for producer_id, by_group in waiting.items():
                for group_id, items in by_group.items():
                    pending.setdefault(producer_id, {}).setdefault(group_id, {}).update(items)
    if written_at is not None:
        for group_id, g in groups.items():
            for (topic, partition), at in g.offset_at.items():
                written_at[(group_id, topic, partition)] = at
    restored = 0
    for group_id, g in groups.items():
        if g.offsets:
            offsets.commit(group_id, [(t, p, v) for (t, p), v in g.offsets.items()])
        consumer = _consumer_group(g)
        if consumer is not None and g.consumer_at > g.classic_at:
            offsets.put_consumer_group(group_id, consumer)
        elif g.classic is not None:
            offsets.put_group(group_id, g.classic)
        elif not g.offsets:
            continue  # deleted: only tombstones left
        restored += 1
    return restored


def _replay(
    name: str, batches: Iterable[tuple[BatchHeader, bytes]], groups: dict[str, _Group]
) -> PendingTxnOffsets:
    """Apply the partition's records to ``groups``; the transactional offsets left without
    a marker."""
    position = 0
    waiting: PendingTxnOffsets = {}
    for header, data in batches:
        try:
            if header.is_control:
                marker = parse_end_txn_marker(data, header)
                resolved = waiting.pop(header.producer_id, {})
                if marker is not None and marker.commit:
                    for group_id, items in resolved.items():
                        _commit_pending(groups.setdefault(group_id, _Group()), items)
                continue
            records = decode_records(data, header)
        except CorruptBatchError as exc:
            log.warning("%s: skipped a corrupt batch at %d: %s", name, header.base_offset, exc)
            continue
        for record in records:
            position += 1
            if record.key is None:
                continue
            try:
                kind, key = cr.decode_key(record.key)
                value = None if record.value is None else cr.decode_value(kind, record.value)
            except ValueError as exc:
                log.warning("%s: skipped a record at %d: %s", name, header.base_offset, exc)
                continue
            at = header.base_offset + record.offset_delta
            if header.is_transactional:
                if kind == cr.OFFSET_COMMIT and value is not None:
                    by_group = waiting.setdefault(header.producer_id, {})
                    offsets = by_group.setdefault(key.group, {})
                    offsets[(key.topic, key.partition)] = (_offset(value), at)
                continue
            _apply(groups, kind, key, value, position)
            if kind == cr.OFFSET_COMMIT:
                groups[key.group].offset_at[(key.topic, key.partition)] = at
    return waiting


def _commit_pending(g: _Group, items: dict[tuple[str, int], tuple[CommittedOffset, int]]) -> None:
    # OffsetMetadataManager.replayEndTransactionMarker: the most recent record wins when
    # transactional and plain commits of a partition mix.
    for tp, (value, at) in items.items():
        if at > g.offset_at.get(tp, -1):
            g.offsets[tp] = value
            g.offset_at[tp] = at


def _offset(value: tuple[int, Message]) -> CommittedOffset:
    version, body = value
    expire = body.expire_timestamp if version == 1 else -1
    return CommittedOffset(
        body.offset,
        body.leader_epoch,
        body.metadata,
        body.commit_timestamp,
        None if expire == -1 else expire,
    )


def _apply(
    groups: dict[str, _Group],
    kind: int,
    key: Message,
    value: tuple[int, Message] | None,
    position: int,
) -> None:
    group_id = key.group if kind in (cr.OFFSET_COMMIT, cr.GROUP_METADATA) else key.group_id
    g = groups.setdefault(group_id, _Group())
    body = None if value is None else value[1]
    if kind == cr.OFFSET_COMMIT:
        tp = (key.topic, key.partition)
        if value is None:
            g.offsets.pop(tp, None)
        else:
            g.offsets[tp] = _offset(value)
    elif kind == cr.GROUP_METADATA:
        g.classic = None if body is None else _classic(body)
        g.classic_at = position
    elif kind == cr.CONSUMER_GROUP_METADATA:
        g.epoch = None if body is None else body.epoch
        g.consumer_at = position
    elif kind == cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        g.assignment_epoch = 0 if body is None else body.assignment_epoch
    elif kind in (
        cr.CONSUMER_GROUP_MEMBER_METADATA,
        cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
        cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    ):
        table = {
            cr.CONSUMER_GROUP_MEMBER_METADATA: g.members,
            cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: g.targets,
            cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: g.currents,
        }[kind]
        if body is None:
            table.pop(key.member_id, None)
        else:
            table[key.member_id] = body
    elif kind == cr.CONSUMER_GROUP_REGULAR_EXPRESSION:
        if body is None:
            g.regexes.pop(key.regular_expression, None)
        else:
            g.regexes[key.regular_expression] = tuple(sorted(body.topics))


def _classic(body: Message) -> GroupRecord:
    return GroupRecord(
        protocol_type=body.protocol_type or None,
        generation=body.generation,
        protocol_name=body.protocol,
        leader=body.leader,
        members=tuple(
            MemberRecord(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout,
                m.session_timeout,
                bytes(m.subscription),
                bytes(m.assignment),
            )
            for m in body.members
        ),
        state_timestamp_ms=None
        if body.current_state_timestamp == -1
        else body.current_state_timestamp,
    )


def _partitions(entries: list[Message]) -> Partitions:
    return tuple(
        sorted((bytes(e.topic_id), tuple(sorted(e.partitions))) for e in entries if e.partitions)
    )


def _consumer_group(g: _Group) -> ConsumerGroupRecord | None:
    if g.epoch is None:
        return None
    members = []
    for member_id, m in g.members.items():
        current = g.currents.get(member_id)
        target = g.targets.get(member_id)
        classic = m.classic_member_metadata
        members.append(
            ConsumerMemberRecord(
                member_id=member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                subscribed_topic_names=tuple(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                server_assignor=m.server_assignor,
                member_epoch=0 if current is None else current.member_epoch,
                previous_member_epoch=0 if current is None else current.previous_member_epoch,
                state=0 if current is None else current.state,
                assigned=() if current is None else _partitions(current.assigned_partitions),
                pending_revocation=()
                if current is None
                else _partitions(current.partitions_pending_revocation),
                target=() if target is None else _partitions(target.topic_partitions),
                classic_session_timeout_ms=None if classic is None else classic.session_timeout_ms,
                classic_protocols=()
                if classic is None
                else tuple((p.name, bytes(p.metadata)) for p in classic.supported_protocols),
            )
        )
    regexes = tuple(sorted(g.regexes.items()))
    return ConsumerGroupRecord(g.epoch, g.assignment_epoch, tuple(members), regexes)
