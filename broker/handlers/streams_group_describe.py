"""StreamsGroupDescribe, versions 0-1 (KIP-1071 streams groups; served with
streams.version >= 1).

As Kafka 4.4.0's GroupMetadataManager.streamsGroupDescribe: state (Empty, NotReady,
Assigning, Reconciling, Stable), group and assignment epochs, the topology as the group
holds it, each member with its current and target assignment; v1 adds the assignor name
("sticky"). A missing group: GROUP_ID_NOT_FOUND "Group X not found.". DESCRIBE on each
group, else GROUP_AUTHORIZATION_FAILED. The topology description (v1) is not kept: null.
"""

from __future__ import annotations

from broker.coordinator.streams.coordinator import Member, StreamsGroup
from broker.core.authorized_operations import GROUP as GROUP_OPERATIONS
from broker.core.authorized_operations import NOT_REQUESTED, of
from broker.core.request_context import RequestContext
from broker.core.state import STREAMS_VERSION_FEATURE
from broker.handlers.streams_group_heartbeat import task_ids
from broker.security.acl import DESCRIBE, GROUP
from protocol.errors import ErrorCode
from protocol.messages.streams_group import STREAMS_GROUP_DESCRIBE
from protocol.schema import Message

API = STREAMS_GROUP_DESCRIBE
MIN_VERSION = 0
MAX_VERSION = 1
FEATURE = STREAMS_VERSION_FEATURE

ASSIGNOR_NAME = "sticky"


def _failed(group_id: str, error: ErrorCode, message: str | None) -> Message:
    return Message(
        error_code=error,
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        topology=None,
        members=[],
        authorized_operations=NOT_REQUESTED,
    )


def _assignment(tasks: set[tuple[str, int]]) -> Message:
    return Message(active_tasks=task_ids(list(tasks)), standby_tasks=[], warmup_tasks=[])


def _member(group: StreamsGroup, m: Member) -> Message:
    return Message(
        member_id=m.member_id,
        member_epoch=m.epoch,
        instance_id=m.instance_id,
        rack_id=m.rack_id,
        client_id=m.client_id,
        client_host=m.client_host,
        topology_epoch=m.topology_epoch,
        process_id=m.process_id,
        user_endpoint=m.user_endpoint,
        client_tags=m.client_tags,
        task_offsets=[],
        task_end_offsets=[],
        assignment=_assignment(m.assigned),
        target_assignment=_assignment(group.target.get(m.member_id, set())),
        is_classic=False,
    )


def _topology(group: StreamsGroup) -> Message | None:
    if group.topology is None:
        return None
    return Message(
        epoch=group.topology.epoch,
        subtopologies=[
            Message(
                subtopology_id=s.subtopology_id,
                source_topics=list(s.source_topics),
                repartition_sink_topics=list(s.repartition_sink_topics),
                state_changelog_topics=list(s.state_changelog_topics),
                repartition_source_topics=list(s.repartition_source_topics),
            )
            for s in group.topology.subtopologies
        ],
    )


def handle(ctx: RequestContext, request: Message) -> Message:
    groups = []
    for group_id in request.group_ids:
        if not ctx.authorized(DESCRIBE, GROUP, group_id):
            groups.append(_failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
            continue
        group = ctx.state.streams.describe(group_id)
        if group is None:
            groups.append(
                _failed(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            )
            continue
        groups.append(
            Message(
                error_code=ErrorCode.NONE,
                error_message=None,
                group_id=group_id,
                group_state=group.state(),
                group_epoch=group.epoch,
                assignment_epoch=group.assignment_epoch,
                topology=_topology(group),
                members=[_member(group, m) for m in group.members.values()],
                authorized_operations=of(ctx, GROUP_OPERATIONS, GROUP, group_id)
                if request.include_authorized_operations
                else NOT_REQUESTED,
                topology_description=None,
                topology_description_status=0,
                assignor_name=ASSIGNOR_NAME if ctx.version >= 1 else None,
            )
        )
    return Message(throttle_time_ms=0, groups=groups)
