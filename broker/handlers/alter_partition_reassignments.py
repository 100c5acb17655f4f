"""AlterPartitionReassignments, version 0.

Behaviour: as a one-broker Kafka 4.0 (ReplicationControlManager.alterPartitionReassignments):
each partition is checked on its own, in request order. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION
"Unable to find a topic named t."; unknown partition: "Unable to find partition t:p.".
replicas null cancels a reassignment, and none is ever in progress here:
NO_REASSIGNMENT_IN_PROGRESS (no message, Kafka's default text is dropped by
ApiError.fromThrowable). Otherwise the target is validated as validateManualPartitionAssignment
does: empty -> INVALID_REPLICA_ASSIGNMENT "... includes an empty replica list.", a broker other
than this one -> "... includes broker N, but no such broker is registered." (checked in
ascending broker order), a repeated broker -> "... includes the broker N more than once.".
[this node] is the partition's current assignment: accepted, nothing changes. An empty topic
list gets an empty answer whose error_message is "" (QuorumController returns a fresh
response object there, without the null the controller sets otherwise).
Deviations: none known.
Authorization (with an authorizer): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import cluster_allowed
from broker.security.acl import ALTER
from protocol.errors import ErrorCode
from protocol.messages.alter_partition_reassignments import ALTER_PARTITION_REASSIGNMENTS
from protocol.schema import Message

API = ALTER_PARTITION_REASSIGNMENTS
MIN_VERSION = 0
MAX_VERSION = 0


def _check_assignment(node_id: int, replicas: list[int]) -> str | None:
    """Kafka's validateManualPartitionAssignment against a cluster of this one broker."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker_id in sorted(replicas):
        if broker_id != node_id:
            return (
                f"The manual partition assignment includes broker {broker_id}, but no such "
                "broker is registered."
            )
        if broker_id == previous:
            return f"The manual partition assignment includes the broker {previous} more than once."
        previous = broker_id
    return None


def _reassign(ctx: RequestContext, topic: str, target: Message) -> tuple[int, str | None]:
    info = ctx.state.store.topic(topic)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
    index = target.partition_index
    if not 0 <= index < len(info.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}."
    if target.replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
    problem = _check_assignment(ctx.state.node_id, target.replicas)
    if problem is not None:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
    return ErrorCode.NONE, None


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, ALTER):
        # AlterPartitionReassignmentsRequest.getErrorResponse: the error everywhere.
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return Message(
            throttle_time_ms=0,
            error_code=error,
            error_message=None,
            responses=[
                Message(
                    name=t.name,
                    partitions=[
                        Message(
                            partition_index=p.partition_index, error_code=error, error_message=None
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ],
        )
    if not request.topics:
        return Message(throttle_time_ms=0, error_code=0, error_message="", responses=[])
    responses = []
    for topic in request.topics:
        partitions = []
        for target in topic.partitions:
            code, message = _reassign(ctx, topic.name, target)
            partitions.append(
                Message(
                    partition_index=target.partition_index, error_code=code, error_message=message
                )
            )
        responses.append(Message(name=topic.name, partitions=partitions))
    return Message(throttle_time_ms=0, error_code=0, error_message=None, responses=responses)
