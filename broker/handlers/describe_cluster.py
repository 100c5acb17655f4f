"""DescribeCluster, versions 0-2.

Behaviour: a single broker is the whole cluster and is reported as the controller, as a Kafka
broker reports a live broker there (clients cannot reach KRaft controllers through it). The
address is the advertised one of the listener the request came through. v1+ endpoint_type:
2 (controller) -> MISMATCHED_ENDPOINT_TYPE, anything but 1 -> UNSUPPORTED_ENDPOINT_TYPE, as
Kafka's broker answers. A simulated cluster lists its live nodes with their racks (a stopped
one, fenced in KRaft, only with v2's include_fenced_brokers) and a live node picked at random
as the controller (KafkaApis.handleDescribeCluster: getRandomAliveBrokerId). Authorized
operations, when asked for, are the caller's on the cluster (all of them without an
authorizer).
"""

from __future__ import annotations

from broker.cluster.state import Cluster
from broker.core.authorized_operations import CLUSTER as CLUSTER_OPERATIONS
from broker.core.authorized_operations import NOT_REQUESTED, of
from broker.core.request_context import RequestContext
from broker.security.acl import CLUSTER, CLUSTER_NAME
from protocol.errors import ErrorCode
from protocol.messages.describe_cluster import DESCRIBE_CLUSTER
from protocol.schema import Message

API = DESCRIBE_CLUSTER
MIN_VERSION = 0
MAX_VERSION = 2

BROKER_ENDPOINT = 1
CONTROLLER_ENDPOINT = 2


def handle(ctx: RequestContext, request: Message) -> Message:
    state = ctx.state
    wanted = request.endpoint_type
    if wanted != BROKER_ENDPOINT:
        code, message = (
            (
                ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                "The request was sent to an endpoint of type BROKER, but we wanted an "
                "endpoint of type CONTROLLER",
            )
            if wanted == CONTROLLER_ENDPOINT
            else (ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {wanted}")
        )
        return Message(
            throttle_time_ms=0,
            error_code=code,
            error_message=message,
            endpoint_type=BROKER_ENDPOINT,
            cluster_id=state.cluster_id,
            controller_id=-1,
            brokers=[],
            cluster_authorized_operations=NOT_REQUESTED,
        )
    listener = ctx.listener
    cluster = state.cluster
    return Message(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=BROKER_ENDPOINT,
        cluster_id=state.cluster_id,
        controller_id=state.node_id if cluster is None else cluster.random_live_node(),
        brokers=[
            Message(
                broker_id=state.node_id,
                host=listener.advertised_host,
                port=listener.advertised_port,
                rack=None,
                is_fenced=False,
            )
        ]
        if cluster is None
        else _cluster_brokers(ctx, cluster, bool(request.include_fenced_brokers)),
        cluster_authorized_operations=of(ctx, CLUSTER_OPERATIONS, CLUSTER, CLUSTER_NAME)
        if request.include_cluster_authorized_operations
        else NOT_REQUESTED,
    )


def _cluster_brokers(ctx: RequestContext, cluster: Cluster, include_fenced: bool) -> list[Message]:
    """The live nodes; a stopped one is fenced in KRaft and listed only with
    include_fenced_brokers (v2), then with is_fenced."""
    entries = []
    for node in cluster.node_ids:
        alive = node in cluster.alive
        if not alive and not include_fenced:
            continue
        host, port = cluster.endpoint(node, ctx.listener)
        entries.append(
            Message(
                broker_id=node, host=host, port=port, rack=cluster.racks[node], is_fenced=not alive
            )
        )
    return entries
