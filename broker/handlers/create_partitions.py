"""CreatePartitions, versions 0-3.

Behaviour (Kafka's ReplicationControlManager.createPartitions): a topic given twice ->
INVALID_REQUEST; unknown -> UNKNOWN_TOPIC_OR_PARTITION (null message); a count not above
the current one -> INVALID_PARTITIONS with Kafka's wording; assignments, when given, must
list one replica set per new partition, each exactly this broker (INVALID_REPLICA_ASSIGNMENT
in the words of Kafka's validateManualPartitionAssignment, see _assignments). New partitions
get the topic's configs. validate_only checks only (and answers as if it had grown).

Kafka's controller writes one metadata record per new partition into a list bounded by
QuorumController.MAX_RECORDS_PER_USER_OP (10,000) for the whole request; the topic whose
partition no longer fits gets UNKNOWN_SERVER_ERROR (a null message: the BoundedList's
exception is caught per topic as an unexpected error), as does every later topic that gets
that far, while the records already listed, including the first partitions of that very
topic, are committed. So does this handler: a topic is grown by what fits and answers
UNKNOWN_SERVER_ERROR (ReplicationControlManager.createPartitions, Kafka 4.0). There is no
up-front MAX_PARTITIONS_PER_BATCH check as CreateTopics has.

The new partitions' directories and files are made on a worker thread (broker.runtime.offload): a
large growth takes a while even with its fsyncs grouped (Store.prepare_partitions), during
which the loop serves others. Growth and
deletion of topics take turns (``state.topic_changes``) meanwhile.
Authorization (with an authorizer): ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
from collections import Counter

from broker.core.request_context import RequestContext
from broker.handlers._assignments import manual_assignment_refusal, replica_count_refusal
from broker.runtime import offload
from broker.security.acl import ALTER, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.create_partitions import CREATE_PARTITIONS
from protocol.schema import Message
from storage.store import TopicInfo

API = CREATE_PARTITIONS
MIN_VERSION = 0
MAX_VERSION = 3

log = logging.getLogger(__name__)

# QuorumController.MAX_RECORDS_PER_USER_OP: one PartitionRecord per new partition.
MAX_RECORDS_PER_USER_OP = 10_000


def _check(
    ctx: RequestContext, topic: Message, current: int, info: TopicInfo | None = None
) -> tuple[ErrorCode, str] | None:
    count = topic.count
    if count < current:
        return (
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {topic.name} currently has {current} partition(s); {count} would not "
            "be an increase.",
        )
    if count == current:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
    if topic.assignments is not None:
        added = count - current
        if len(topic.assignments) != added:
            return (
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {added} additional partition(s), but only "
                f"{len(topic.assignments)} assignment(s) were specified.",
            )
        cluster = ctx.state.cluster
        nodes = (ctx.state.node_id,) if cluster is None else cluster.node_ids
        for assignment in topic.assignments:
            refusal = manual_assignment_refusal(assignment.broker_ids, nodes)
            if refusal is None and cluster is not None and info is not None:
                refusal = replica_count_refusal(
                    assignment.broker_ids, cluster.replication_factor(info.topic_id)
                )
            if refusal is not None:
                return ErrorCode.INVALID_REPLICA_ASSIGNMENT, refusal
    return None


async def handle(ctx: RequestContext, request: Message) -> Message:
    async with ctx.state.topic_changes:
        return await _handle(ctx, request)


async def _handle(ctx: RequestContext, request: Message) -> Message:
    state = ctx.state
    counts = Counter(t.name for t in request.topics)
    results: list[Message] = []
    records_left = MAX_RECORDS_PER_USER_OP
    for topic in request.topics:
        name = topic.name
        if counts[name] > 1:
            results.append(
                Message(
                    name=name,
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message="Duplicate topic name.",
                )
            )
            continue
        if not ctx.authorized(ALTER, TOPIC, name):
            # ControllerApis.createPartitions: ALTER on the topic (DESCRIBE-less callers
            # cannot tell a missing topic either).
            results.append(
                Message(
                    name=name,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    error_message=None,
                )
            )
            continue
        info = state.store.topic(name)
        if info is None:
            results.append(
                Message(
                    name=name,
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    # Kafka's ReplicationControlManager.createPartitions answers a bare
                    # ApiError(UNKNOWN_TOPIC_OR_PARTITION): a null message on the wire.
                    error_message=None,
                )
            )
            continue
        current = len(info.partitions)
        problem = _check(ctx, topic, current, info)
        if problem is not None:
            log.info("CreatePartitions %r refused: %s (%s)", name, problem[1], ctx.describe())
            results.append(Message(name=name, error_code=problem[0], error_message=problem[1]))
            continue
        target = min(topic.count, current + records_left)
        records_left -= target - current
        if not request.validate_only and target > current:
            added = await offload.run(state.store.prepare_partitions, info, target)
            state.store.add_prepared_partitions(info, added)
            cluster = state.cluster
            if cluster is not None and topic.assignments:
                manual = {
                    index: tuple(assignment.broker_ids)
                    for index, assignment in enumerate(topic.assignments, start=current)
                }
                cluster.record_topic(
                    info.topic_id, cluster.replication_factor(info.topic_id), manual
                )
            state.apply_topic_settings(info)
            log.info(
                "topic %r grown from %d to %d partitions (%s)",
                name,
                current,
                target,
                ctx.describe(),
            )
        if target < topic.count:
            log.error(
                "Unexpected createPartitions error for %r: more than %d partitions added in "
                "one request, %d of %d added (%s)",
                name,
                MAX_RECORDS_PER_USER_OP,
                target - current,
                topic.count - current,
                ctx.describe(),
            )
            results.append(
                Message(name=name, error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None)
            )
            continue
        results.append(Message(name=name, error_code=ErrorCode.NONE, error_message=None))
    return Message(throttle_time_ms=0, results=results)
