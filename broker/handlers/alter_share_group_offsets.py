"""AlterShareGroupOffsets, version 0 (KIP-932; served with share.version >= 1).

As Kafka's KafkaApis.handleAlterShareGroupOffsetsRequest and GroupMetadataManager.
alterShareGroupOffsets: READ on the group, else GROUP_AUTHORIZATION_FAILED for the whole
answer; a topic the caller may not READ gets TOPIC_AUTHORIZATION_FAILED, an unknown one
UNKNOWN_TOPIC_OR_PARTITION, on each of its partitions (with Errors.message()). Then an empty
group id is INVALID_GROUP_ID, a classic or consumer group's id GROUP_ID_NOT_FOUND "Group X is
not a share group.", a group with members NON_EMPTY_GROUP (whole answer, with the message);
otherwise the share group is made if missing, its epoch moves, and each named partition
(below the topic's partition count; else UNKNOWN_TOPIC_OR_PARTITION) starts anew at its
start offset with nothing in flight, written durably before the answer.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.core.state import SHARE_VERSION_FEATURE
from broker.handlers._share_offsets import MESSAGES, not_a_share_group, other_kind
from broker.security.acl import GROUP, READ, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.share_group_offsets import ALTER_SHARE_GROUP_OFFSETS
from protocol.primitives import ZERO_UUID
from protocol.schema import Message

API = ALTER_SHARE_GROUP_OFFSETS
MIN_VERSION = 0
MAX_VERSION = 0
FEATURE = SHARE_VERSION_FEATURE


def _whole(error: ErrorCode, message: str | None = None) -> Message:
    return Message(
        throttle_time_ms=0,
        error_code=error,
        error_message=MESSAGES.get(error) if message is None else message,
        responses=[],
    )


def _part(index: int, error: ErrorCode) -> Message:
    return Message(
        partition_index=index,
        error_code=error,
        error_message=MESSAGES.get(error) if error else None,
    )


def handle(ctx: RequestContext, request: Message) -> Message:
    group_id = request.group_id
    if not ctx.authorized(READ, GROUP, group_id):
        return _whole(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    shares = ctx.state.shares
    shares.expire_members()
    refused: list[Message] = []
    named = []
    for topic in request.topics:
        info = ctx.state.store.topic(topic.topic_name)
        error = ErrorCode.NONE
        if not ctx.authorized(READ, TOPIC, topic.topic_name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif info is None:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if error:
            refused.append(
                Message(
                    topic_name=topic.topic_name,
                    topic_id=info.topic_id if info is not None else ZERO_UUID,
                    partitions=[_part(p.partition_index, error) for p in topic.partitions],
                )
            )
        else:
            named.append(topic)
    if not group_id:
        return _whole(ErrorCode.INVALID_GROUP_ID)
    group = shares.groups.get(group_id)
    if group is None and other_kind(ctx, group_id):
        return _whole(ErrorCode.GROUP_ID_NOT_FOUND, not_a_share_group(group_id))
    if group is not None and group.members:
        return _whole(ErrorCode.NON_EMPTY_GROUP)
    starts: dict[tuple[bytes, int], int] = {}
    altered = []
    for topic in named:
        info = ctx.state.store.topic(topic.topic_name)
        assert info is not None
        parts = []
        for p in topic.partitions:
            if 0 <= p.partition_index < len(info.partitions):
                starts[(info.topic_id, p.partition_index)] = p.start_offset
                parts.append(_part(p.partition_index, ErrorCode.NONE))
            else:
                parts.append(_part(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        altered.append(
            Message(topic_name=topic.topic_name, topic_id=info.topic_id, partitions=parts)
        )
    shares.alter_offsets(group_id, starts)
    return Message(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        responses=refused + altered,
    )
