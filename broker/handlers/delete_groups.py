"""DeleteGroups, versions 0-2.

Behaviour: an Empty group is deleted with all its committed offsets (tombstones fsynced
before the answer); a group with members gets NON_EMPTY_GROUP, an unknown one
GROUP_ID_NOT_FOUND, an empty id INVALID_GROUP_ID. A KIP-932 share group: Empty, it is deleted
with its share-partitions' states (as Kafka deletes the share groups of a request first,
with their persisted state); with members NON_EMPTY_GROUP.
Authorization (with an authorizer): DELETE on each group, else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._groups import coordinator
from broker.handlers._leadership import GROUP_KEY, not_coordinator
from broker.security.acl import DELETE, GROUP
from protocol.errors import ErrorCode
from protocol.messages.delete_groups import DELETE_GROUPS
from protocol.schema import Message

API = DELETE_GROUPS
MIN_VERSION = 0
MAX_VERSION = 2


async def handle(ctx: RequestContext, request: Message) -> Message:
    names = list(request.groups_names)
    allowed = [g for g in names if ctx.authorized(DELETE, GROUP, g)]
    cluster = ctx.state.cluster
    elsewhere: dict[str, int] = {}
    if cluster is not None:
        # A simulated cluster: groups another node coordinates get NOT_COORDINATOR.
        elsewhere = {
            g: ErrorCode.NOT_COORDINATOR
            for g in allowed
            if not_coordinator(ctx, cluster, GROUP_KEY, g)
        }
        allowed = [g for g in allowed if g not in elsewhere]
    shares = ctx.state.shares
    shares.expire_members()
    share_results: dict[str, int] = {}
    for g in allowed:
        group = shares.groups.get(g)
        if group is not None:
            if group.members:
                share_results[g] = ErrorCode.NON_EMPTY_GROUP
            else:
                shares.delete_group(g)
                share_results[g] = ErrorCode.NONE
    allowed = [g for g in allowed if g not in share_results]
    deleted = dict(zip(allowed, await coordinator(ctx).delete_groups(allowed), strict=True))
    deleted.update(share_results)
    deleted.update(elsewhere)
    return Message(
        throttle_time_ms=0,
        results=[
            Message(group_id=g, error_code=deleted.get(g, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            for g in names
        ],
    )
