"""ListPartitionReassignments, version 0.

Behaviour: as a one-broker Kafka 4.0 (ReplicationControlManager.listPartitionReassignments):
a reassignment here either fails or targets the partition's current replicas and completes at
once, so none is ever ongoing and the answer lists no topics, for null (all), named or unknown
topics alike; error_message null.
Deviations: none known.
Authorization (with an authorizer): DESCRIBE on the cluster, else
CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import cluster_allowed
from broker.security.acl import DESCRIBE
from protocol.errors import ErrorCode
from protocol.messages.list_partition_reassignments import LIST_PARTITION_REASSIGNMENTS
from protocol.schema import Message

API = LIST_PARTITION_REASSIGNMENTS
MIN_VERSION = 0
MAX_VERSION = 0


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, DESCRIBE):
        return Message(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            topics=[],
        )
    return Message(throttle_time_ms=0, error_code=0, error_message=None, topics=[])
