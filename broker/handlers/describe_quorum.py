"""DescribeQuorum, versions 0-2.

Behaviour: as the KRaft quorum of a one-node Kafka 4.0 in combined mode answers it
(KafkaRaftClient.handleDescribeQuorumRequest, RaftUtil.singletonDescribeQuorumResponse): a
request naming anything but exactly one partition, __cluster_metadata-0, gets
UNKNOWN_TOPIC_OR_PARTITION for each named partition with Kafka's default message
(DescribeQuorumRequest.getPartitionLevelErrorResponse). Otherwise this node is the leader
(epoch 1) and the only voter, with no observers; as a quorum of one commits what it appends,
the voter's log end offset is the high watermark. v1+: the leader's last fetch and caught-up
timestamps are now. v2: the voter's directory id (meta.properties directory.id) and the node
with its listeners; error messages are "" where Kafka leaves them unset.
Deviations: there is no metadata log. Its offset is what an idle KRaft log reaches: one
NoOpRecord per metadata.max.idle.interval.ms (500 ms) since the data directory was formatted
(meta.properties' modification time), so it grows and survives restarts. The node's listeners
are this broker's (name, advertised host and port): there is no controller listener.
Authorization (with an authorizer): DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import time

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import cluster_allowed
from broker.security.acl import DESCRIBE
from protocol.errors import ErrorCode
from protocol.messages.describe_quorum import DESCRIBE_QUORUM
from protocol.schema import Message
from storage.store import META_PROPERTIES, read_directory_id

API = DESCRIBE_QUORUM
MIN_VERSION = 0
MAX_VERSION = 2

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
NO_OP_INTERVAL_MS = 500  # Kafka's metadata.max.idle.interval.ms default
UNKNOWN_MESSAGE = "This server does not host this topic-partition."


def _names_the_metadata_partition(request: Message) -> bool:
    return (
        len(request.topics) == 1
        and request.topics[0].topic_name == METADATA_TOPIC
        and len(request.topics[0].partitions) == 1
        and request.topics[0].partitions[0].partition_index == 0
    )


def _metadata_log_end(ctx: RequestContext, now_ms: int) -> int:
    try:
        formatted_ms = int((ctx.state.store.data_dir / META_PROPERTIES).stat().st_mtime * 1000)
    except OSError:
        formatted_ms = now_ms
    return 1 + max(0, now_ms - formatted_ms) // NO_OP_INTERVAL_MS


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, DESCRIBE):
        # DescribeQuorumRequest.getErrorResponse: the error at the top, no topics.
        return Message(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, topics=[]
        )
    if not _names_the_metadata_partition(request):
        return Message(
            error_code=ErrorCode.NONE,
            error_message="",
            topics=[
                Message(
                    topic_name=t.topic_name,
                    partitions=[
                        Message(
                            partition_index=p.partition_index,
                            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            error_message=UNKNOWN_MESSAGE,
                            leader_id=0,
                            leader_epoch=0,
                            high_watermark=0,
                            current_voters=[],
                            observers=[],
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ],
            nodes=[],
        )
    now_ms = int(time.time() * 1000)
    node_id = ctx.state.node_id
    log_end = _metadata_log_end(ctx, now_ms)
    voter = Message(
        replica_id=node_id,
        replica_directory_id=read_directory_id(ctx.state.store.data_dir) or bytes(16),
        log_end_offset=log_end,
        last_fetch_timestamp=now_ms,
        last_caught_up_timestamp=now_ms,
    )
    listeners = ctx.state.config.listeners
    return Message(
        error_code=ErrorCode.NONE,
        error_message="",
        topics=[
            Message(
                topic_name=METADATA_TOPIC,
                partitions=[
                    Message(
                        partition_index=0,
                        error_code=ErrorCode.NONE,
                        error_message="",
                        leader_id=node_id,
                        leader_epoch=LEADER_EPOCH,
                        high_watermark=log_end,
                        current_voters=[voter],
                        observers=[],
                    )
                ],
            )
        ],
        nodes=[
            Message(
                node_id=node_id,
                listeners=[
                    Message(name=lst.name, host=lst.advertised_host, port=lst.advertised_port)
                    for lst in listeners
                ],
            )
        ],
    )
