"""What the share-group offset admin handlers share: Errors.message() texts and the group
checks of Kafka's group coordinator for them (an empty id, another kind of group, members)."""

from __future__ import annotations

from broker.core.request_context import RequestContext
from protocol.errors import ErrorCode

# Errors.message() of the codes these answers carry (Errors.java's default texts).
MESSAGES = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.INVALID_GROUP_ID: "The group id is invalid.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
}


def not_a_share_group(group_id: str) -> str:
    return f"Group {group_id} is not a share group."


def other_kind(ctx: RequestContext, group_id: str) -> bool:
    """A classic or consumer group holds the id (Kafka's GroupIdNotFoundException)."""
    return ctx.state.classic_or_consumer(group_id)
