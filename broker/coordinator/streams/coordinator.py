"""The streams group coordinator: StreamsGroupHeartbeat and StreamsGroupDescribe's state.

As Kafka 4.4.0's GroupMetadataManager.streamsGroupHeartbeat: a member joins with epoch 0,
its topology and process id; the group epoch rises when membership or topology changes; the
target assignment (broker.coordinator.streams.assignor) is computed at the group epoch once
the topology is ready and group.streams.initial.rebalance.delay.ms has passed since the
group was created; a member reaches the target epoch once it no longer owns tasks the target
moved away, and is given a task only once its previous owner has given it up (as consumer
groups reconcile, KIP-848). A member silent for group.streams.session.timeout.ms is removed
(checked whenever the group is touched). Groups live in memory only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from broker.coordinator.streams.assignor import Task, assign
from broker.coordinator.streams.topology import ASSIGNMENT_DELAYED, Configured, configure
from protocol.errors import ErrorCode
from protocol.schema import Message

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass
class StreamsSettings:
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    initial_rebalance_delay_ms: int = 3000
    # Kafka's group configs streams.* defaults (acceptable.recovery.lag, task offset interval).
    acceptable_recovery_lag: int = 10000
    task_offset_interval_ms: int = 60000


@dataclass
class Member:
    member_id: str
    process_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    user_endpoint: Message | None = None
    client_tags: list[Message] = field(default_factory=list)
    epoch: int = 0
    assigned: set[Task] = field(default_factory=set)
    owned: set[Task] = field(default_factory=set)
    sent: frozenset[Task] | None = None
    last_seen: float = 0.0


@dataclass
class StreamsGroup:
    group_id: str
    created: float
    topology: Message | None = None
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    target: dict[str, set[Task]] = field(default_factory=dict)
    configured: Configured = field(default_factory=Configured)
    delay_over: bool = False

    def state(self) -> str:
        if not self.members:
            return "Empty"
        if not self.configured.ready:
            return "NotReady"
        if self.assignment_epoch != self.epoch:
            return "Assigning"
        if any(m.epoch != self.assignment_epoch for m in self.members.values()):
            return "Reconciling"
        return "Stable"


@dataclass
class Beat:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    member: Member | None = None
    tasks: list[Task] | None = None
    statuses: list[tuple[int, str]] = field(default_factory=list)
    to_create: list[tuple[str, int, dict[str, str]]] = field(default_factory=list)


def _tasks(owned: list[Message] | None) -> set[Task]:
    return {(t.subtopology_id, p) for t in owned or [] for p in t.partitions}


class StreamsCoordinator:
    def __init__(
        self,
        settings: StreamsSettings,
        partitions_of: Callable[[str], int | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.partitions_of = partitions_of
        self.clock = clock
        self.groups: dict[str, StreamsGroup] = {}

    def _expire(self, group: StreamsGroup) -> None:
        limit = self.settings.session_timeout_ms / 1000
        now = self.clock()
        gone = [m for m, v in group.members.items() if now - v.last_seen > limit]
        for member_id in gone:
            del group.members[member_id]
        if gone:
            group.epoch += 1

    def heartbeat(self, request: Message, client_id: str, client_host: str) -> Beat:
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        group = self.groups.get(group_id)
        if group is not None:
            self._expire(group)
        if epoch != 0 and group is None:
            return Beat(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
        if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            if group is None or member_id not in group.members:
                return Beat(ErrorCode.UNKNOWN_MEMBER_ID, _not_member(member_id, group_id))
            del group.members[member_id]
            group.epoch += 1
            self._target(group)
            return Beat(member=Member(member_id, "", "", "", 0, 0, epoch=epoch))
        if epoch == 0:
            if group is None:
                group = self.groups[group_id] = StreamsGroup(group_id, self.clock())
            member = group.members.get(member_id)
            if member is None:
                member = Member(
                    member_id,
                    request.process_id,
                    client_id,
                    client_host,
                    request.rebalance_timeout_ms,
                    request.topology.epoch,
                )
                group.members[member_id] = member
                group.epoch += 1
            if group.topology is None or request.topology.epoch > group.topology.epoch:
                if group.topology is not None:
                    group.epoch += 1
                group.topology = request.topology
        else:
            assert group is not None
            member = group.members.get(member_id)
            if member is None:
                return Beat(ErrorCode.UNKNOWN_MEMBER_ID, _not_member(member_id, group_id))
            if epoch > member.epoch:
                return Beat(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"Received member epoch {epoch} is newer than current member epoch "
                    f"{member.epoch}.",
                )
            if epoch != member.epoch:
                return Beat(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"The received member epoch {epoch} does not match the expected member "
                    f"epoch {member.epoch}.",
                )
        member.last_seen = self.clock()
        for name in ("instance_id", "rack_id", "user_endpoint"):
            value = request.get(name)
            if value is not None:
                setattr(member, name, value)
        if request.client_tags is not None:
            member.client_tags = list(request.client_tags)
        if request.active_tasks is not None:
            member.owned = _tasks(request.active_tasks)
        self._target(group)
        beat = Beat(member=member, statuses=list(group.configured.statuses))
        beat.to_create = group.configured.to_create
        if self._delayed(group):
            beat.statuses.insert(
                0,
                (
                    ASSIGNMENT_DELAYED,
                    "Assignment delayed due to the configured initial rebalance delay.",
                ),
            )
        self._reconcile(group, member)
        current = frozenset(member.assigned)
        if member.sent != current or epoch == 0:
            member.sent = current
            beat.tasks = sorted(current)
        return beat

    def _delayed(self, group: StreamsGroup) -> bool:
        wait = self.settings.initial_rebalance_delay_ms / 1000
        return self.clock() - group.created < wait

    def _target(self, group: StreamsGroup) -> None:
        """Recompute the target assignment when the group epoch moved past it, or when the
        initial rebalance delay ended (until then the target holds no tasks)."""
        if group.topology is None:
            return
        configured = configure(group.topology, self.partitions_of)
        if configured.tasks != group.configured.tasks:
            # The topics behind the topology changed (created, grown): Kafka bumps the group
            # epoch when the metadata hash of the group's topics changes.
            group.epoch += 1
        group.configured = configured
        delayed = self._delayed(group)
        if group.assignment_epoch == group.epoch and group.delay_over == (not delayed):
            return
        tasks = group.configured.tasks if group.configured.ready and not delayed else {}
        group.target = assign(tasks, group.target, sorted(group.members))
        group.assignment_epoch = group.epoch
        group.delay_over = not delayed

    def _reconcile(self, group: StreamsGroup, member: Member) -> None:
        """Move the member towards its target: it is given the target tasks no other member
        still owns outside its own target, and takes the assignment epoch once it owns
        nothing outside its target (it has revoked what moved away)."""
        target = group.target.get(member.member_id, set())
        pending = {
            t
            for m in group.members.values()
            if m is not member
            for t in m.owned - group.target.get(m.member_id, set())
        }
        member.assigned = target - pending
        if member.epoch == 0 or member.owned <= target:
            member.epoch = group.assignment_epoch

    def validate_commit(
        self, group_id: str, member_id: str, member_epoch: int, version: int, txn: bool
    ) -> ErrorCode | None:
        """StreamsGroup.validateOffsetCommit for an OffsetCommit or TxnOffsetCommit to a
        streams group's id; None when ``group_id`` is no streams group. An admin commit
        (negative epoch) is taken while the group is empty; a member commits at its current
        epoch only (Kafka checks each task's assignment epoch; a member here holds one)."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        self._expire(group)
        if member_epoch < 0 and not group.members:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not txn and version < 9:
            # "OffsetCommit version 9 or above must be used by members using the streams
            # group protocol".
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def describe(self, group_id: str) -> StreamsGroup | None:
        group = self.groups.get(group_id)
        if group is not None:
            self._expire(group)
            self._target(group)
        return group


def _not_member(member_id: str, group_id: str) -> str:
    return f"Member {member_id} is not a member of group {group_id}."
