"""DescribeLogDirs, versions 1-4.

Behaviour: the one log directory (log.dirs) with every requested partition's size on disk
(sum of its segment files); topics null = all; unknown topics and partitions are left
out, as Kafka does. offset_lag is 0 (no future replicas). v4 adds the file system's total
and usable bytes; v3+ a top-level error code.
Authorization (with an authorizer): DESCRIBE on the cluster, else no results and
CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import os

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import cluster_allowed
from broker.security.acl import DESCRIBE
from protocol.errors import ErrorCode
from protocol.messages.describe_log_dirs import DESCRIBE_LOG_DIRS
from protocol.schema import Message
from storage.store import TopicInfo

API = DESCRIBE_LOG_DIRS
MIN_VERSION = 1
MAX_VERSION = 4


def _partition(info: TopicInfo, index: int) -> Message:
    return Message(
        partition_index=index,
        partition_size=info.partitions[index].size,
        offset_lag=0,
        is_future_key=False,
    )


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, DESCRIBE):
        # KafkaApis.handleDescribeLogDirsRequest: no directories, the error (v3+) at the top.
        return Message(
            throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[]
        )
    store = ctx.state.store
    topics: list[Message] = []
    if request.topics is None:
        for info in sorted(store.topics(), key=lambda t: t.name):
            topics.append(
                Message(
                    name=info.name,
                    partitions=[_partition(info, i) for i in range(len(info.partitions))],
                )
            )
    else:
        for wanted in request.topics:
            found = store.topic(wanted.topic)
            if found is None:
                continue
            partitions = [
                _partition(found, i)
                for i in dict.fromkeys(wanted.partitions)
                if 0 <= i < len(found.partitions)
            ]
            if partitions:
                topics.append(Message(name=found.name, partitions=partitions))
    path = str(store.data_dir.resolve())
    try:
        stats = os.statvfs(path)
        total, usable = stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize
    except OSError:
        total = usable = -1
    return Message(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        results=[
            Message(
                error_code=ErrorCode.NONE,
                log_dir=path,
                topics=topics,
                total_bytes=total,
                usable_bytes=usable,
            )
        ],
    )
