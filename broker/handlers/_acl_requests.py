"""What the ACL handlers share: the cluster check every ACL API makes first, and turning
request filters into AclFilters."""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.security.acl import CLUSTER, CLUSTER_NAME, AclFilter
from protocol.schema import Message

NO_AUTHORIZER = "No Authorizer is configured."
# Kafka's ClusterAuthorizationException as AuthHelper.authorizeClusterOperation throws it.
CLUSTER_DENIED = "Cluster authorization failed."


def cluster_allowed(ctx: RequestContext, operation: int) -> bool:
    return ctx.authorized(operation, CLUSTER, CLUSTER_NAME)


def acl_filter(request: Message) -> AclFilter:
    return AclFilter(
        request.resource_type_filter,
        request.resource_name_filter,
        request.pattern_type_filter,
        request.principal_filter,
        request.host_filter,
        request.operation,
        request.permission_type,
    )
