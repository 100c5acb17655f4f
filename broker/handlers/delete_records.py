"""DeleteRecords, versions 0-2.

Behaviour (Kafka's ReplicaManager.deleteRecords / UnifiedLog.maybeIncrementLogStartOffset):
each partition's log start offset moves up to the given offset (-1 = the high watermark);
low_watermark answers the new log start. An offset above the high watermark or below -1 ->
OFFSET_OUT_OF_RANGE; one at or below the current start changes nothing. A topic whose
cleanup.policy lacks "delete" -> POLICY_VIOLATION, as Kafka. Unknown partition ->
UNKNOWN_TOPIC_OR_PARTITION. Afterwards a fetch below the new start gets
OFFSET_OUT_OF_RANGE; segments wholly below it are deleted (renamed ``*.deleted`` at once,
removed file.delete.delay.ms later, as Kafka's deleteSegmentFiles); the new start survives
restarts (Kafka's log-start-offset-checkpoint file).
Authorization (with an authorizer): DELETE on each topic, else TOPIC_AUTHORIZATION_FAILED.
In a simulated cluster only the partition's leader deletes (else NOT_LEADER_OR_FOLLOWER).
"""

from __future__ import annotations

import logging

from broker.core.request_context import RequestContext
from broker.handlers._leadership import served_here
from broker.security.acl import DELETE, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.delete_records import DELETE_RECORDS
from protocol.schema import Message
from storage.partition_log import OffsetOutOfRangeError

API = DELETE_RECORDS
MIN_VERSION = 0
MAX_VERSION = 2

HIGH_WATERMARK = -1

log = logging.getLogger(__name__)


def _partition(ctx: RequestContext, topic: str, part: Message) -> Message:
    state = ctx.state
    index = part.partition_index
    info = state.store.topic(topic)
    plog = state.store.partition(topic, index) if info is not None else None
    if info is None or plog is None:
        return Message(
            partition_index=index,
            low_watermark=-1,
            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        )
    cluster = state.cluster
    if cluster is not None and served_here(ctx, cluster, topic, index, replica_ok=False) is None:
        # ReplicaManager.deleteRecordsOnLocalLog: the leader's.
        return Message(
            partition_index=index, low_watermark=-1, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER
        )
    if not state.topic_settings(info).delete:
        return Message(
            partition_index=index, low_watermark=-1, error_code=ErrorCode.POLICY_VIOLATION
        )
    offset = plog.high_watermark if part.offset == HIGH_WATERMARK else part.offset
    try:
        low = state.store.delete_records(topic, index, offset)
    except OffsetOutOfRangeError as exc:
        log.info("DeleteRecords %s-%d refused: %s (%s)", topic, index, exc, ctx.describe())
        return Message(
            partition_index=index, low_watermark=-1, error_code=ErrorCode.OFFSET_OUT_OF_RANGE
        )
    return Message(partition_index=index, low_watermark=low, error_code=ErrorCode.NONE)


def handle(ctx: RequestContext, request: Message) -> Message:
    return Message(
        throttle_time_ms=0,
        topics=[
            Message(
                name=topic.name,
                partitions=[
                    _partition(ctx, topic.name, part)
                    if ctx.authorized(DELETE, TOPIC, topic.name)
                    else _denied(part.partition_index)
                    for part in topic.partitions
                ],
            )
            for topic in request.topics
        ],
    )


def _denied(index: int) -> Message:
    # KafkaApis.handleDeleteRecordsRequest: DELETE on the topic, else this, before existence.
    return Message(
        partition_index=index, low_watermark=-1, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED
    )
