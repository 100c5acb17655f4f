"""Every KIP-848 consumer group: ConsumerGroupHeartbeat, timeouts, offsets checks, persistence.

Follows Kafka 4.0's GroupMetadataManager.consumerGroupHeartbeat step by step:

1. The request is checked (throwIfConsumerGroupHeartbeatRequestIsInvalid): INVALID_REQUEST
   with Kafka's messages, UNSUPPORTED_ASSIGNOR for an assignor not in
   ``group.consumer.assignors``, INVALID_REGULAR_EXPRESSION (v1) for a regex new to the group
   that does not compile with RE2/J's rules (``topic_regex``).
2. Epoch -1 leaves (the member is fenced: removed, group epoch bumped); -2 is a static
   member's temporary leave (epoch -2 kept until it rejoins or its session expires).
3. Epoch 0 joins: the group is created if needed (an Empty classic group, e.g. one that only
   committed offsets, becomes a consumer group keeping its offsets), GROUP_MAX_SIZE_REACHED
   past ``group.consumer.max.size``; a static member (instance id) replaces the previous
   holder of its instance id only if that one left with epoch -2, else
   UNRELEASED_INSTANCE_ID. Other epochs must match the member's epoch (or be its previous
   epoch while it owns a subset of its partitions, a lost response) else
   FENCED_MEMBER_EPOCH; unknown members get UNKNOWN_MEMBER_ID, a replaced static member
   FENCED_INSTANCE_ID.
4. A changed subscription, regex, assignor or rack, or a change of the subscribed topics'
   partitions, bumps the group epoch; a group epoch ahead of the assignment epoch recomputes
   the target assignment with the members' most wanted assignor (default the first of
   ``group.consumer.assignors``).
5. The member is reconciled (``ConsumerGroup.reconcile``); the answer carries its epoch, the
   heartbeat interval, and its assignment when it joined, sent a full request, or the
   assignment changed.

Sessions: a member not heard from within the group's session timeout is fenced, as
is one that keeps partitions it must revoke beyond its rebalance timeout. Every change writes
the group's records to ``__consumer_offsets`` (broker.coordinator.offsets_topic); the
answer waits for its fsync round, as Kafka answers once its records are written. At start-up
groups come back with their members, epochs and assignments, sessions restarting from the
load, so members carry on without rejoining.

Regexes (Kafka's maybeUpdateRegularExpressions / refreshRegularExpressions): a heartbeat
never matches one. It schedules a resolution of all the group's regexes off the event loop
(``off_loop``: a worker thread in the broker) when the group has a regex not resolved yet or
topics were created since the last resolution, at most one at a time per group and at most
every 10 s; when it finishes, the group's resolved regexes are updated and stored with the
group, and a change bumps the group epoch, so the next heartbeats bring the new assignment.
With an authorizer, the topics that the member whose heartbeat started the resolution may not
DESCRIBE (its principal, from its address) are left out of every regex of the group, as
Kafka's filterTopicDescribeAuthorizedTopics (with that heartbeat's request context).
A member subscribing to a new regex therefore gets its topics a heartbeat or more later, as
in Kafka. The resolutions are stored, so a restart matches nothing while loading.

Deviations: partition counts are compared at every heartbeat instead of at Kafka's metadata
refresh interval; ``topic_regex`` bounds a regex's size (Kafka does not).

Per-group configs (IncrementalAlterConfigs on GROUP resources, broker.config.group_configs):
consumer.session.timeout.ms and consumer.heartbeat.interval.ms override the broker's
``group.consumer.*`` for that group, read at each heartbeat (a session deadline set before a
change keeps its time until the member's next heartbeat, as in Kafka).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from broker.coordinator.groups import migration, topic_regex
from broker.coordinator.groups.assignors import ASSIGNORS
from broker.coordinator.groups.consumer import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    GroupState,
    HeartbeatError,
    MemberState,
    TopicPartitions,
)
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

# Kafka's ConsumerGroupHeartbeatRequest.CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION (KIP-1082).
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1

# (name -> (topic id, partition count)) of every topic that exists now.
TopicsView = Callable[[], dict[str, tuple[bytes, int]]]
# A group's config overrides (IncrementalAlterConfigs on GROUP resources, already checked).
GroupConfigs = Callable[[str], Mapping[str, str]]
# regex -> the topic names it matches.
Resolution = dict[str, frozenset[str]]
# Runs the work away from the event loop and calls back on the loop with its result (None if
# it failed).
OffLoop = Callable[[Callable[[], Resolution], Callable[[Resolution | None], None]], None]
# Kafka 4.0's REGEX_BATCH_REFRESH_INTERVAL_MS: a group's regexes are resolved at most this often.
REGEX_REFRESH_INTERVAL_MS = 10_000
SESSION_TIMEOUT_CONFIG = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL_CONFIG = "consumer.heartbeat.interval.ms"


def _no_group_configs(_group_id: str) -> Mapping[str, str]:
    return {}


def _inline(work: Callable[[], Resolution], done: Callable[[Resolution | None], None]) -> None:
    done(work())


def _describable(resolved: Resolution, may_describe: Callable[[str], bool]) -> Resolution:
    """Kafka's filterTopicDescribeAuthorizedTopics: the topics the member whose heartbeat
    started the resolution may not DESCRIBE are dropped from every regex of the group (each
    topic checked once; denials not logged)."""
    matched = {name for names in resolved.values() for name in names}
    denied = {name for name in matched if not may_describe(name)}
    if not denied:
        return resolved
    return {regex: names - denied for regex, names in resolved.items()}


@dataclass(frozen=True, slots=True)
class ConsumerGroupSettings:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")
    # group.consumer.migration.policy: disabled, upgrade, downgrade or bidirectional.
    migration_policy: str = "bidirectional"


@dataclass(slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: list[tuple[bytes, list[int]]] | None
    client_id: str
    client_host: str
    version: int
    # With an authorizer: may this member's principal, from its address, DESCRIBE the
    # topic? Safe to call from a worker thread (regex resolutions use it there).
    may_describe: Callable[[str], bool] | None = None


@dataclass(slots=True)
class HeartbeatResult:
    error: int = ErrorCode.NONE
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicPartitions | None = None
    # Groups whose records were written (the answer waits for their fsync).
    changed: list[str] = field(default_factory=list)


class ConsumerGroupManager:
    def __init__(
        self,
        settings: ConsumerGroupSettings,
        topics: TopicsView,
        persist: Callable[[ConsumerGroup], None],
        group_configs: GroupConfigs | None = None,
        off_loop: OffLoop | None = None,
    ) -> None:
        self.settings = settings
        self._group_configs = group_configs or _no_group_configs
        self._topics = topics
        self._persist = persist
        self.groups: dict[str, ConsumerGroup] = {}
        self._off_loop = off_loop or _inline
        # Groups whose regexes are being resolved.
        self._resolving: set[str] = set()
        # The topic names last seen, and a generation bumped whenever one appears (Kafka's
        # lastMetadataImageWithNewTopics): a group resolved before it must resolve again.
        self._topic_names: frozenset[str] = frozenset()
        self._topics_generation = 0
        # Set by the coordinator: replaces the group by a classic group without the leaving
        # members (Kafka's convertToClassicGroup).
        # Called with the group, the leaving members, and whether a rebalance must follow.
        self.on_downgrade: Callable[[ConsumerGroup, set[str], bool], None] | None = None

    # --- per-group settings ----------------------------------------------------------------

    def session_timeout_ms(self, group_id: str) -> int:
        """The group's consumer.session.timeout.ms, else the broker's (Kafka 4.0's
        GroupMetadataManager.consumerGroupSessionTimeoutMs)."""
        raw = self._group_configs(group_id).get(SESSION_TIMEOUT_CONFIG)
        return int(raw) if raw is not None else self.settings.session_timeout_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's consumer.heartbeat.interval.ms, else the broker's."""
        raw = self._group_configs(group_id).get(HEARTBEAT_INTERVAL_CONFIG)
        return int(raw) if raw is not None else self.settings.heartbeat_interval_ms

    # --- heartbeat -------------------------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest, now: int) -> HeartbeatResult:
        try:
            self._validate(req)
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(req)
            return self._heartbeat(req, now)
        except HeartbeatError as e:
            return HeartbeatResult(e.code, e.message)

    def valid_request(self, req: HeartbeatRequest) -> bool:
        try:
            self._validate(req)
        except HeartbeatError:
            return False
        return True

    def _validate(self, req: HeartbeatRequest) -> None:
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

        if (
            req.version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
            or req.member_epoch > 0
            or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
        ) and not req.member_id:
            raise invalid("MemberId can't be empty.")
        if not req.group_id:
            raise invalid("GroupId can't be empty.")
        if req.instance_id is not None and not req.instance_id:
            raise invalid("InstanceId can't be empty.")
        if req.rack_id is not None and not req.rack_id:
            raise invalid("RackId can't be empty.")
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.owned is None or req.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise invalid(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                    "when (re-)joining."
                )
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if req.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in self.settings.assignors:
            raise HeartbeatError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                f"{', '.join(self.settings.assignors)}.",
            )

    @staticmethod
    def _check_regex(regex: str) -> None:
        """Kafka's throwIfRegularExpressionIsInvalid."""
        try:
            topic_regex.compile_regex(regex)
        except topic_regex.InvalidRegex as e:
            raise HeartbeatError(
                ErrorCode.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
                f"{e.description}.",
            ) from None

    def group_or_error(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return group

    def _member(self, group: ConsumerGroup, member_id: str) -> ConsumerMember:
        member = group.members.get(member_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        return member

    def _static_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str
    ) -> ConsumerMember:
        member = group.static_member(instance_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown."
            )
        if member.member_id != member_id:
            raise HeartbeatError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{member.member_id}.",
            )
        return member

    def _leave(self, req: HeartbeatRequest) -> HeartbeatResult:
        group = self._existing(req.group_id)
        if req.instance_id is None:
            member = self._member(group, req.member_id)
        else:
            member = self._static_member(group, req.member_id, req.instance_id)
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                # Kept with epoch -2 so the instance can come back
                # (consumerGroupStaticMemberGroupLeave).
                log.info(
                    "group %s: static member %s (%s) temporarily left",
                    group.group_id,
                    member.member_id,
                    req.instance_id,
                )
                member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
                member.pending_revocation = {}
                member.rebalance_deadline = None
                self._persist(group)
                return HeartbeatResult(
                    member_id=member.member_id,
                    member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                    changed=[group.group_id],
                )
        log.info("group %s: member %s left", group.group_id, member.member_id)
        self.fence(group, member.member_id)
        return HeartbeatResult(
            member_id=req.member_id, member_epoch=req.member_epoch, changed=[group.group_id]
        )

    def _existing(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found."
            )
        return group

    def fence(self, group: ConsumerGroup, member_id: str) -> None:
        self.fence_members(group, {member_id})

    def fence_members(self, group: ConsumerGroup, member_ids: set[str]) -> None:
        """Kafka's consumerGroupFenceMembers: remove the members and bump the group epoch, so
        the others get a new target at their next heartbeat; or, when only classic-protocol
        members would remain and the policy allows it, downgrade the group to a classic one
        (validateOnlineDowngradeWithFencedMembers)."""
        if self.groups.get(group.group_id) is not group:
            return  # converted meanwhile
        leaving = {m for m in member_ids if m in group.members}
        if not leaving:
            return
        if self._can_downgrade(group, leaving) and self.on_downgrade is not None:
            self.on_downgrade(group, leaving, True)
            return
        for member_id in leaving:
            group.remove_member(member_id)
        group.group_epoch += 1
        self._persist(group)

    def can_downgrade_replacing(self, group: ConsumerGroup, replaced: ConsumerMember) -> bool:
        """Kafka's validateOnlineDowngradeWithReplacedMember: a classic static member takes
        the place of the only consumer-protocol member."""
        others = [m for m in group.members.values() if m is not replaced]
        if replaced.uses_classic_protocol or not all(m.uses_classic_protocol for m in others):
            return False
        if not migration.downgrade_enabled(self.settings.migration_policy):
            log.info(
                "Cannot downgrade consumer group %s to classic group because the online "
                "downgrade is disabled.",
                group.group_id,
            )
            return False
        return True

    def _can_downgrade(self, group: ConsumerGroup, leaving: set[str]) -> bool:
        remaining = [m for m in group.members.values() if m.member_id not in leaving]
        if not all(m.uses_classic_protocol for m in remaining):
            return False
        if not remaining:
            return False  # Kafka: "Skip downgrading ... because it's empty."
        if not migration.downgrade_enabled(self.settings.migration_policy):
            log.info(
                "Cannot downgrade consumer group %s to classic group because the online "
                "downgrade is disabled.",
                group.group_id,
            )
            return False
        return True

    def _heartbeat(self, req: HeartbeatRequest, now: int) -> HeartbeatResult:
        joining = req.member_epoch == 0
        group = self.groups.get(req.group_id)
        if group is None:
            if not joining:
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found."
                )
            group = ConsumerGroup(req.group_id)
        member_id = req.member_id
        if len(group.members) >= self.settings.max_size and (
            not member_id or member_id not in group.members
        ):
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                "The consumer group has reached its maximum capacity of "
                f"{self.settings.max_size} members.",
            )
        if not member_id:
            member_id = str(uuid.uuid4())
        replaced: str | None = None
        if req.instance_id is None:
            existing = group.members.get(member_id)
            if existing is None:
                if not joining:
                    self._member(group, member_id)
                member = ConsumerMember(member_id)
            else:
                member = existing
                _check_epoch(member, req.member_epoch, req.owned)
        elif joining:
            previous = group.static_member(req.instance_id)
            if previous is None:
                member = group.members.get(member_id) or ConsumerMember(member_id)
            elif previous.member_id == member_id and previous.member_epoch != (
                LEAVE_GROUP_STATIC_MEMBER_EPOCH
            ):
                member = previous
            else:
                # A classic member's instance is taken over at once (Kafka checks the
                # release only when both use the consumer protocol).
                if (
                    previous.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
                    and not previous.uses_classic_protocol
                ):
                    raise HeartbeatError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {req.instance_id} cannot "
                        f"join the group because the instance id is owned by "
                        f"{previous.member_id} member.",
                    )
                # The new incarnation takes the old one's place and partitions, at epoch 0.
                member = ConsumerMember(
                    member_id,
                    instance_id=previous.instance_id,
                    rack_id=previous.rack_id,
                    rebalance_timeout_ms=previous.rebalance_timeout_ms,
                    subscribed_topic_names=previous.subscribed_topic_names,
                    subscribed_topic_regex=previous.subscribed_topic_regex,
                    server_assignor=previous.server_assignor,
                    assigned=dict(previous.assigned),
                )
                replaced = previous.member_id
        else:
            member = self._static_member(group, member_id, req.instance_id)
            _check_epoch(member, req.member_epoch, req.owned)

        if (
            req.subscribed_topic_regex
            and req.subscribed_topic_regex != member.subscribed_topic_regex
            and req.subscribed_topic_regex not in group.subscribed_regexes()
        ):
            # Only a regex new to the group is compiled here (maybeUpdateRegularExpressions).
            self._check_regex(req.subscribed_topic_regex)
        old_key = None if member.member_id not in group.members else member.subscription_key()
        if req.instance_id is not None:
            member.instance_id = req.instance_id
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.server_assignor is not None:
            member.server_assignor = req.server_assignor
        if req.subscribed_topic_names is not None:
            member.subscribed_topic_names = tuple(sorted(set(req.subscribed_topic_names)))
        if req.subscribed_topic_regex is not None:
            member.subscribed_topic_regex = req.subscribed_topic_regex or None
        changed = member.client_id != req.client_id or member.client_host != req.client_host
        member.client_id = req.client_id
        member.client_host = req.client_host
        before = (member.member_epoch, member.state, member.assigned, member.pending_revocation)

        if group.group_id not in self.groups:
            self.groups[group.group_id] = group
            log.info("group %s: created (consumer protocol)", group.group_id)
        bump = group.group_epoch == 0 or old_key != member.subscription_key()
        if replaced is not None:
            old_target = group.target.get(replaced, {})
            group.remove_member(replaced)
            group.target[member_id] = old_target
            log.info("group %s: static member %s replaces %s", group.group_id, member_id, replaced)
            changed = True
        if member.member_id not in group.members:
            log.info("group %s: member %s joins", group.group_id, member_id)
            changed = True
        group.put_member(member)
        self._maybe_refresh_regexes(group, now, req.may_describe)

        resolved = self._resolve(group)
        metadata = self._subscription_metadata(group, resolved)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            bump = True
        if bump:
            group.group_epoch += 1
            changed = True
        if group.group_epoch > group.assignment_epoch:
            assignor = group.preferred_assignor(self.settings.assignors[0])
            group.compute_target(assignor, resolved, group.group_epoch)
            log.info(
                "group %s: target assignment for epoch %d with %s",
                group.group_id,
                group.group_epoch,
                assignor,
            )
            changed = True

        group.reconcile(member, req.owned)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if member.rebalance_deadline is None or before[0:2] != (
                member.member_epoch,
                member.state,
            ):
                member.rebalance_deadline = now + max(member.rebalance_timeout_ms, 0)
        else:
            member.rebalance_deadline = None
        member.session_deadline = now + self.member_session_timeout_ms(group.group_id, member)
        after = (member.member_epoch, member.state, member.assigned, member.pending_revocation)
        if changed or before != after:
            self._persist(group)
        full = (
            req.rebalance_timeout_ms != -1
            and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
            and req.owned is not None
        )
        send_assignment = joining or full or before[2] != member.assigned
        return HeartbeatResult(
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id),
            assignment=dict(member.assigned) if send_assignment else None,
            changed=[group.group_id] if changed or before != after else [],
        )

    def topics(self) -> dict[str, tuple[bytes, int]]:
        return self._topics()

    def update_target_and_reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerMember,
        *,
        bump: bool,
        owned: list[tuple[bytes, list[int]]] | None,
    ) -> bool:
        """For a classic member's JoinGroup (already put in the group): the group epoch, the
        target assignment and the member's reconciliation, as a heartbeat does them (Kafka
        times a classic member's revocation with its join and sync timeouts, not with the
        rebalance timeout). Returns whether the group epoch was bumped."""
        if group.group_id not in self.groups:
            self.groups[group.group_id] = group
        resolved = self._resolve(group)
        metadata = self._subscription_metadata(group, resolved)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            bump = True
        if bump:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            assignor = group.preferred_assignor(self.settings.assignors[0])
            group.compute_target(assignor, resolved, group.group_epoch)
            log.info(
                "group %s: target assignment for epoch %d with %s",
                group.group_id,
                group.group_epoch,
                assignor,
            )
        group.reconcile(member, owned)
        return bump

    def persist(self, group: ConsumerGroup) -> None:
        self._persist(group)

    def member_session_timeout_ms(self, group_id: str, member: ConsumerMember) -> int:
        """A classic member's own session timeout (from its JoinGroup), else the group's."""
        if member.classic_session_timeout_ms is not None:
            return member.classic_session_timeout_ms
        return self.session_timeout_ms(group_id)

    def _resolve(self, group: ConsumerGroup) -> dict[str, frozenset[str]]:
        """The group's regexes as last resolved (never matched here, on the request path)."""
        return group.resolved_regexes

    # --- regex resolution (Kafka's maybeUpdateRegularExpressions) ----------------------------

    def _maybe_refresh_regexes(
        self, group: ConsumerGroup, now: int, may_describe: Callable[[str], bool] | None
    ) -> None:
        regexes = group.subscribed_regexes()
        if not regexes or group.group_id in self._resolving:
            return
        last = group.regex_refresh_ms
        if last is not None and now <= last + REGEX_REFRESH_INTERVAL_MS:
            return
        topics = self._topics()
        generation = self._observe_topics(topics)
        unresolved = any(r not in group.resolved_regexes for r in regexes)
        if not unresolved and group.regex_topics_generation >= generation:
            return
        group_id = group.group_id
        patterns = sorted(regexes)
        names = list(topics)
        self._resolving.add(group_id)
        log.debug("group %s: resolving regular expressions %s", group_id, patterns)

        def work() -> Resolution:
            resolved = topic_regex.resolve(patterns, names, f"[GroupId {group_id}] ")
            return resolved if may_describe is None else _describable(resolved, may_describe)

        def done(result: Resolution | None) -> None:
            self._resolving.discard(group_id)
            if result is not None:
                self._apply_resolution(group_id, result, generation, now)

        self._off_loop(work, done)

    def _observe_topics(self, topics: Mapping[str, object]) -> int:
        if not self._topic_names.issuperset(topics.keys()):
            self._topics_generation += 1
        if self._topic_names != topics.keys():
            self._topic_names = frozenset(topics)
        return self._topics_generation

    def _apply_resolution(
        self, group_id: str, result: Resolution, generation: int, started: int
    ) -> None:
        """Kafka's handleRegularExpressionsResult: a regex whose topics changed bumps the
        group epoch, so the next heartbeats compute and reconcile the new target."""
        group = self.groups.get(group_id)
        if group is None:
            return
        subscribed = group.subscribed_regexes()
        changed = bump = False
        for regex, names in result.items():
            if regex not in subscribed:
                continue  # no member subscribes to it any more
            previous = group.resolved_regexes.get(regex)
            if previous != names:
                changed = True
                bump |= (previous or frozenset()) != names
                group.resolved_regexes[regex] = names
        for regex in [r for r in group.resolved_regexes if r not in subscribed]:
            del group.resolved_regexes[regex]
        group.regex_refresh_ms = started
        group.regex_topics_generation = generation
        metadata = self._subscription_metadata(group, group.resolved_regexes)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            bump = True
        log.info(
            "group %s: resolved regular expressions %s",
            group_id,
            {regex: sorted(names) for regex, names in result.items()},
        )
        if bump:
            group.group_epoch += 1
            log.info(
                "group %s: group epoch %d after a regex resolution", group_id, group.group_epoch
            )
        if changed or bump:
            self._persist(group)

    def _subscription_metadata(
        self, group: ConsumerGroup, resolved: dict[str, frozenset[str]]
    ) -> dict[str, tuple[bytes, int]]:
        topics = self._topics()
        return {
            name: topics[name] for name in group.subscribed_topic_names(resolved) if name in topics
        }

    # --- timers ----------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        deadlines = [
            d
            for g in self.groups.values()
            for m in g.members.values()
            for d in (m.session_deadline, m.rebalance_deadline, m.join_deadline, m.sync_deadline)
            if d is not None
        ]
        return min(deadlines) if deadlines else None

    def tick(self, now: int) -> None:
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                reason = _expired(member, now)
                if reason is not None:
                    log.info(
                        "group %s: member %s fenced: %s", group.group_id, member.member_id, reason
                    )
                    self.fence(group, member.member_id)

    # --- loading ---------------------------------------------------------------------------

    def load(self, group: ConsumerGroup, now: int) -> None:
        for member in group.members.values():
            member.session_deadline = now + self.member_session_timeout_ms(group.group_id, member)
        # Partition counts are compared again at the next heartbeat; regexes come resolved
        # from the record (resolved again, off the loop, at the next heartbeat).
        group.subscription_metadata = self._subscription_metadata(group, self._resolve(group))
        self.groups[group.group_id] = group

    # --- offsets (ConsumerGroup.validateOffsetCommit / validateOffsetFetch) -----------------

    def validate_commit(
        self, group: ConsumerGroup, member_id: str, member_epoch: int, version: int, txn: bool
    ) -> int:
        if member_epoch < 0 and group.is_empty():
            return ErrorCode.NONE
        if txn and member_epoch == -1 and member_id == "":
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not txn and not member.uses_classic_protocol and version < 9:
            # "OffsetCommit version 9 or above must be used by members using the modern
            # group protocol" (Kafka answers UNSUPPORTED_VERSION).
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.member_epoch and member.uses_classic_protocol:
            # A classic member's generation is its member epoch (validateMemberEpoch).
            return ErrorCode.ILLEGAL_GENERATION
        if member_epoch != member.member_epoch:
            log.info(
                "group %s: commit from %s refused: the received member epoch %d does not match "
                "the expected member epoch %d",
                group.group_id,
                member_id,
                member_epoch,
                member.member_epoch,
            )
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def validate_fetch(self, group: ConsumerGroup, member_id: str | None, member_epoch: int) -> int:
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            if member.uses_classic_protocol:
                return ErrorCode.ILLEGAL_GENERATION
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def subscribed_topics(self, group: ConsumerGroup) -> set[str]:
        """Every topic name the members subscribe to, by name or by a resolved regex."""
        return group.subscribed_topic_names(self._resolve(group))

    def state_of(self, group: ConsumerGroup) -> GroupState:
        return group.state


