"""AlterReplicaLogDirs, versions 1-2.

Behaviour: as Kafka 4.0's ReplicaManager.alterReplicaLogDirs with one log directory, per
partition (the last directory named for a partition wins, as Kafka's map): a topic name too
long for the future-replica directory name -> INVALID_TOPIC_EXCEPTION; a path that is not
our log directory -> LOG_DIR_NOT_FOUND (checked before the partition, as
LogManager.isLogDirOnline); an unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; our
log directory -> NONE: the replica is already there (Partition.maybeCreateFutureReplica
skips), nothing moves. Results are grouped by topic.
Deviations: Kafka compares the path with the absolute path of log.dirs; we accept that and
also the resolved path DescribeLogDirs reports (they differ only behind a symlink).
Authorization (with an authorizer): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import os

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import cluster_allowed
from broker.security.acl import ALTER
from protocol.errors import ErrorCode
from protocol.messages.alter_replica_log_dirs import ALTER_REPLICA_LOG_DIRS
from protocol.schema import Message

API = ALTER_REPLICA_LOG_DIRS
MIN_VERSION = 1
MAX_VERSION = 2

# UnifiedLog.logFutureDirName: "<topic>-<partition>.<32 hex uuid>-future", at most 255 bytes
# (KAFKA-4893).
_FUTURE_SUFFIX_LENGTH = len(".") + 32 + len("-future")


def _error(ctx: RequestContext, topic: str, partition: int, path: str, ours: set[str]) -> int:
    if len(f"{topic}-{partition}") + _FUTURE_SUFFIX_LENGTH > 255:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if path not in ours:
        return ErrorCode.LOG_DIR_NOT_FOUND
    info = ctx.state.store.topic(topic)
    if info is None or not 0 <= partition < len(info.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, ALTER):
        # KafkaApis.handleAlterReplicaLogDirsRequest: every partition gets the error.
        named: dict[str, list[int]] = {}
        for wanted in request.dirs:
            for topic in wanted.topics:
                named.setdefault(topic.name, []).extend(topic.partitions)
        return Message(
            throttle_time_ms=0,
            results=[
                Message(
                    topic_name=name,
                    partitions=[
                        Message(
                            partition_index=p, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                        )
                        for p in parts
                    ],
                )
                for name, parts in named.items()
            ],
        )
    data_dir = ctx.state.store.data_dir
    ours = {os.path.abspath(data_dir), str(data_dir.resolve())}
    destinations: dict[tuple[str, int], str] = {}
    for wanted in request.dirs:
        for topic in wanted.topics:
            for partition in topic.partitions:
                destinations[(topic.name, partition)] = wanted.path
    by_topic: dict[str, list[Message]] = {}
    for (topic_name, partition), path in destinations.items():
        by_topic.setdefault(topic_name, []).append(
            Message(
                partition_index=partition,
                error_code=_error(ctx, topic_name, partition, path, ours),
            )
        )
    return Message(
        throttle_time_ms=0,
        results=[Message(topic_name=t, partitions=p) for t, p in by_topic.items()],
    )
