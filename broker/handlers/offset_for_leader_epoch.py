"""OffsetForLeaderEpoch, versions 2-4 (Kafka 4.0's range).

Consumers (replica_id -1) send it after a metadata update to check that their position is
still on the leader's log (KIP-320): the answer is the end offset of the requested epoch.
Every partition has lived in one leader epoch, 0, starting at the log start offset; Kafka's
LeaderEpochFileCache.endOffsetFor then answers:
- epoch 0 (the current one): (0, log end offset);
- epoch -1 (UNDEFINED) or above 0 (unknown): (-1, -1);
- below -1: (the requested epoch, log start offset), the start of the first later epoch.
current_leader_epoch is checked as in Fetch and ListOffsets (Partition.checkCurrentLeaderEpoch):
-1 means "not given", above 0 UNKNOWN_LEADER_EPOCH, below 0 FENCED_LEADER_EPOCH. An unknown
topic or partition gets UNKNOWN_TOPIC_OR_PARTITION. replica_id is not checked: with no
authorizer Kafka answers followers and consumers alike, and this broker has no followers.
Authorization (with an authorizer), as KafkaApis.handleOffsetForLeaderEpochRequest:
CLUSTER_ACTION on the cluster (a broker's own request) answers every topic; else DESCRIBE on
each topic (KIP-320's consumers), else TOPIC_AUTHORIZATION_FAILED.
In a simulated cluster only the leader answers (else NOT_LEADER_OR_FOLLOWER); an epoch ends
where a batch of a later epoch starts, else at the log end (Kafka's leader-epoch cache, read
from the batches' leader epochs: an epoch that wrote nothing is not seen).
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._leadership import epoch_end, served_here
from broker.handlers.list_offsets import LEADER_EPOCH, NO_EPOCH, check_leader_epoch
from broker.security.acl import CLUSTER, CLUSTER_ACTION, CLUSTER_NAME, DESCRIBE, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from protocol.schema import Message
from storage.partition_log import PartitionLog

API = OFFSET_FOR_LEADER_EPOCH
MIN_VERSION = 2
MAX_VERSION = 4


def handle(ctx: RequestContext, request: Message) -> Message:
    store = ctx.state.store
    as_broker = ctx.authorized(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME, log_denied=False)
    return Message(
        throttle_time_ms=0,
        topics=[
            Message(
                topic=topic.topic,
                partitions=[
                    _answer(ctx, topic.topic, store.partition(topic.topic, part.partition), part)
                    if as_broker or ctx.authorized(DESCRIBE, TOPIC, topic.topic)
                    else _result(part.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                    for part in topic.partitions
                ],
            )
            for topic in request.topics
        ],
    )


def _answer(ctx: RequestContext, topic: str, plog: PartitionLog | None, part: Message) -> Message:
    if plog is None:
        return _result(part.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    current = LEADER_EPOCH
    cluster = ctx.state.cluster
    if cluster is not None:
        served = served_here(ctx, cluster, topic, part.partition, replica_ok=False)
        if served is None:
            return _result(part.partition, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        current = served
    error = check_leader_epoch(part.current_leader_epoch, current)
    if error != ErrorCode.NONE:
        return _result(part.partition, error)
    epoch = part.leader_epoch
    if 0 <= epoch <= current and cluster is not None:
        # Where the epoch ended on the leader's log (a follower that led may have written
        # past it before a failover truncated the log there).
        found, end = epoch_end(plog, epoch, current)
        return _result(part.partition, ErrorCode.NONE, found, end)
    if epoch == LEADER_EPOCH:
        # The current epoch ends at the log end (a consumer checking its position after a
        # rebalance is never told to truncate).
        return _result(part.partition, ErrorCode.NONE, epoch, plog.log_end_offset)
    if epoch < NO_EPOCH:
        # Older than every known epoch: the start of the first known one (Kafka answers with
        # the requested epoch and that start offset).
        return _result(part.partition, ErrorCode.NONE, epoch, plog.log_start_offset)
    return _result(part.partition, ErrorCode.NONE)


def _result(
    partition: int, error: ErrorCode, leader_epoch: int = NO_EPOCH, end_offset: int = -1
) -> Message:
    return Message(
        error_code=error, partition=partition, leader_epoch=leader_epoch, end_offset=end_offset
    )
