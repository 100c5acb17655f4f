"""Heartbeat, versions 0-4.

Behaviour: pushes the member's session deadline. REBALANCE_IN_PROGRESS while the group
prepares a rebalance (how members learn to rejoin), ILLEGAL_GENERATION for another
generation, UNKNOWN_MEMBER_ID for an unknown group or member, FENCED_INSTANCE_ID (82) for a
replaced static member.
Authorization (with an authorizer): READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._groups import coordinator
from broker.security.acl import GROUP, READ
from protocol.errors import ErrorCode
from protocol.messages.heartbeat import HEARTBEAT
from protocol.schema import Message

API = HEARTBEAT
MIN_VERSION = 0
MAX_VERSION = 4


def handle(ctx: RequestContext, request: Message) -> Message:
    if not ctx.authorized(READ, GROUP, request.group_id):
        return Message(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = coordinator(ctx).heartbeat(
        request.group_id, request.member_id, request.group_instance_id, request.generation_id
    )
    return Message(throttle_time_ms=0, error_code=error)
