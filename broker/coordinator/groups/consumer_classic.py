"""Classic-protocol members of a KIP-848 consumer group (online migration): JoinGroup,
SyncGroup, Heartbeat and LeaveGroup served from the consumer group's state, as Kafka 4.0's
GroupMetadataManager.classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup and classicGroupLeaveToConsumerGroup:

- JoinGroup (any migration policy but ``disabled``: else INCONSISTENT_GROUP_PROTOCOL) takes
  the subscription from the first protocol's metadata (topics, rack, owned partitions), bumps
  the group epoch when the subscription changed, recomputes the target and reconciles the
  member with the partitions it says it owns. The answer comes at once: the generation is
  the member epoch, the protocol name the member's first, no leader and no member list, so
  every classic member is a follower. A v4+ JoinGroup without a member id first gets
  MEMBER_ID_REQUIRED with one.
- SyncGroup answers the member's assigned partitions, serialized at its subscription's
  version; REBALANCE_IN_PROGRESS when the group epoch moved past its epoch (unless it is
  still revoking), so it rejoins.
- Heartbeat answers REBALANCE_IN_PROGRESS when the member must rejoin: the group epoch moved
  past its epoch, it must revoke partitions, or partitions it waits for were released.
- LeaveGroup fences the members (which may downgrade the group: ``fence_members``).

Every error is Kafka's: UNKNOWN_MEMBER_ID (also for a member that uses the consumer
protocol), FENCED_INSTANCE_ID, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL.

Timeouts: the session timeout of the member's JoinGroup; after a JoinGroup it must send
SyncGroup, and once told to rejoin (REBALANCE_IN_PROGRESS) it must send JoinGroup, within its
rebalance timeout, else it is fenced (Kafka's consumer group join and sync timers).
A static member (group.instance.id) that rejoins always replaces its previous incarnation at
epoch 0 with its partitions; if that one was the only consumer-protocol member, the group is
downgraded at once (validateOnlineDowngradeWithReplacedMember).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid

from broker.coordinator.groups import consumer_protocol as cp
from broker.coordinator.groups.classic import (
    CONSUMER_PROTOCOL_TYPE,
    JoinRequest,
    JoinResult,
    SyncResult,
)
from broker.coordinator.groups.consumer import (
    ConsumerGroup,
    ConsumerMember,
    HeartbeatError,
    MemberState,
)
from broker.coordinator.groups.consumer_manager import ConsumerGroupManager
from broker.coordinator.groups.migration import to_topic_ids, to_topic_names
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)


def join(
    manager: ConsumerGroupManager, group: ConsumerGroup, req: JoinRequest, now: int
) -> JoinResult:
    try:
        return _join(manager, group, req, now)
    except HeartbeatError as e:
        return JoinResult(e.code, req.member_id)


def _join(
    manager: ConsumerGroupManager, group: ConsumerGroup, req: JoinRequest, now: int
) -> JoinResult:
    if manager.settings.migration_policy == "disabled":
        log.info(
            "Cannot join the consumer group %s with the classic protocol because the group "
            "migration is disabled.",
            group.group_id,
        )
        raise HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "migration disabled")
    member_id = req.member_id
    unknown = member_id == ""
    if unknown:
        member_id = str(uuid.uuid4())
    if len(group.members) >= manager.settings.max_size and member_id not in group.members:
        raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED, "group full")
    if not group.supports_classic_protocols(req.protocol_type, {n for n, _ in req.protocols}):
        raise HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "protocols not supported")
    if unknown and req.group_instance_id is None and req.require_known_member_id:
        log.info(
            "group %s: dynamic member with unknown member id joins the consumer group; "
            "created member id %s and asked it to rejoin with it",
            group.group_id,
            member_id,
        )
        return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)

    replaced: ConsumerMember | None = None
    if req.group_instance_id is None:
        member = group.members.get(member_id) or ConsumerMember(member_id)
    else:
        previous = group.static_member(req.group_instance_id)
        if previous is None:
            member = group.members.get(member_id) or ConsumerMember(member_id)
        else:
            # Kafka's getOrMaybeSubscribeStaticConsumerGroupMember for a classic join: the
            # instance's member is always replaced by a copy under the request's member id
            # at epoch 0, keeping its partitions.
            replaced = previous
            member = dataclasses.replace(
                previous,
                member_id=member_id,
                member_epoch=0,
                previous_member_epoch=0,
                assigned=dict(previous.assigned),
                pending_revocation=dict(previous.pending_revocation),
                session_deadline=None,
                rebalance_deadline=None,
                join_deadline=None,
                sync_deadline=None,
            )

    try:
        subscription = cp.decode_subscription(req.protocols[0][1])
    except cp.MalformedProtocol:
        log.warning("group %s: member %s sent a malformed subscription", group.group_id, member_id)
        raise HeartbeatError(ErrorCode.UNKNOWN_SERVER_ERROR, "malformed subscription") from None

    downgrade = replaced is not None and manager.can_downgrade_replacing(group, replaced)
    old_key = member.subscription_key() if member.member_id in group.members else None
    if replaced is not None:
        old_key = replaced.subscription_key()
    had_regex = member.subscribed_topic_regex is not None
    if req.group_instance_id is not None:
        member.instance_id = req.group_instance_id
    if subscription.rack_id is not None:
        member.rack_id = subscription.rack_id
    if req.rebalance_timeout_ms != -1:
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
    member.server_assignor = None
    member.subscribed_topic_names = tuple(sorted(set(subscription.topics)))
    member.subscribed_topic_regex = None
    member.client_id = req.client_id
    member.client_host = req.client_host
    member.classic_session_timeout_ms = req.session_timeout_ms
    member.classic_protocols = tuple(req.protocols)
    bump = had_regex or old_key != member.subscription_key()

    if replaced is not None:
        old_target = group.target.get(replaced.member_id, {})
        group.remove_member(replaced.member_id)
        group.target[member_id] = old_target
        log.info(
            "group %s: static member with instance id %s re-joins the consumer group using the "
            "classic protocol; member %s replaces %s",
            group.group_id,
            req.group_instance_id,
            member_id,
            replaced.member_id,
        )
    elif member.member_id not in group.members:
        log.info("group %s: classic member %s joins", group.group_id, member_id)
    group.put_member(member)
    owned = [
        (tid, sorted(ps))
        for tid, ps in to_topic_ids(subscription.owned_partitions, manager.topics()).items()
    ]
    if downgrade and manager.on_downgrade is not None:
        # Kafka's downgrade through a static replacement: reconciled with the current
        # target unless the subscription changed (a rebalance follows then).
        if not bump:
            group.reconcile(member, owned)
        manager.on_downgrade(group, set(), bump)
    else:
        manager.update_target_and_reconcile(group, member, bump=bump, owned=owned)
        member.join_deadline = None
        member.session_deadline = now + manager.member_session_timeout_ms(group.group_id, member)
        member.sync_deadline = now + max(req.rebalance_timeout_ms, 0)
        manager.persist(group)
    return JoinResult(
        ErrorCode.NONE,
        member.member_id,
        generation_id=member.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=member.classic_protocols[0][0],
        leader="",
    )


def _member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
    """Kafka's validateConsumerGroupMember then throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, "unknown member")
    else:
        found = group.static_member(instance_id)
        if found is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, "unknown instance id")
        if found.member_id != member_id:
            raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, "fenced instance id")
        member = found
    if not member.uses_classic_protocol:
        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, "member uses the consumer protocol")
    return member


