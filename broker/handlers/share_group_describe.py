"""ShareGroupDescribe, version 1 (KIP-932 share groups; served with share.version >= 1).

As Kafka's GroupMetadataManager.shareGroupDescribe: state (Empty/Stable), epochs, the
assignor ("simple"), each member with its subscription and assignment (ids and names). A
missing group: GROUP_ID_NOT_FOUND "Group X not found."; a classic or consumer group:
GROUP_ID_NOT_FOUND "Group X is not a share group."; an empty id INVALID_GROUP_ID. DESCRIBE on
each group, else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.coordinator.share.group import ASSIGNOR_NAME, Assignment, ShareGroup
from broker.core.authorized_operations import GROUP as GROUP_OPERATIONS
from broker.core.authorized_operations import NOT_REQUESTED, of
from broker.core.request_context import RequestContext
from broker.core.state import SHARE_VERSION_FEATURE
from broker.security.acl import DESCRIBE, GROUP
from protocol.errors import ErrorCode
from protocol.messages.share_group_describe import SHARE_GROUP_DESCRIBE
from protocol.schema import Message

API = SHARE_GROUP_DESCRIBE
MIN_VERSION = 1
MAX_VERSION = 1
FEATURE = SHARE_VERSION_FEATURE


def _assignment(ctx: RequestContext, parts: Assignment) -> Message:
    out = []
    for topic_id, partitions in sorted(parts.items()):
        info = ctx.state.store.topic_by_id(topic_id)
        if info is not None:
            out.append(
                Message(topic_id=topic_id, topic_name=info.name, partitions=sorted(partitions))
            )
    return Message(topic_partitions=out)


def _failed(group_id: str, error: ErrorCode, message: str | None) -> Message:
    return Message(
        error_code=error,
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        assignor_name="",
        members=[],
        authorized_operations=NOT_REQUESTED,
    )


def _described(ctx: RequestContext, group: ShareGroup, with_operations: bool) -> Message:
    return Message(
        error_code=ErrorCode.NONE,
        error_message=None,
        group_id=group.group_id,
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=ASSIGNOR_NAME,
        members=[
            Message(
                member_id=m.member_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed),
                assignment=_assignment(ctx, m.assignment),
            )
            for m in group.members.values()
        ],
        authorized_operations=of(ctx, GROUP_OPERATIONS, GROUP, group.group_id)
        if with_operations
        else NOT_REQUESTED,
    )


def handle(ctx: RequestContext, request: Message) -> Message:
    shares = ctx.state.shares
    shares.expire_members()
    # Kafka 4.4.0's order: groups refused by the authorizer, then empty ids, then the rest
    # in request order (KafkaApis and GroupCoordinatorService.shareGroupDescribe).
    refused, invalid, out = [], [], []
    for group_id in request.group_ids:
        if not ctx.authorized(DESCRIBE, GROUP, group_id):
            refused.append(_failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
            continue
        if not group_id:
            invalid.append(_failed(group_id, ErrorCode.INVALID_GROUP_ID, None))
            continue
        group = shares.groups.get(group_id)
        if group is not None:
            out.append(_described(ctx, group, request.include_authorized_operations))
        elif ctx.state.classic_or_consumer(group_id):
            out.append(
                _failed(
                    group_id,
                    ErrorCode.GROUP_ID_NOT_FOUND,
                    f"Group {group_id} is not a share group.",
                )
            )
        else:
            out.append(
                _failed(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            )
    return Message(throttle_time_ms=0, groups=refused + invalid + out)
