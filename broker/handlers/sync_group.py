"""SyncGroup, versions 0-5.

Behaviour: the leader's assignments are stored and handed to every member of the
generation; followers are parked until the leader syncs. Errors as Kafka: unknown group or
member UNKNOWN_MEMBER_ID, wrong generation ILLEGAL_GENERATION, rebalance started
REBALANCE_IN_PROGRESS, v5 protocol type/name that differ INCONSISTENT_GROUP_PROTOCOL.
Authorization (with an authorizer): READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._groups import coordinator
from broker.security.acl import GROUP, READ
from protocol.errors import ErrorCode
from protocol.messages.sync_group import SYNC_GROUP
from protocol.schema import Message

API = SYNC_GROUP
MIN_VERSION = 0
MAX_VERSION = 5


async def handle(ctx: RequestContext, request: Message) -> Message:
    if not ctx.authorized(READ, GROUP, request.group_id):
        return Message(
            throttle_time_ms=0,
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
            protocol_type=None,
            protocol_name=None,
            assignment=b"",
        )
    result = await coordinator(ctx).sync(
        request.group_id,
        request.member_id,
        request.group_instance_id,
        request.generation_id,
        request.protocol_type,
        request.protocol_name,
        {a.member_id: bytes(a.assignment) for a in request.assignments},
    )
    return Message(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )
