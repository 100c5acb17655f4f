"""DescribeGroups, versions 0-6.

Behaviour: state, protocol type, protocol (Stable groups only) and members; member metadata
and assignment are filled only when the group is Stable, as Kafka's ClassicGroup.describe.
A group that does not exist is reported Dead with no error before v6, and with
GROUP_ID_NOT_FOUND and a message from v6 (KIP-1043). v3+ with include_authorized_operations:
every group answered without an error gets the operations Kafka allows on a group with no
authorizer (KafkaApis.handleDescribeGroupsRequest, AuthHelper.authorizedOperations); else
Kafka's "not requested" value. A KIP-848 consumer group is not a classic group: answered as
a missing one, with "Group X is not a classic group." (GroupMetadataManager.classicGroup);
so is a KIP-932 share group.
With an authorizer: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED with empty state
(DescribeGroupsResponse.groupError); the operations are the caller's.
"""

from __future__ import annotations

from broker.coordinator.groups.classic import GroupState
from broker.core.authorized_operations import GROUP as GROUP_OPERATIONS
from broker.core.authorized_operations import NOT_REQUESTED, of
from broker.core.request_context import RequestContext
from broker.handlers._groups import coordinator
from broker.handlers._leadership import GROUP_KEY, not_coordinator
from broker.security.acl import DESCRIBE, GROUP
from protocol.errors import ErrorCode
from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.schema import Message

API = DESCRIBE_GROUPS
MIN_VERSION = 0
MAX_VERSION = 6


def _describe(ctx: RequestContext, group_id: str, with_operations: bool) -> Message:
    # Kafka fills the operations only for groups answered without an error: before v6 that
    # includes a missing group (answered Dead with no error).
    if not ctx.authorized(DESCRIBE, GROUP, group_id):
        return Message(
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
            error_message=None,
            group_id=group_id,
            group_state="",
            protocol_type="",
            protocol_data="",
            members=[],
            authorized_operations=NOT_REQUESTED,
        )
    cluster = ctx.state.cluster
    if cluster is not None and not_coordinator(ctx, cluster, GROUP_KEY, group_id):
        # Another node of a simulated cluster coordinates it (Kafka's NOT_COORDINATOR).
        return Message(
            error_code=ErrorCode.NOT_COORDINATOR,
            error_message=None,
            group_id=group_id,
            group_state="",
            protocol_type="",
            protocol_data="",
            members=[],
            authorized_operations=NOT_REQUESTED,
        )
    operations = of(ctx, GROUP_OPERATIONS, GROUP, group_id) if with_operations else NOT_REQUESTED
    group = coordinator(ctx).describe(group_id) if group_id else None
    if group is None:
        missing = ctx.version >= 6
        kind = (
            "is not a classic group"
            if group_id in coordinator(ctx).consumer.groups or group_id in ctx.state.shares.groups
            else ("not found")
        )
        return Message(
            error_code=ErrorCode.GROUP_ID_NOT_FOUND if missing else ErrorCode.NONE,
            error_message=f"Group {group_id} {kind}." if missing else None,
            group_id=group_id,
            group_state=GroupState.DEAD.value,
            protocol_type="",
            protocol_data="",
            members=[],
            authorized_operations=NOT_REQUESTED if missing else operations,
        )
    stable = group.state is GroupState.STABLE
    return Message(
        error_code=ErrorCode.NONE,
        error_message=None,
        group_id=group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=[
            Message(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata(group.protocol_name) if stable else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        ],
        authorized_operations=operations,
    )


def handle(ctx: RequestContext, request: Message) -> Message:
    with_operations = ctx.version >= 3 and bool(request.include_authorized_operations)
    return Message(
        throttle_time_ms=0, groups=[_describe(ctx, g, with_operations) for g in request.groups]
    )
