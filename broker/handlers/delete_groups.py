"""DeleteGroups, versions 0-2.

Behaviour: an Empty group is deleted with all its committed offsets (tombstones fsynced
before the answer); a group with members gets NON_EMPTY_GROUP, an unknown one
GROUP_ID_NOT_FOUND, an empty id INVALID_GROUP_ID.
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._groups import coordinator
from protocol.messages.delete_groups import DELETE_GROUPS
from protocol.schema import Message

API = DELETE_GROUPS
MIN_VERSION = 0
MAX_VERSION = 2


async def handle(ctx: RequestContext, request: Message) -> Message:
    errors = await coordinator(ctx).delete_groups(list(request.groups_names))
    return Message(
        throttle_time_ms=0,
        results=[
            Message(group_id=g, error_code=e)
            for g, e in zip(request.groups_names, errors, strict=True)
        ],
    )
