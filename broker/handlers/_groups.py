"""Helpers shared by the group handlers."""

from __future__ import annotations

from broker.cluster.routing import REQUEST_NODE
from broker.coordinator.groups.coordinator import GroupCoordinator
from broker.core.request_context import RequestContext
from protocol.schema import Message


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    cluster = ctx.state.cluster
    if cluster is not None:
        # The coordinator refuses groups another node coordinates (NOT_COORDINATOR).
        REQUEST_NODE.set(cluster.node_of(ctx.listener))
    return ctx.state.groups


def client_host(ctx: RequestContext) -> str:
    # Kafka shows InetAddress.toString(): "/127.0.0.1", "/0:0:0:0:0:0:0:1".
    return f"/{ctx.host}"


def offset_commit_answer(request: Message, errors: dict[tuple[str, int], int]) -> Message:
    """OffsetCommit's and TxnOffsetCommit's answer: each requested partition with its error,
    in request order."""
    return Message(
        throttle_time_ms=0,
        topics=[
            Message(
                name=topic.name,
                partitions=[
                    Message(
                        partition_index=p.partition_index,
                        error_code=errors[(topic.name, p.partition_index)],
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ],
    )
