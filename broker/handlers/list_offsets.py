"""ListOffsets, versions 1-10 (Kafka 4.0's range).

Per partition, by the request's timestamp (Kafka's UnifiedLog.fetchOffsetByTimestamp and
ReplicaManager.fetchOffset):
- -2 EARLIEST and -4 EARLIEST_LOCAL (v8+): the log start offset (everything is local here);
- -1 LATEST: the high watermark, or the last stable offset for read_committed
  (Partition.fetchOffsetForTimestamp's lastFetchableOffset);
- -3 MAX_TIMESTAMP (v7+): the largest record timestamp and the offset of the first record
  carrying it (the record's offset, not its batch's, as Kafka 3.8+ answers);
- -5 LATEST_TIERED (v9+): no tiered storage, so offset -1 and leader epoch -1, as Kafka
  answers when remote storage is disabled;
- a timestamp >= 0: the first record whose timestamp is >= it, found through the segments'
  time indexes, with that record's timestamp; none -> offset -1, timestamp -1; as for
  MAX_TIMESTAMP, an offset at or above the last fetchable offset (LSO under
  read_committed, else the high watermark) is answered as none;
- any other negative timestamp, or a special one below the version that introduced it:
  UNSUPPORTED_VERSION (Kafka's isListOffsetsTimestampUnsupported).
A partition listed twice gets INVALID_REQUEST (once, as Kafka's answer is keyed by partition);
an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; current_leader_epoch (v4+) other
than -1 ("not given") is checked against the partition's leader epoch, 0 on this broker:
above it UNKNOWN_LEADER_EPOCH, below it FENCED_LEADER_EPOCH. leader_epoch in the answer is 0
whenever an offset is returned.
timeout_ms (v10) bounds lookups in remote (tiered) storage, which does not exist here; it is
accepted and ignored.
In a simulated cluster only the partition's leader answers (else NOT_LEADER_OR_FOLLOWER), with
its current leader epoch in place of 0.
Deviation: a timestamp lookup starts after the last time-index entry strictly older than the
target; Kafka starts at the last entry <= the target and so can skip earlier records carrying
exactly the target timestamp. Here the answer is always the first such record.
Authorization (with an authorizer): DESCRIBE on each topic, else TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging

from broker.core.request_context import RequestContext
from broker.handlers._leadership import served_here
from broker.security.acl import DESCRIBE, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.list_offsets import LIST_OFFSETS
from protocol.records import CorruptBatchError
from protocol.schema import Message
from storage.partition_log import PartitionLog
from storage.time_index import TimestampOffset

API = LIST_OFFSETS
MIN_VERSION = 1
MAX_VERSION = 10

log = logging.getLogger(__name__)

LATEST = -1
READ_COMMITTED = 1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
# The first version that may carry each special timestamp (ReplicaManager's table).
SPECIAL_SINCE = {EARLIEST: 1, LATEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}
# This broker leads every partition in one leader epoch, the one Produce stamps on batches and
# Metadata reports.
LEADER_EPOCH = 0
NO_EPOCH = -1


def handle(ctx: RequestContext, request: Message) -> Message:
    seen: set[tuple[str, int]] = set()
    duplicates: set[tuple[str, int]] = set()
    for topic in request.topics:
        for part in topic.partitions:
            key = (topic.name, part.partition_index)
            (duplicates if key in seen else seen).add(key)
    # One answer per partition, topics in first-seen order (Kafka keys its answer by partition).
    answers: dict[str, dict[int, Message]] = {}
    for topic in request.topics:
        per_topic = answers.setdefault(topic.name, {})
        for part in topic.partitions:
            if part.partition_index in per_topic:
                continue
            if (topic.name, part.partition_index) in duplicates:
                answer = _error(part.partition_index, ErrorCode.INVALID_REQUEST)
            else:
                answer = _answer(ctx, topic.name, part, request.isolation_level)
            per_topic[part.partition_index] = answer
    return Message(
        throttle_time_ms=0,
        topics=[
            Message(name=name, partitions=list(parts.values())) for name, parts in answers.items()
        ],
    )


def _answer(ctx: RequestContext, topic: str, part: Message, isolation_level: int) -> Message:
    index = part.partition_index
    timestamp = part.timestamp
    if timestamp < 0 and ctx.version < SPECIAL_SINCE.get(timestamp, MAX_VERSION + 1):
        return _error(index, ErrorCode.UNSUPPORTED_VERSION)
    if not ctx.authorized(DESCRIBE, TOPIC, topic):
        return _error(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    plog = ctx.state.store.partition(topic, index)
    if plog is None:
        return _error(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    leader_epoch = LEADER_EPOCH
    cluster = ctx.state.cluster
    if cluster is not None:
        # Consumers' ListOffsets are the leader's (fetchOnlyFromLeader).
        served = served_here(ctx, cluster, topic, index, replica_ok=False)
        if served is None:
            return _error(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        leader_epoch = served
    epoch_error = check_leader_epoch(part.current_leader_epoch, leader_epoch)
    if epoch_error != ErrorCode.NONE:
        return _error(index, epoch_error)
    try:
        found = _lookup(plog, timestamp, isolation_level == READ_COMMITTED)
    except CorruptBatchError:
        log.exception("%s: cannot read a batch while looking up timestamp %d", plog, timestamp)
        return _error(index, ErrorCode.CORRUPT_MESSAGE)
    except OSError:
        log.exception("%s: storage error while looking up timestamp %d", plog, timestamp)
        return _error(index, ErrorCode.KAFKA_STORAGE_ERROR)
    if found is None:
        return _error(index, ErrorCode.NONE)
    epoch = NO_EPOCH if found.offset < 0 else leader_epoch
    return Message(
        partition_index=index,
        error_code=ErrorCode.NONE,
        timestamp=found.timestamp,
        offset=found.offset,
        leader_epoch=epoch,
    )


def _lookup(plog: PartitionLog, timestamp: int, read_committed: bool) -> TimestampOffset | None:
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return TimestampOffset(-1, plog.log_start_offset)
    # Partition.fetchOffsetForTimestamp's lastFetchableOffset.
    fetchable = plog.last_stable_offset if read_committed else plog.high_watermark
    if timestamp == LATEST:
        return TimestampOffset(-1, fetchable)
    if timestamp == LATEST_TIERED:
        return TimestampOffset(-1, -1)
    found = (
        plog.max_timestamp_offset()
        if timestamp == MAX_TIMESTAMP
        else plog.offset_for_timestamp(timestamp)
    )
    if found is not None and found.offset >= fetchable:
        return None
    return found


def check_leader_epoch(current_leader_epoch: int, leader_epoch: int = LEADER_EPOCH) -> ErrorCode:
    """Kafka's Partition.checkCurrentLeaderEpoch; -1 means the client did not say."""
    if current_leader_epoch == NO_EPOCH:
        return ErrorCode.NONE
    if current_leader_epoch > leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    if current_leader_epoch < leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.NONE


def _error(index: int, error: ErrorCode) -> Message:
    return Message(
        partition_index=index, error_code=error, timestamp=-1, offset=-1, leader_epoch=NO_EPOCH
    )
