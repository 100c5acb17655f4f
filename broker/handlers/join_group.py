"""JoinGroup, versions 2-9 (Kafka 4.0 dropped 0-1).

Behaviour: broker.coordinator.groups.classic, as Kafka's classic group coordinator: v4+
members without
an id get MEMBER_ID_REQUIRED with their new id first; static membership (v5+
group.instance.id: a restarted static member rejoining a Stable group gets the current
generation back unless the group's selected protocol would change; v9+ tells a static
leader so with skip_assignment, KIP-814); the request is parked until the join phase ends.
Session timeouts outside group.min/max.session.timeout.ms get INVALID_SESSION_TIMEOUT; an
empty protocol type or list, or no protocol common with the group,
INCONSISTENT_GROUP_PROTOCOL; so does a share group's id (KIP-932), with an empty member id.
Authorization (with an authorizer): READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.coordinator.groups.classic import JoinRequest
from broker.core.request_context import RequestContext
from broker.handlers._groups import client_host, coordinator
from broker.security.acl import GROUP, READ
from protocol.errors import ErrorCode
from protocol.messages.join_group import JOIN_GROUP
from protocol.schema import Message

API = JOIN_GROUP
MIN_VERSION = 2
MAX_VERSION = 9


async def handle(ctx: RequestContext, request: Message) -> Message:
    req = JoinRequest(
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        session_timeout_ms=request.session_timeout_ms,
        # v0 had no rebalance timeout: the session timeout served as both (Kafka).
        rebalance_timeout_ms=(
            request.rebalance_timeout_ms
            if request.rebalance_timeout_ms >= 0
            else request.session_timeout_ms
        ),
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        client_id=ctx.client_id or "",
        client_host=client_host(ctx),
        require_known_member_id=ctx.version >= 4,
        supports_skip_assignment=ctx.version >= 9,
        reason=request.reason,
    )
    if not ctx.authorized(READ, GROUP, request.group_id):
        return Message(
            throttle_time_ms=0,
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
            generation_id=-1,
            protocol_type=None,
            protocol_name=None if ctx.version >= 7 else "",
            leader="",
            skip_assignment=False,
            member_id=request.member_id,
            members=[],
        )
    if request.group_id in ctx.state.shares.groups:
        # GroupMetadataManager.classicGroupJoin: a share group's id is not a classic group's.
        return Message(
            throttle_time_ms=0,
            error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            generation_id=-1,
            protocol_type=None,
            protocol_name=None if ctx.version >= 7 else "",
            leader="",
            skip_assignment=False,
            member_id="",
            members=[],
        )
    result = await coordinator(ctx).join(request.group_id, req)
    protocol_name = result.protocol_name
    if protocol_name is None and ctx.version < 7:
        protocol_name = ""  # not nullable before v7
    return Message(
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=protocol_name,
        leader=result.leader,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            Message(member_id=m, group_instance_id=instance, metadata=meta)
            for m, instance, meta in result.members
        ],
    )