def _check_epoch(
    member: ConsumerMember, received: int, owned: list[tuple[bytes, list[int]]] | None
) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a greater epoch is fenced; a smaller
    one only if it is not the previous epoch with a subset of the current partitions (the
    answer that bumped the epoch may have been lost)."""
    if received > member.member_epoch:
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin.",
        )
    lost_answer = received == member.previous_member_epoch and _is_subset(owned, member.assigned)
    if received < member.member_epoch and not lost_answer:
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received}) than the "
            f"one known by the group coordinator ({member.member_epoch}). The member must "
            "abandon all its partitions and rejoin.",
        )


def _is_subset(owned: list[tuple[bytes, list[int]]] | None, assigned: TopicPartitions) -> bool:
    if owned is None:
        return False
    for topic_id, partitions in owned:
        have = assigned.get(topic_id)
        if have is None or any(p not in have for p in partitions):
            return False
    return True


__all__ = [
    "ASSIGNORS",
    "ConsumerGroupManager",
    "ConsumerGroupSettings",
    "HeartbeatRequest",
    "HeartbeatResult",
]


def _expired(member: ConsumerMember, now: int) -> str | None:
    """Why ``member`` is fenced at ``now`` (its first deadline passed), or None."""
    if member.session_deadline is not None and member.session_deadline <= now:
        return "the member session expired"
    if member.join_deadline is not None and member.join_deadline <= now:
        return "the classic member failed to join within the rebalance timeout"
    if member.sync_deadline is not None and member.sync_deadline <= now:
        return "the member failed to sync within timeout"
    if member.rebalance_deadline is not None and member.rebalance_deadline <= now:
        return (
            f"it failed to revoke its partitions from epoch {member.member_epoch} "
            f"within {member.rebalance_timeout_ms} ms"
        )
    return None
