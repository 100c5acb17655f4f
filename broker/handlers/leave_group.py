"""LeaveGroup, versions 0-5 (v3+ batches members, by member id or group.instance.id).

Behaviour: each member leaves at once and the group rebalances (or becomes Empty). Per-member
errors: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID (82). v0-2 carry one member and report its error
at the top level. An unknown group answers UNKNOWN_MEMBER_ID for each member with no
top-level error (v0-2: at the top level), as Kafka 4.0's GroupCoordinatorService.leaveGroup.
Authorization (with an authorizer): READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._groups import coordinator
from broker.security.acl import GROUP, READ
from protocol.errors import ErrorCode
from protocol.messages.leave_group import LEAVE_GROUP
from protocol.schema import Message

API = LEAVE_GROUP
MIN_VERSION = 0
MAX_VERSION = 5


def handle(ctx: RequestContext, request: Message) -> Message:
    if not ctx.authorized(READ, GROUP, request.group_id):
        return Message(
            throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[]
        )
    if ctx.version < 3:
        members: list[tuple[str, str | None, str | None]] = [(request.member_id, None, None)]
    else:
        members = [(m.member_id, m.group_instance_id, m.reason) for m in request.members]
    error, errors = coordinator(ctx).leave(request.group_id, members)
    if ctx.version < 3:
        return Message(throttle_time_ms=0, error_code=error or (errors[0] if errors else 0))
    return Message(
        throttle_time_ms=0,
        error_code=error,
        members=[
            Message(member_id=m, group_instance_id=instance, error_code=e)
            for (m, instance, _), e in zip(members, errors, strict=False)
        ],
    )