def sync(
    manager: ConsumerGroupManager,
    group: ConsumerGroup,
    member_id: str,
    instance_id: str | None,
    generation_id: int,
    protocol_type: str | None,
    protocol_name: str | None,
    now: int,
) -> SyncResult:
    try:
        member = _member(group, member_id, instance_id)
        if generation_id != member.member_epoch:
            raise HeartbeatError(ErrorCode.ILLEGAL_GENERATION, "generation")
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
            protocol_name is not None and protocol_name != member.classic_protocols[0][0]
        ):
            raise HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "protocol")
        if (
            group.group_epoch > member.member_epoch
            and member.state is not MemberState.UNREVOKED_PARTITIONS
        ):
            _expect_rejoin(member, now)
            raise HeartbeatError(ErrorCode.REBALANCE_IN_PROGRESS, "rebalance")
    except HeartbeatError as e:
        return SyncResult(e.code)
    member.sync_deadline = None
    member.session_deadline = now + manager.member_session_timeout_ms(group.group_id, member)
    names = {tid: name for name, (tid, _) in manager.topics().items()}
    try:
        version = cp.version_of(member.classic_protocols[0][1])
    except cp.MalformedProtocol:
        version = 0
    assignment = cp.encode_assignment(to_topic_names(member.assigned, names), version)
    return SyncResult(ErrorCode.NONE, protocol_type, protocol_name, assignment)


def heartbeat(
    manager: ConsumerGroupManager,
    group: ConsumerGroup,
    member_id: str,
    instance_id: str | None,
    generation_id: int,
    now: int,
) -> int:
    try:
        member = _member(group, member_id, instance_id)
    except HeartbeatError as e:
        return e.code
    if generation_id != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION
    member.session_deadline = now + manager.member_session_timeout_ms(group.group_id, member)
    if (
        member.member_epoch < group.group_epoch
        or member.state is MemberState.UNREVOKED_PARTITIONS
        or (
            member.state is MemberState.UNRELEASED_PARTITIONS
            and not group.waiting_on_unreleased_partition(member)
        )
    ):
        _expect_rejoin(member, now)
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


def _expect_rejoin(member: ConsumerMember, now: int) -> None:
    """Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent: told to rejoin, the member must do
    so within its rebalance timeout or be fenced."""
    if member.join_deadline is None:
        member.join_deadline = now + max(member.rebalance_timeout_ms, 0)


def leave(
    manager: ConsumerGroupManager,
    group: ConsumerGroup,
    members: list[tuple[str, str | None, str | None]],
) -> list[int]:
    errors: list[int] = []
    leaving: set[str] = set()
    for member_id, instance_id, reason in members:
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
        else:
            found = group.static_member(instance_id)
            if found is None:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            if member_id and member_id != found.member_id:
                errors.append(ErrorCode.FENCED_INSTANCE_ID)
                continue
            member = found
        log.info(
            "group %s: member %s has left group through explicit LeaveGroup request; client "
            "reason: %s",
            group.group_id,
            member.member_id,
            reason or "not provided",
        )
        leaving.add(member.member_id)
        errors.append(ErrorCode.NONE)
    manager.fence_members(group, leaving)
    return errors
