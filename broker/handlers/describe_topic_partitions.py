"""DescribeTopicPartitions, version 0 (KIP-966).

Behaviour, as Kafka's DescribeTopicPartitionsRequestHandler: topics sorted by name (an
empty list = every topic); partitions are paginated: at most response_partition_limit
(capped at Kafka's max.request.partition.size.limit, 2000) per answer, next_cursor naming
the first partition left out; a cursor resumes there (a cursor topic missing from a
non-empty request -> INVALID_REQUEST in every topic entry, as Kafka's error response).
Unknown topics are answered with UNKNOWN_TOPIC_OR_PARTITION. This broker leads every
partition; replicas = ISR = [node], empty ELR lists.
Authorization (with an authorizer): only DESCRIBE-able topics are listed; a named one
without DESCRIBE gets TOPIC_AUTHORIZATION_FAILED; authorized operations are the caller's.
"""

from __future__ import annotations

from broker.cluster.state import INTERNAL_TOPICS, leadership_key
from broker.core.authorized_operations import TOPIC as TOPIC_OPERATIONS
from broker.core.authorized_operations import of
from broker.core.request_context import RequestContext
from broker.handlers._leadership import partition_entry
from broker.handlers.metadata import led_partition
from broker.security.acl import DESCRIBE, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.describe_topic_partitions import DESCRIBE_TOPIC_PARTITIONS
from protocol.primitives import ZERO_UUID
from protocol.schema import Message

API = DESCRIBE_TOPIC_PARTITIONS
MIN_VERSION = 0
MAX_VERSION = 0

MAX_PARTITIONS = 2000


def _unknown(name: str, code: ErrorCode) -> Message:
    return Message(
        error_code=code,
        name=name,
        topic_id=ZERO_UUID,
        is_internal=False,
        partitions=[],
        topic_authorized_operations=TOPIC_OPERATIONS,
    )


def handle(ctx: RequestContext, request: Message) -> Message:
    state = ctx.state
    store = state.store
    node = state.node_id
    requested = sorted({t.name for t in request.topics})
    # DescribeTopicPartitionsRequestHandler: all topics -> only the DESCRIBE-able ones; a
    # named one without DESCRIBE -> TOPIC_AUTHORIZATION_FAILED.
    names = requested or sorted(
        t.name for t in store.topics() if ctx.authorized(DESCRIBE, TOPIC, t.name, log_denied=False)
    )
    cursor = request.cursor
    if cursor is not None:
        if requested and cursor.topic_name not in requested:
            # Kafka fails the whole request with InvalidRequestException, which its error
            # response carries in every topic entry.
            return Message(
                throttle_time_ms=0,
                topics=[_unknown(n, ErrorCode.INVALID_REQUEST) for n in requested],
                next_cursor=None,
            )
        names = [n for n in names if n >= cursor.topic_name]
    limit = max(0, min(request.response_partition_limit, MAX_PARTITIONS))
    topics: list[Message] = []
    next_cursor: Message | None = None
    for name in names:
        if requested and not ctx.authorized(DESCRIBE, TOPIC, name):
            topics.append(_unknown(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        info = store.topic(name)
        if info is None:
            topics.append(_unknown(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        if limit == 0:
            next_cursor = Message(topic_name=name, partition_index=first)
            break
        last = min(len(info.partitions), first + limit)
        topics.append(
            Message(
                error_code=ErrorCode.NONE,
                name=name,
                topic_id=info.topic_id,
                is_internal=name in INTERNAL_TOPICS,
                partitions=[led_partition(i, node) for i in range(max(first, 0), last)]
                if state.cluster is None
                else [
                    partition_entry(state.cluster, leadership_key(name, info.topic_id), i)
                    for i in range(max(first, 0), last)
                ],
                topic_authorized_operations=of(ctx, TOPIC_OPERATIONS, TOPIC, name),
            )
        )
        limit -= max(0, last - max(first, 0))
        if last < len(info.partitions):
            next_cursor = Message(topic_name=name, partition_index=last)
            break
    return Message(throttle_time_ms=0, topics=topics, next_cursor=next_cursor)
