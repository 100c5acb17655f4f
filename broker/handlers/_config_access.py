"""Who may describe or alter which configs (KafkaApis' configsAuthorizationApiError):
a topic's need DESCRIBE_CONFIGS/ALTER_CONFIGS on the topic, a group's on the group, broker
and broker-logger configs on the cluster; the error names the resource type."""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.security.acl import CLUSTER, CLUSTER_NAME, GROUP, TOPIC
from protocol.errors import ErrorCode

# ConfigResource.Type codes.
_TOPIC, _GROUP = 2, 32

MESSAGES = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
}


def denied(ctx: RequestContext, operation: int, resource_type: int, name: str) -> ErrorCode | None:
    """The authorization error for this config resource, or None when allowed."""
    if resource_type == _TOPIC:
        allowed, error = (
            ctx.authorized(operation, TOPIC, name),
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        )
    elif resource_type == _GROUP:
        allowed, error = (
            ctx.authorized(operation, GROUP, name),
            ErrorCode.GROUP_AUTHORIZATION_FAILED,
        )
    else:
        allowed = ctx.authorized(operation, CLUSTER, CLUSTER_NAME)
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return None if allowed else error
