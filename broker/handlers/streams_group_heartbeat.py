"""StreamsGroupHeartbeat, versions 0-1 (KIP-1071 streams groups; served with
streams.version >= 1).

As Kafka 4.4.0: READ on the group (else GROUP_AUTHORIZATION_FAILED); the request checked as
GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid checks it (INVALID_REQUEST
with its messages, in its order); then broker.coordinator.streams. Internal topics the
coordinator reports missing are created here, as Kafka's KafkaApis creates them after the
coordinator's answer. An error answer has an empty member id, epoch 0 and interval 0, as
Kafka's (checked against Kafka 4.4.0).
"""

from __future__ import annotations

import logging
from itertools import groupby

from broker.coordinator.streams.assignor import Task
from broker.coordinator.streams.coordinator import Beat
from broker.core.request_context import RequestContext
from broker.core.state import STREAMS_VERSION_FEATURE
from broker.handlers._groups import client_host
from broker.security.acl import GROUP, READ
from protocol.errors import ErrorCode
from protocol.messages.streams_group import STREAMS_GROUP_HEARTBEAT
from protocol.schema import Message

API = STREAMS_GROUP_HEARTBEAT
MIN_VERSION = 0
MAX_VERSION = 1
FEATURE = STREAMS_VERSION_FEATURE

log = logging.getLogger(__name__)


def _refused(error: ErrorCode, message: str | None = None) -> Message:
    return Message(
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        member_id="",
        member_epoch=0,
        heartbeat_interval_ms=0,
        acceptable_recovery_lag_legacy=0,
        task_offset_interval_ms=0,
        acceptable_recovery_lag=-1,
        status=[],
        endpoint_information_epoch=0,
    )


def invalid(request: Message) -> str | None:
    """GroupCoordinatorService's checks of a heartbeat, in its order: the message of the
    first one failed, or None."""
    if not request.group_id:
        return "GroupId can't be empty."
    if not request.member_id:
        return "MemberId can't be empty."
    if request.member_epoch < -2:
        return f"MemberEpoch is {request.member_epoch}, but must be greater than or equal to -2."
    if request.instance_id == "":
        return "InstanceId can't be empty."
    if request.rack_id == "":
        return "RackId can't be empty."
    tasks = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    if request.member_epoch == 0:
        if request.rebalance_timeout_ms <= 0:
            return "RebalanceTimeoutMs must be provided in first request."
        for kind, given in zip(("ActiveTasks", "StandbyTasks", "WarmupTasks"), tasks, strict=True):
            if given:
                return f"{kind} must be empty when (re-)joining."
        if request.topology is None:
            return "Topology must be non-null when (re-)joining."
        for sub in request.topology.subtopologies:
            for info in sub.state_changelog_topics:
                if info.partitions != 0:
                    return (
                        f"Changelog topic {info.name} must have an undefined partition "
                        f"count, but it is set to {info.partitions}."
                    )
    else:
        if request.topology is not None:
            return "Topology can only be provided when (re-)joining."
        if any(t is None for t in tasks) and any(t is not None for t in tasks):
            return "If one task-type is non-null, all must be non-null."
    if request.topology is not None and any(
        s.source_topic_regex for s in request.topology.subtopologies
    ):
        return "Regular expressions for source topics are not supported yet."
    return None


def task_ids(tasks: list[Task]) -> list[Message]:
    return [
        Message(subtopology_id=sub, partitions=[p for _, p in group])
        for sub, group in groupby(sorted(tasks), key=lambda t: t[0])
    ]


def _create_internal(ctx: RequestContext, beat: Beat) -> None:
    for name, partitions, configs in beat.to_create:
        if ctx.state.store.topic(name) is not None:
            continue
        try:
            info = ctx.state.store.create_topic(name, partitions)
            if configs:
                # The topology's configs (a changelog's cleanup.policy=compact, ...), as
                # Kafka creates the topic with them.
                ctx.state.set_topic_configs(info, configs)
        except Exception as exc:  # reported; retried at the next heartbeat
            log.warning("streams internal topic %s not created: %s", name, exc)


def handle(ctx: RequestContext, request: Message) -> Message:
    if not ctx.authorized(READ, GROUP, request.group_id):
        return _refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    problem = invalid(request)
    if problem is not None:
        return _refused(ErrorCode.INVALID_REQUEST, problem)
    streams = ctx.state.streams
    beat = streams.heartbeat(request, ctx.client_id or "", client_host(ctx))
    if beat.error != ErrorCode.NONE or beat.member is None:
        return _refused(beat.error, beat.message)
    if beat.member.epoch < 0:
        # A member that left: Kafka answers its id and epoch only (recorded from 4.4.0).
        left = _refused(ErrorCode.NONE).to_dict()
        left.update(member_id=beat.member.member_id, member_epoch=beat.member.epoch)
        return Message(**left)
    _create_internal(ctx, beat)
    settings = streams.settings
    sent = beat.tasks is not None
    return Message(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        member_id=beat.member.member_id,
        member_epoch=beat.member.epoch,
        heartbeat_interval_ms=settings.heartbeat_interval_ms,
        acceptable_recovery_lag_legacy=settings.acceptable_recovery_lag,
        task_offset_interval_ms=settings.task_offset_interval_ms,
        acceptable_recovery_lag=settings.acceptable_recovery_lag,
        status=[Message(status_code=c, status_detail=d) for c, d in beat.statuses],
        active_tasks=task_ids(beat.tasks) if beat.tasks is not None else None,
        standby_tasks=[] if sent else None,
        warmup_tasks=[] if sent else None,
        topology_description_required=False,
        endpoint_information_epoch=0,
        partitions_by_user_endpoint=None,
    )
