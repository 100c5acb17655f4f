"""Authorized-operations bit fields (Kafka's AuthHelper.authorizedOperations).

Metadata, DescribeCluster, DescribeTopicPartitions and DescribeGroups answer, when asked,
the operations the caller may perform on a resource as a 32-bit field (Kafka's
Utils.to32BitField of AclOperation codes). With no authorizer configured Kafka's
AuthHelper.authorizedOperations allows every operation the resource type supports
(AclEntry.supportedOperations), which is what these constants hold; with an
authorizer, ``of`` keeps the operations the caller is allowed (denials not logged, as
Kafka's logIfDenied=false). Kafka's "not requested" value is Integer.MIN_VALUE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.core.request_context import RequestContext

NOT_REQUESTED = -(2**31)

# AclOperation codes.
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12


def bit_field(*operations: int) -> int:
    return sum(1 << op for op in operations)


TOPIC = bit_field(READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
CLUSTER = bit_field(
    CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
)
GROUP = bit_field(READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS)


def of(ctx: RequestContext, supported: int, resource_type: int, name: str) -> int:
    """The bits of ``supported`` the caller may do on the resource."""
    if ctx.state.authorizer is None:
        return supported
    return sum(
        1 << op
        for op in range(32)
        if supported & (1 << op) and ctx.authorized(op, resource_type, name, log_denied=False)
    )
