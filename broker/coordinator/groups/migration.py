"""Online migration between a classic group and a KIP-848 consumer group (Kafka 4.0's
``group.consumer.migration.policy``), the conversions themselves:

- ``to_consumer_group`` is Kafka's ConsumerGroup.fromClassicGroup: the group epoch and the
  target assignment epoch are the classic generation; every classic member becomes a Stable
  member at that epoch, its subscription read from its metadata for the selected protocol,
  its assigned partitions (and target) from its last SyncGroup assignment. It keeps its
  JoinGroup protocols and session timeout (ClassicMemberMetadata), so it goes on being
  served through JoinGroup/SyncGroup/Heartbeat.
- ``to_classic_members`` is Kafka's ClassicGroup.fromConsumerGroup: every remaining member
  (all of them classic-protocol members) with its target assignment serialized at its
  subscription's version; the caller builds a Stable classic group at the group epoch and
  starts a rebalance.

Topics are named by id in consumer groups and by name in the embedded protocol; a partition
of a topic that no longer exists is left out, as Kafka's toTopicPartitionMap does.
"""

from __future__ import annotations

from broker.coordinator.groups import consumer_protocol as cp
from broker.coordinator.groups.classic import CONSUMER_PROTOCOL_TYPE, ClassicGroup, Member
from broker.coordinator.groups.consumer import (
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    TopicPartitions,
)

POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class CustomAssignorInUse(ValueError):
    """A member's assignment carries user data (Kafka: UnsupportedVersionException)."""


def upgrade_enabled(policy: str) -> bool:
    return policy in ("upgrade", "bidirectional")


def downgrade_enabled(policy: str) -> bool:
    return policy in ("downgrade", "bidirectional")


def to_topic_ids(
    partitions: cp.NamedPartitions, topics: dict[str, tuple[bytes, int]]
) -> TopicPartitions:
    out: dict[bytes, set[int]] = {}
    for name, ps in partitions:
        known = topics.get(name)
        if known is not None:
            out.setdefault(known[0], set()).update(ps)
    return {tid: frozenset(ps) for tid, ps in out.items() if ps}


def to_topic_names(parts: TopicPartitions, names: dict[bytes, str]) -> cp.NamedPartitions:
    return [(names[tid], sorted(ps)) for tid, ps in sorted(parts.items()) if tid in names and ps]


def to_consumer_group(classic: ClassicGroup, topics: dict[str, tuple[bytes, int]]) -> ConsumerGroup:
    """Raises MalformedProtocol or CustomAssignorInUse; the classic group is not touched."""
    group = ConsumerGroup(classic.group_id)
    group.group_epoch = group.assignment_epoch = classic.generation_id
    for m in classic.members.values():
        if m.assignment:
            assignment = cp.decode_assignment(m.assignment)
            if assignment.user_data:
                raise CustomAssignorInUse("userData from a custom assignor would be lost")
            assigned = to_topic_ids(assignment.partitions, topics)
        else:
            # A member that joined and never synced: an empty assignment (Kafka accepts it).
            assigned = {}
        protocol = classic.protocol_name
        metadata = m.metadata(protocol) if protocol is not None else m.protocols[0][1]
        subscription = cp.decode_subscription(metadata)
        member = ConsumerMember(
            m.member_id,
            instance_id=m.group_instance_id,
            rack_id=subscription.rack_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            member_epoch=classic.generation_id,
            previous_member_epoch=classic.generation_id,
            state=MemberState.STABLE,
            assigned=dict(assigned),
            classic_session_timeout_ms=m.session_timeout_ms,
            classic_protocols=tuple(m.protocols),
        )
        group.put_member(member)
        group.target[member.member_id] = dict(assigned)
    return group


def to_classic_members(
    group: ConsumerGroup, leaving: set[str], names: dict[bytes, str]
) -> tuple[str, list[Member]]:
    """(selected protocol, members) of the classic group replacing ``group``."""
    members = []
    for m in group.members.values():
        if m.member_id in leaving:
            continue
        first = m.classic_protocols[0][1] if m.classic_protocols else b""
        try:
            version = cp.version_of(first)
        except cp.MalformedProtocol:
            version = 0
        assignment = cp.encode_assignment(
            to_topic_names(group.target.get(m.member_id, {}), names), version
        )
        members.append(
            Member(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.classic_session_timeout_ms or 0,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocols=list(m.classic_protocols),
                assignment=assignment,
            )
        )
    return _select_protocol(members), members


def _select_protocol(members: list[Member]) -> str:
    """ClassicGroup.selectProtocol: each member votes for its first protocol all support."""
    candidates = set.intersection(*({name for name, _ in m.protocols} for m in members))
    if not candidates:
        # Cannot happen through JoinGroup's checks (supportsClassicProtocols); a record
        # from elsewhere must not stop the downgrade.
        return members[0].protocols[0][0]
    votes: dict[str, int] = {}
    for m in members:
        choice = next(name for name, _ in m.protocols if name in candidates)
        votes[choice] = votes.get(choice, 0) + 1
    return max(votes, key=lambda name: votes[name])
