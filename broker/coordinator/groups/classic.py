"""One classic consumer group: Kafka's group membership state machine, on its own.

States (Kafka's names, shown by DescribeGroups/ListGroups)::

    Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
      ^                 ^      |                                       |
      |                 |      +--no members left--> Empty             | leader's SyncGroup
      |                 +------ join / leave / expiry -----------------+--> Stable
    Dead (deleted)

What this module does, following Apache Kafka's GroupMetadataManager / ClassicGroup:

- JoinGroup parks each member until the join phase ends: when every known member has
  rejoined and no MEMBER_ID_REQUIRED handshake is pending, or when the rebalance timeout
  (the largest of the members') expires; members that did not rejoin are then removed
  (static members stay). The first rebalance of an Empty group waits
  group.initial.rebalance.delay.ms, extended while new members keep arriving.
- Ending the join phase bumps the generation, selects the protocol (each member votes for
  its first protocol that every member supports), and answers everyone; only the leader
  gets the members' metadata.
- SyncGroup from the leader stores the assignments and answers every parked follower; the
  group becomes Stable. Members that never send SyncGroup within the rebalance timeout are
  removed and a new rebalance starts.
- Heartbeats push the session deadline; a member whose session expires (and is not parked
  in JoinGroup/SyncGroup) is removed, which triggers a rebalance. New members that never
  come back are expired after 5 minutes, as in Kafka.
- Static members (group.instance.id) keep their place across restarts: a rejoin with an
  unknown member id replaces the old member id; the old id is fenced (FENCED_INSTANCE_ID).
  In a Stable group that rejoin rebalances only if it changes the protocol the group would
  select (Kafka's updateStaticMemberThenRebalanceOrCompleteJoin); before JoinGroup v9 its
  answer names the leader as it was before the replacement (KIP-814).
- ``on_change`` is called on the transitions after which Kafka writes the group's metadata
  record: Stable with the leader's assignments, Empty, and a static member's new id in a
  Stable group. ``restore`` rebuilds a group from that record after a broker restart.
- Offset retention (Kafka's ClassicGroup.offsetExpirationCondition and isSubscribedToTopic):
  ``offset_expiration_base`` says from when a committed offset's retention counts, or that
  it cannot expire now; ``state_timestamp_ms`` is the wall-clock time of the last state
  change (Kafka's currentStateTimestamp, kept in the group's record).

Time is passed in (monotonic milliseconds) except the state timestamp, which is wall-clock
time from ``clock`` since it must survive restarts; parked responses are asyncio futures
created by the caller and completed here. Nothing here awaits, so no check is separated from the
change it guards. Expirations are applied by ``tick``; ``next_deadline`` says when.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

GROUP_MAX_SIZE_REACHED = ErrorCode.GROUP_MAX_SIZE_REACHED
FENCED_INSTANCE_ID = ErrorCode.FENCED_INSTANCE_ID

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000  # Kafka's classicGroupNewMemberJoinTimeoutMs (5 min)
CONSUMER_PROTOCOL_TYPE = "consumer"
# Kafka's OFFSETS_RETENTION_MINUTES_DEFAULT (7 days), in ms.
DEFAULT_OFFSETS_RETENTION_MS = 7 * 24 * 60 * 60 * 1000


def wall_ms() -> int:
    return int(time.time() * 1000)


def _commit_time(commit_timestamp_ms: int) -> int:
    return commit_timestamp_ms


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class GroupSettings:
    initial_rebalance_delay_ms: int
    min_session_timeout_ms: int
    max_session_timeout_ms: int
    offsets_retention_ms: int = DEFAULT_OFFSETS_RETENTION_MS


@dataclass(slots=True)
class JoinRequest:
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    client_id: str
    client_host: str
    # v4+: a member without an id is given one and asked to rejoin with it (KIP-394).
    require_known_member_id: bool
    # v9+: a static leader rejoining a Stable group may skip the assignment (KIP-814).
    supports_skip_assignment: bool
    reason: str | None = None


@dataclass(slots=True)
class JoinResult:
    error: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    # (member_id, group_instance_id, metadata): for the leader only.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass(slots=True)
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: asyncio.Future[JoinResult] | None = None
    sync_waiter: asyncio.Future[SyncResult] | None = None
    is_new: bool = False
    # Monotonic ms at which the session expires; None while it cannot expire.
    deadline: int | None = None

    def metadata(self, protocol: str | None) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise AssertionError("member supports none of the candidate protocols")

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None


T = TypeVar("T")


def _complete(waiter: asyncio.Future[T] | None, result: T) -> None:
    # A waiter whose connection went away was cancelled: Kafka drops such responses too.
    if waiter is not None and not waiter.done():
        waiter.set_result(result)


class ClassicGroup:
    def __init__(
        self,
        group_id: str,
        settings: GroupSettings,
        *,
        generation: int = 0,
        protocol_type: str | None = None,
        on_change: Callable[[ClassicGroup], None] | None = None,
        clock: Callable[[], int] = wall_ms,
    ) -> None:
        self.group_id = group_id
        self.settings = settings
        self.state = GroupState.EMPTY
        self.previous_state = GroupState.EMPTY
        self.generation_id = generation
        self.protocol_type = protocol_type
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: dict[str, int] = {}  # member id -> handshake deadline
        self.pending_sync: set[str] = set()
        self.new_member_added = False
        # The join phase's timer: (deadline, kind, delay, remaining) with kind "initial" for
        # the delayed first rebalance of an Empty group, "rebalance" otherwise.
        self._join_timer: tuple[int, str, int, int] | None = None
        self._sync_deadline: tuple[int, int] | None = None  # (deadline, generation)
        # Called after the group became Stable or Empty (to persist its metadata record).
        self._on_change = on_change
        self._clock = clock
        # Kafka's currentStateTimestamp: a new group's is its creation; None when loaded
        # from a record that did not keep it.
        self.state_timestamp_ms: int | None = clock()

    def restore(
        self, protocol_name: str, leader_id: str | None, members: list[Member], now: int
    ) -> None:
        """Rebuild the group as persisted after its last SyncGroup: Stable with ``members``.

        As Kafka's coordinator load: members keep their ids, generation and assignments and
        carry on heartbeating; each session runs from ``now`` (the load), since the members
        could not heartbeat while the broker was down."""
        if not members:
            return
        self.protocol_name = protocol_name
        for member in members:
            member.is_new = False
            self.members[member.member_id] = member
            if member.group_instance_id is not None:
                self.static_members[member.group_instance_id] = member.member_id
            self._schedule_session(member, now)
        self.leader_id = leader_id if leader_id in self.members else next(iter(self.members))
        self.state = self.previous_state = GroupState.STABLE

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self)

    # --- queries ---------------------------------------------------------------------------

    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_members_joined(self) -> bool:
        joined = sum(1 for m in self.members.values() if m.awaiting_join)
        return joined == len(self.members) and not self.pending_members

    def candidate_protocols(self) -> set[str]:
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = {name for name, _ in protocols}
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and bool(names)
        return self.protocol_type == protocol_type and bool(names & self.candidate_protocols())

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), or None if unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = _subscription_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Kafka's ClassicGroup.isSubscribedToTopic: when the subscriptions are unknown
        (unreadable), a consumer group counts as subscribed, any other as not."""
        topics = self.subscribed_topics()
        if topics is None:
            return self.protocol_type == CONSUMER_PROTOCOL_TYPE
        return topic in topics

    def offset_expiration_base(self) -> Callable[[int], int] | None:
        """Kafka's ClassicGroup.offsetExpirationCondition: maps an offset's commit timestamp
        to the time its retention counts from, or None when no offset may expire now.

        - no protocol type (only standalone consumers committed): from each commit;
        - Empty: from when the group became Empty (from each commit if that is unknown).
          Commits do not move that time, so as in Kafka an offset committed to a group that
          has been Empty longer than the retention (an admin tool's reset) goes at the next
          check;
        - Stable consumer group with readable subscriptions: from each commit (the caller
          spares the topics it subscribes to);
        - anything else (rebalancing, or members of another protocol type): never."""
        if not self.protocol_type:
            return _commit_time
        if self.state is GroupState.EMPTY:
            became_empty = self.state_timestamp_ms
            if became_empty is None:
                return _commit_time
            return lambda _commit_timestamp_ms: became_empty
        if (
            self.protocol_type == CONSUMER_PROTOCOL_TYPE
            and self.state is GroupState.STABLE
            and self.subscribed_topics() is not None
        ):
            return _commit_time
        return None

    def next_deadline(self) -> int | None:
        deadlines = [m.deadline for m in self.members.values() if m.deadline is not None]
        deadlines += self.pending_members.values()
        if self._join_timer is not None:
            deadlines.append(self._join_timer[0])
        if self._sync_deadline is not None:
            deadlines.append(self._sync_deadline[0])
        return min(deadlines, default=None)

    # --- JoinGroup -------------------------------------------------------------------------

    def join(self, req: JoinRequest, waiter: asyncio.Future[JoinResult], now: int) -> None:
        """Handle a JoinGroup; ``waiter`` is completed now or when the join phase ends."""
        if self.state is GroupState.DEAD:
            _complete(waiter, JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, req.member_id))
            return
        if not self.supports_protocols(req.protocol_type, req.protocols):
            _complete(waiter, JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
            return
        if req.member_id == "":
            self._join_new_member(req, waiter, now)
        else:
            self._join_existing_member(req, waiter, now)

    def _new_member_id(self, req: JoinRequest) -> str:
        # Kafka: "<group.instance.id or client.id>-<uuid>".
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        return f"{prefix}-{uuid.uuid4()}"

    def _join_new_member(
        self, req: JoinRequest, waiter: asyncio.Future[JoinResult], now: int
    ) -> None:
        member_id = self._new_member_id(req)
        if req.group_instance_id is not None:
            existing = self.static_members.get(req.group_instance_id)
            if existing is not None:
                self._replace_static_member(existing, member_id, req, waiter, now)
            else:
                self._add_member(member_id, req, waiter, now)
        elif req.require_known_member_id:
            # KIP-394: hand out the id first, so a client that times out and retries does not
            # leave a defunct member behind in a long rebalance.
            self.pending_members[member_id] = now + req.session_timeout_ms
            _complete(waiter, JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
        else:
            self._add_member(member_id, req, waiter, now)

    def _join_existing_member(
        self, req: JoinRequest, waiter: asyncio.Future[JoinResult], now: int
    ) -> None:
        member_id = req.member_id
        if member_id in self.pending_members:
            del self.pending_members[member_id]
            self._add_member(member_id, req, waiter, now)
            return
        error = self.validate_member(member_id, req.group_instance_id)
        if error:
            _complete(waiter, JoinResult(error, member_id))
            return
        member = self.members[member_id]
        if self.state is GroupState.PREPARING_REBALANCE:
            self._update_member(member, req, waiter)
            self._rebalance_or_complete_join(now, f"member {member_id} rejoined")
        elif self.state is GroupState.COMPLETING_REBALANCE:
            if member.matches(req.protocols):
                # A retried JoinGroup (the first answer was lost): same answer again.
                _complete(waiter, self._join_result(member_id))
            else:
                self._update_member(member, req, waiter)
                self._rebalance_or_complete_join(now, f"member {member_id} changed metadata")
        elif self.state is GroupState.STABLE:
            if member_id == self.leader_id or not member.matches(req.protocols):
                # The leader rejoining forces a rebalance: that is how a consumer leader reacts
                # to metadata changes (new partitions) that do not change its subscription.
                self._update_member(member, req, waiter)
                self._rebalance_or_complete_join(now, f"member {member_id} rejoined")
            else:
                _complete(waiter, self._join_result(member_id, leader_view=False))
        else:
            _complete(waiter, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _add_member(
        self, member_id: str, req: JoinRequest, waiter: asyncio.Future[JoinResult], now: int
    ) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=list(req.protocols),
            join_waiter=waiter,
            is_new=True,
            # The session cannot run while the JoinGroup is parked, so a new member that
            # disappears is only noticed after this (Kafka's new-member join timeout).
            deadline=now + NEW_MEMBER_JOIN_TIMEOUT_MS,
        )
        if self.state is GroupState.PREPARING_REBALANCE and (
            self.previous_state is GroupState.EMPTY
        ):
            self.new_member_added = True
        if not self.members:
            self.protocol_type = req.protocol_type
        self.members[member_id] = member
        if req.group_instance_id is not None:
            self.static_members[req.group_instance_id] = member_id
        if self.leader_id is None:
            self.leader_id = member_id
        self._rebalance_or_complete_join(now, f"new member {member_id} joined")

    def _update_member(
        self, member: Member, req: JoinRequest, waiter: asyncio.Future[JoinResult] | None
    ) -> None:
        member.protocols = list(req.protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        if waiter is not None:
            # A second JoinGroup from the same member replaces the first (its connection
            # is gone); the old one gets no answer, as in Kafka.
            member.join_waiter = waiter

    def _replace_static_member(
        self,
        old_id: str,
        new_id: str,
        req: JoinRequest,
        waiter: asyncio.Future[JoinResult],
        now: int,
    ) -> None:
        """Kafka's updateStaticMemberThenRebalanceOrCompleteJoin: the member keeps its place
        (and assignment) under ``new_id``; the old id is fenced."""
        previous_leader = self.leader_id
        old = self.members.pop(old_id)
        fenced = JoinResult(FENCED_INSTANCE_ID, old_id)
        _complete(old.join_waiter, fenced)
        _complete(old.sync_waiter, SyncResult(FENCED_INSTANCE_ID))
        old.join_waiter = old.sync_waiter = None
        old.member_id = new_id
        old.client_id, old.client_host = req.client_id, req.client_host
        self.members[new_id] = old
        assert req.group_instance_id is not None
        self.static_members[req.group_instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        self._update_member(old, req, waiter)
        if self.state is GroupState.STABLE and self._select_protocol() == self.protocol_name:
            # KIP-345's point: a restarted static member gets the current generation back.
            # Kafka rebalances only when the protocol selected for the next generation
            # changes, not on new metadata (a changed subscription) for the same protocol.
            old.join_waiter = None
            self._schedule_session(old, now)
            # Kafka persists the group here: the new member id must survive a restart.
            self._changed()
            _complete(waiter, self._static_rejoin_result(old, previous_leader, req))
            return
        self._rebalance_or_complete_join(now, f"static member {req.group_instance_id} replaced")

    def _static_rejoin_result(
        self, member: Member, previous_leader: str | None, req: JoinRequest
    ) -> JoinResult:
        if req.supports_skip_assignment:
            # KIP-814 (v9+): the leader learns that it leads and gets the members, with
            # skip_assignment since the current assignment stands.
            is_leader = member.member_id == self.leader_id
            result = self._join_result(member.member_id, leader_view=is_leader)
            result.skip_assignment = is_leader
            return result
        # Before v9 Kafka names the leader as it was before the replacement: a restarted
        # leader sees someone else's id, acts as a follower and keeps the assignment.
        result = self._join_result(member.member_id, leader_view=False)
        result.leader = previous_leader or ""
        return result

    def _join_result(self, member_id: str, *, leader_view: bool | None = None) -> JoinResult:
        if leader_view is None:
            leader_view = member_id == self.leader_id
        members = (
            [
                (m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                for m in self.members.values()
            ]
            if leader_view
            else []
        )
        return JoinResult(
            ErrorCode.NONE,
            member_id,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=self.leader_id or "",
            members=members,
        )

    # --- rebalance -------------------------------------------------------------------------

    def _rebalance_or_complete_join(self, now: int, reason: str) -> None:
        if self.state in (GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.prepare_rebalance(now, reason)
        else:
            self._maybe_complete_join(now)

    def _maybe_complete_join(self, now: int) -> None:
        # The first rebalance of an Empty group always waits for its delay timer.
        if (
            self.state is GroupState.PREPARING_REBALANCE
            and self.all_members_joined()
            and self.previous_state is not GroupState.EMPTY
        ):
            self._complete_join(now)

    def prepare_rebalance(self, now: int, reason: str) -> None:
        if self.state is GroupState.COMPLETING_REBALANCE:
            # Members parked in SyncGroup must rejoin: their assignment is void.
            for member in self.members.values():
                member.assignment = b""
            self._propagate_assignment(ErrorCode.REBALANCE_IN_PROGRESS, now)
        self.pending_sync.clear()
        self._sync_deadline = None
        initial = self.state is GroupState.EMPTY
        self._transition(GroupState.PREPARING_REBALANCE)
        log.info(
            "group %s: preparing to rebalance (generation %d): %s",
            self.group_id,
            self.generation_id,
            reason,
        )
        if initial:
            delay = self.settings.initial_rebalance_delay_ms
            remaining = max(self.rebalance_timeout_ms() - delay, 0)
            self._join_timer = (now + delay, "initial", delay, remaining)
        elif self.all_members_joined():
            self._complete_join(now)
        else:
            self._join_timer = (now + self.rebalance_timeout_ms(), "rebalance", 0, 0)

    def _complete_join(self, now: int) -> None:
        self._join_timer = None
        gone = [
            m for m in self.members.values() if not m.awaiting_join and m.group_instance_id is None
        ]
        for member in gone:
            self._remove(member.member_id)
        if gone:
            log.info(
                "group %s: removed members that did not rejoin: %s",
                self.group_id,
                [m.member_id for m in gone],
            )
        if self.state is GroupState.DEAD:
            return
        if self.members and not self._elect_joined_leader():
            # Only static members that have not rejoined are left: wait for them (or for
            # their sessions to expire) one more rebalance timeout.
            self._join_timer = (now + self.rebalance_timeout_ms(), "rebalance", 0, 0)
            return
        self.generation_id += 1
        if self.members:
            self.protocol_name = self._select_protocol()
            self._transition(GroupState.COMPLETING_REBALANCE)
            log.info(
                "group %s: generation %d with %d member(s), protocol %s, leader %s",
                self.group_id,
                self.generation_id,
                len(self.members),
                self.protocol_name,
                self.leader_id,
            )
            for member in self.members.values():
                waiter, member.join_waiter = member.join_waiter, None
                _complete(waiter, self._join_result(member.member_id))
                member.is_new = False
                self._schedule_session(member, now)
                self.pending_sync.add(member.member_id)
            self._sync_deadline = (now + self.rebalance_timeout_ms(), self.generation_id)
        else:
            self.protocol_name = None
            self._transition(GroupState.EMPTY)
            log.info("group %s: generation %d is empty", self.group_id, self.generation_id)
            self._changed()

    def _elect_joined_leader(self) -> bool:
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def _select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        # Most votes wins; ties go to the protocol voted for first.
        return max(votes, key=lambda name: votes[name])

    def _transition(self, state: GroupState) -> None:
        self.previous_state = self.state
        self.state = state
        self.state_timestamp_ms = self._clock()

    # --- SyncGroup -------------------------------------------------------------------------

    def sync(
        self,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        waiter: asyncio.Future[SyncResult],
        now: int,
    ) -> None:
        if self.state is GroupState.DEAD:
            _complete(waiter, SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        error = self.validate_member(member_id, group_instance_id)
        if not error and generation_id != self.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        if not error and (
            (protocol_type is not None and protocol_type != self.protocol_type)
            or (protocol_name is not None and protocol_name != self.protocol_name)
        ):
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if error:
            _complete(waiter, SyncResult(error))
            return
        member = self.members[member_id]
        if self.state is GroupState.PREPARING_REBALANCE:
            _complete(waiter, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif self.state is GroupState.COMPLETING_REBALANCE:
            member.sync_waiter = waiter
            self.pending_sync.discard(member_id)
            if member_id == self.leader_id:
                for m in self.members.values():
                    m.assignment = assignments.get(m.member_id, b"")
                self._transition(GroupState.STABLE)
                # Kafka appends the group record (with the assignments) before answering;
                # the coordinator holds the answers until that record is fsynced.
                self._changed()
                self._propagate_assignment(ErrorCode.NONE, now)
        elif self.state is GroupState.STABLE:
            self.pending_sync.discard(member_id)
            _complete(waiter, self._sync_result(member))
        else:
            _complete(waiter, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if not self.pending_sync:
            self._sync_deadline = None

    def _sync_result(self, member: Member) -> SyncResult:
        return SyncResult(ErrorCode.NONE, self.protocol_type, self.protocol_name, member.assignment)

    def _propagate_assignment(self, error: int, now: int) -> None:
        for member in self.members.values():
            waiter, member.sync_waiter = member.sync_waiter, None
            if waiter is None:
                continue
            if error:
                _complete(waiter, SyncResult(error))
            else:
                _complete(waiter, self._sync_result(member))
            self._schedule_session(member, now)

    # --- Heartbeat / LeaveGroup / membership checks ----------------------------------------

    def validate_member(self, member_id: str, group_instance_id: str | None) -> int:
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                log.info(
                    "group %s: member %s fenced by %s for instance %s",
                    self.group_id,
                    member_id,
                    existing,
                    group_instance_id,
                )
                return FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def heartbeat(
        self, member_id: str, group_instance_id: str | None, generation_id: int, now: int
    ) -> int:
        if self.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self.validate_member(member_id, group_instance_id)
        if error:
            return error
        if generation_id != self.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        self._schedule_session(self.members[member_id], now)
        if self.state is GroupState.PREPARING_REBALANCE:
            # How members of the old generation learn that they must rejoin.
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, member_id: str, group_instance_id: str | None, now: int, reason: str) -> int:
        """Remove one member (LeaveGroup v3+ sends several). Returns its error code."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member_id != "" and member_id != existing:
                return FENCED_INSTANCE_ID
            member_id = existing
        elif member_id in self.pending_members:
            del self.pending_members[member_id]
            if self.state is GroupState.PREPARING_REBALANCE and self.all_members_joined():
                self._complete_join(now)
            return ErrorCode.NONE
        elif member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.remove_member(member_id, now, reason)
        return ErrorCode.NONE

    def remove_member(self, member_id: str, now: int, reason: str) -> None:
        member = self.members[member_id]
        waiter, member.join_waiter = member.join_waiter, None
        # A member removed while parked in JoinGroup retries with a fresh join.
        _complete(waiter, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        self._remove(member_id)
        log.info("group %s: member %s removed: %s", self.group_id, member_id, reason)
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._rebalance_or_complete_join(now, reason)
        elif self.state is GroupState.PREPARING_REBALANCE and self.all_members_joined():
            self._complete_join(now)

    def _remove(self, member_id: str) -> None:
        member = self.members.pop(member_id)
        _complete(member.sync_waiter, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)

    def _schedule_session(self, member: Member, now: int) -> None:
        member.deadline = now + member.session_timeout_ms

    # --- timers ----------------------------------------------------------------------------

    def tick(self, now: int) -> None:
        """Apply every expiration due at ``now``."""
        for member_id, deadline in list(self.pending_members.items()):
            if deadline <= now:
                log.info("group %s: pending member %s expired", self.group_id, member_id)
                self.leave(member_id, None, now, "pending member expired")
        for member in list(self.members.values()):
            if member.deadline is None or member.deadline > now:
                continue
            if member.member_id not in self.members:
                continue
            if not member.is_new and (member.awaiting_join or member.awaiting_sync):
                # Parked in JoinGroup/SyncGroup: alive; the session restarts on the answer.
                member.deadline = None
                continue
            self.remove_member(member.member_id, now, "session timeout expired")
        if self._join_timer is not None and self._join_timer[0] <= now:
            _, kind, delay, remaining = self._join_timer
            if kind == "initial" and self.new_member_added and remaining > 0:
                # New members keep arriving: give them another delay, within the budget of
                # the rebalance timeout (Kafka's InitialDelayedJoin).
                self.new_member_added = False
                next_delay = min(self.settings.initial_rebalance_delay_ms, remaining)
                self._join_timer = (
                    now + next_delay,
                    "initial",
                    next_delay,
                    max(remaining - delay, 0),
                )
            else:
                self._complete_join(now)
        if self._sync_deadline is not None and self._sync_deadline[0] <= now:
            _, generation = self._sync_deadline
            self._sync_deadline = None
            if (
                generation == self.generation_id
                and self.pending_sync
                and self.state
                in (
                    GroupState.COMPLETING_REBALANCE,
                    GroupState.STABLE,
                )
            ):
                missing = sorted(self.pending_sync)
                for member_id in missing:
                    if member_id in self.members:
                        self._remove(member_id)
                self.prepare_rebalance(now, f"members {missing} did not send SyncGroup")

    # --- coordinator shutdown / deletion ---------------------------------------------------

    def unload(self, error: int) -> None:
        """Answer every parked request with ``error`` (NOT_COORDINATOR when shutting down)."""
        for member in self.members.values():
            _complete(member.join_waiter, JoinResult(error, member.member_id))
            _complete(member.sync_waiter, SyncResult(error))
            member.join_waiter = member.sync_waiter = None

    def mark_dead(self) -> None:
        self.unload(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        self._transition(GroupState.DEAD)
        self._join_timer = None
        self._sync_deadline = None


def _subscription_topics(data: bytes) -> set[str] | None:
    """Topics of a ConsumerProtocolSubscription (its v0 prefix is common to all versions)."""
    try:
        pos = 2  # int16 version
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        topics = set()
        for _ in range(max(count, 0)):
            (n,) = struct.unpack_from(">h", data, pos)
            pos += 2
            if n < 0 or pos + n > len(data):
                return None
            topics.add(data[pos : pos + n].decode())
            pos += n
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
