"""CreatePartitions, versions 0-3.

Behaviour (Kafka's ReplicationControlManager.createPartitions): a topic given twice ->
INVALID_REQUEST; unknown -> UNKNOWN_TOPIC_OR_PARTITION (null message); a count not above
the current one -> INVALID_PARTITIONS with Kafka's wording; assignments, when given, must
list one replica set per new partition, each exactly this broker (INVALID_REPLICA_ASSIGNMENT
in the words of Kafka's validateManualPartitionAssignment, see _assignments). New partitions
get the topic's configs. validate_only checks only.
Authorization (with an authorizer): ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
from collections import Counter

from broker.dispatch import RequestContext
from broker.handlers._assignments import manual_assignment_refusal
from broker.security.acl import ALTER, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.create_partitions import CREATE_PARTITIONS
from protocol.schema import Message

API = CREATE_PARTITIONS
MIN_VERSION = 0
MAX_VERSION = 3

log = logging.getLogger(__name__)


def _check(ctx: RequestContext, topic: Message, current: int) -> tuple[ErrorCode, str] | None:
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
        for assignment in topic.assignments:
            refusal = manual_assignment_refusal(assignment.broker_ids, ctx.state.node_id)
            if refusal is not None:
                return ErrorCode.INVALID_REPLICA_ASSIGNMENT, refusal
    return None


def handle(ctx: RequestContext, request: Message) -> Message:
    state = ctx.state
    counts = Counter(t.name for t in request.topics)
    results: list[Message] = []
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
        problem = _check(ctx, topic, current)
        if problem is not None:
            log.info("CreatePartitions %r refused: %s (%s)", name, problem[1], ctx.describe())
            results.append(Message(name=name, error_code=problem[0], error_message=problem[1]))
            continue
        if not request.validate_only:
            state.store.add_partitions(name, topic.count)
            state.apply_topic_settings(info)
            log.info(
                "topic %r grown from %d to %d partitions (%s)",
                name,
                current,
                topic.count,
                ctx.describe(),
            )
        results.append(Message(name=name, error_code=ErrorCode.NONE, error_message=None))
    return Message(throttle_time_ms=0, results=results)
