"""One KIP-848 consumer group: members, epochs and incremental reconciliation, on its own.

States (Kafka's ConsumerGroupState names, shown by ConsumerGroupDescribe and ListGroups):
Empty (no members), Assigning (group epoch ahead of the target assignment epoch), Reconciling
(some member not yet at the assignment epoch with its whole target), Stable.

Following Kafka 4.0's ConsumerGroup, ConsumerGroupMember and CurrentAssignmentBuilder:

- The *group epoch* is bumped whenever the membership or a subscription changes (or the
  partitions of a subscribed topic change); the *target assignment* is then recomputed by the
  server-side assignor and stamped with the group epoch (the *assignment epoch*).
- Each member moves towards its target on its own heartbeats (``reconcile``): partitions it
  must give up are first left in ``pending_revocation`` (state UNREVOKED_PARTITIONS, epoch
  unchanged) until the member's heartbeat no longer lists them as owned; only then does it
  reach the assignment epoch. A partition newly targeted at a member is handed over only
  once no other member holds it (assigned or pending revocation): until then the member is
  UNRELEASED_PARTITIONS. So a partition is never given to two members at once.
- ``partition_epochs`` is Kafka's currentPartitionEpoch: which member epoch holds a partition.

Nothing here awaits or touches the disk; the manager (``consumer_manager``) validates
requests, persists and schedules timeouts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from broker.coordinator.groups.assignors import ASSIGNORS, MemberSubscription
from storage.consumer_group_records import (
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    Partitions,
)

# topic id -> partitions
TopicPartitions = dict[bytes, frozenset[int]]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(Enum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2


class GroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: TopicPartitions = field(default_factory=dict)
    pending_revocation: TopicPartitions = field(default_factory=dict)
    # Set for a member that joined through JoinGroup (Kafka's ClassicMemberMetadata): its
    # session timeout and JoinGroup protocols (name, metadata), first one as it sent them.
    classic_session_timeout_ms: int | None = None
    classic_protocols: tuple[tuple[str, bytes], ...] = ()
    # Monotonic ms deadlines (not persisted): session expiry, and the rebalance timeout while
    # the member holds partitions it must revoke.
    session_deadline: int | None = None
    rebalance_deadline: int | None = None
    # A classic member's join and sync timeouts (Kafka's consumerGroupJoinKey/SyncKey
    # timers): it must rejoin, or sync after joining, within its rebalance timeout.
    join_deadline: int | None = None
    sync_deadline: int | None = None

    def subscription_key(self) -> tuple[object, ...]:
        """What, when it changes, bumps the group epoch (Kafka's hasMemberSubscriptionChanged
        and the regex update)."""
        return (
            self.subscribed_topic_names,
            self.subscribed_topic_regex,
            self.server_assignor,
            self.rack_id,
        )

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_session_timeout_ms is not None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def update_epoch(self, epoch: int) -> None:
        self.previous_member_epoch = self.member_epoch
        self.member_epoch = epoch


class HeartbeatError(Exception):
    """An error answer: Kafka's ApiException with its code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, TopicPartitions] = {}
        # topic name -> (topic id, partition count) of every topic some member subscribes to,
        # as last used for the target assignment (Kafka's subscription metadata).
        self.subscription_metadata: dict[str, tuple[bytes, int]] = {}
        # regex -> the topic names its last resolution matched (Kafka's
        # resolvedRegularExpressions); a subscribed regex missing here is not resolved yet.
        self.resolved_regexes: dict[str, frozenset[str]] = {}
        # When they were last resolved (monotonic ms, None: not since the load) and the
        # generation of the topic list that resolution saw; neither is stored.
        self.regex_refresh_ms: int | None = None
        self.regex_topics_generation = -1

    # --- views -----------------------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.uses_classic_protocol]

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Kafka's ConsumerGroup.supportsClassicProtocols: a JoinGroup's protocols must include
        one that every classic member supports."""
        if protocol_type != "consumer":
            return False
        classic = self.classic_members()
        if not self.members or not classic:
            return bool(names)
        return any(all(n in {p for p, _ in m.classic_protocols} for m in classic) for n in names)

    def waiting_on_unreleased_partition(self, member: ConsumerMember) -> bool:
        """Kafka's waitingOnUnreleasedPartition: a partition of its target still held."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        held = self.partition_epochs()
        for topic_id, partitions in self.target.get(member.member_id, {}).items():
            have = member.assigned.get(topic_id, frozenset())
            if any(p not in have and (topic_id, p) in held for p in partitions):
                return True
        return False

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for (Kafka's preferredServerAssignor)."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor is not None:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return default
        return max(counts.items(), key=lambda kv: kv[1])[0]

    def partition_epochs(self) -> dict[tuple[bytes, int], int]:
        out: dict[tuple[bytes, int], int] = {}
        for m in self.members.values():
            for parts in (m.assigned, m.pending_revocation):
                for topic_id, partitions in parts.items():
                    for p in partitions:
                        out[(topic_id, p)] = m.member_epoch
        return out

    def subscribed_topic_names(self, resolved: Mapping[str, frozenset[str]]) -> set[str]:
        """Every topic some member subscribes to, by name or by a resolved regex."""
        names: set[str] = set()
        for m in self.members.values():
            names.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                names.update(resolved.get(m.subscribed_topic_regex, frozenset()))
        return names

    def subscribed_regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex}

    # --- membership ------------------------------------------------------------------------

    def put_member(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.instance_id is not None and self.static_members.get(member.instance_id) == (
            member_id
        ):
            del self.static_members[member.instance_id]
        self.target.pop(member_id, None)
        return member

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id)
        return self.members.get(member_id) if member_id is not None else None

    # --- target assignment (Kafka's TargetAssignmentBuilder) --------------------------------

    def compute_target(
        self, assignor: str, resolved: Mapping[str, frozenset[str]], epoch: int
    ) -> None:
        by_id = {tid: count for tid, count in self.subscription_metadata.values()}
        ids = {name: tid for name, (tid, _) in self.subscription_metadata.items()}
        subscriptions = {}
        for m in self.members.values():
            names = set(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                names.update(resolved.get(m.subscribed_topic_regex, frozenset()))
            subscriptions[m.member_id] = MemberSubscription(
                frozenset(ids[n] for n in names if n in ids), self.target.get(m.member_id, {})
            )
        result = ASSIGNORS[assignor](subscriptions, by_id)
        self.target = {
            member_id: {tid: frozenset(ps) for tid, ps in parts.items() if ps}
            for member_id, parts in result.items()
        }
        self.assignment_epoch = epoch

    # --- reconciliation (Kafka's CurrentAssignmentBuilder) ---------------------------------

    def reconcile(
        self, member: ConsumerMember, owned: list[tuple[bytes, list[int]]] | None
    ) -> bool:
        """Move the member towards its target; True if its assignment or epoch changed."""
        epoch = self.assignment_epoch
        if member.is_reconciled_to(epoch):
            return False
        before = (member.member_epoch, member.state, member.assigned, member.pending_revocation)
        if member.state is MemberState.STABLE:
            self._next_assignment(member, member.member_epoch, owned)
        elif member.state is MemberState.UNREVOKED_PARTITIONS:
            if not _owns_any(owned, member.pending_revocation):
                self._next_assignment(member, member.member_epoch + 1, owned)
        else:
            self._next_assignment(member, member.member_epoch, owned)
        return before != (
            member.member_epoch,
            member.state,
            member.assigned,
            member.pending_revocation,
        )

    def _next_assignment(
        self, member: ConsumerMember, member_epoch: int, owned: list[tuple[bytes, list[int]]] | None
    ) -> None:
        target = self.target.get(member.member_id, {})
        held = self.partition_epochs()
        assigned: TopicPartitions = {}
        revoking: TopicPartitions = {}
        pending: TopicPartitions = {}
        unreleased = False
        for topic_id in set(target) | set(member.assigned):
            want = target.get(topic_id, frozenset())
            have = member.assigned.get(topic_id, frozenset())
            keep = have & want
            give_up = have - keep
            new = set(want - keep)
            was_revoking = member.pending_revocation.get(topic_id, frozenset())
            blocked = {p for p in new if (topic_id, p) in held and p not in was_revoking}
            if blocked:
                unreleased = True
                new -= blocked
            if keep:
                assigned[topic_id] = keep
            if give_up:
                revoking[topic_id] = frozenset(give_up)
            if new:
                pending[topic_id] = frozenset(new)
        if revoking and _owns_any(owned, revoking):
            member.state = MemberState.UNREVOKED_PARTITIONS
            member.update_epoch(member_epoch)
            member.assigned = assigned
            member.pending_revocation = revoking
            return
        for topic_id, parts in pending.items():
            assigned[topic_id] = assigned.get(topic_id, frozenset()) | parts
        member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        member.update_epoch(self.assignment_epoch)
        member.assigned = assigned
        member.pending_revocation = {}

    # --- persistence -----------------------------------------------------------------------

    def record(self) -> ConsumerGroupRecord:
        subscribed = self.subscribed_regexes()
        return ConsumerGroupRecord(
            self.group_epoch,
            self.assignment_epoch,
            tuple(
                ConsumerMemberRecord(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    server_assignor=m.server_assignor,
                    member_epoch=m.member_epoch,
                    previous_member_epoch=m.previous_member_epoch,
                    state=m.state.value,
                    assigned=_frozen(m.assigned),
                    pending_revocation=_frozen(m.pending_revocation),
                    target=_frozen(self.target.get(m.member_id, {})),
                    classic_session_timeout_ms=m.classic_session_timeout_ms,
                    classic_protocols=m.classic_protocols,
                )
                for m in self.members.values()
            ),
            tuple(
                (regex, tuple(sorted(names)))
                for regex, names in sorted(self.resolved_regexes.items())
                if regex in subscribed
            ),
        )

    @classmethod
    def restore(cls, group_id: str, record: ConsumerGroupRecord) -> ConsumerGroup:
        group = cls(group_id)
        group.group_epoch = record.group_epoch
        group.assignment_epoch = record.assignment_epoch
        for r in record.members:
            group.put_member(
                ConsumerMember(
                    member_id=r.member_id,
                    instance_id=r.instance_id,
                    rack_id=r.rack_id,
                    client_id=r.client_id,
                    client_host=r.client_host,
                    rebalance_timeout_ms=r.rebalance_timeout_ms,
                    subscribed_topic_names=r.subscribed_topic_names,
                    subscribed_topic_regex=r.subscribed_topic_regex,
                    server_assignor=r.server_assignor,
                    member_epoch=r.member_epoch,
                    previous_member_epoch=r.previous_member_epoch,
                    state=MemberState(r.state),
                    assigned=_thawed(r.assigned),
                    pending_revocation=_thawed(r.pending_revocation),
                    classic_session_timeout_ms=r.classic_session_timeout_ms,
                    classic_protocols=r.classic_protocols,
                )
            )
            group.target[r.member_id] = _thawed(r.target)
        group.resolved_regexes = {
            regex: frozenset(names) for regex, names in record.resolved_regexes
        }
        return group


def _owns_any(owned: list[tuple[bytes, list[int]]] | None, parts: TopicPartitions) -> bool:
    """Kafka's ownsRevokedPartitions: an unknown owned set (null) counts as still owning."""
    if owned is None:
        return True
    return any(p in parts.get(topic_id, frozenset()) for topic_id, ps in owned for p in ps)


def _frozen(parts: TopicPartitions) -> Partitions:
    return tuple((tid, tuple(sorted(ps))) for tid, ps in sorted(parts.items()) if ps)


def _thawed(parts: Partitions) -> TopicPartitions:
    return {tid: frozenset(ps) for tid, ps in parts}
