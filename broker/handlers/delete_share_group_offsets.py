"""DeleteShareGroupOffsets, version 0 (KIP-932; served with share.version >= 1).

As Kafka's KafkaApis.handleDeleteShareGroupOffsetsRequest and GroupCoordinatorShard.
initiateDeleteShareGroupOffsets: DELETE on the group, else GROUP_AUTHORIZATION_FAILED for the
whole answer; a topic the caller may not READ gets TOPIC_AUTHORIZATION_FAILED. Then an empty
group id is INVALID_GROUP_ID, a missing group GROUP_ID_NOT_FOUND "Group X not found.", a
classic or consumer group's id GROUP_ID_NOT_FOUND "Group X is not a share group.", a group
with members NON_EMPTY_GROUP (whole answer, with the message). Each other topic: its
share-partitions' states are deleted (durably, before the answer); an unknown topic is
UNKNOWN_TOPIC_OR_PARTITION, one without state UNKNOWN_TOPIC_OR_PARTITION "There is no offset
information to delete.". Kafka's order: refused topics, deleted ones, then the others.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.core.state import SHARE_VERSION_FEATURE
from broker.handlers._share_offsets import MESSAGES, not_a_share_group, other_kind
from broker.security.acl import DELETE, GROUP, READ, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.share_group_offsets import DELETE_SHARE_GROUP_OFFSETS
from protocol.primitives import ZERO_UUID
from protocol.schema import Message

API = DELETE_SHARE_GROUP_OFFSETS
MIN_VERSION = 0
MAX_VERSION = 0
FEATURE = SHARE_VERSION_FEATURE

NOTHING_TO_DELETE = "There is no offset information to delete."


def _whole(error: ErrorCode, message: str | None = None) -> Message:
    return Message(
        throttle_time_ms=0,
        error_code=error,
        error_message=MESSAGES.get(error) if message is None else message,
        responses=[],
    )


def _topic(name: str, topic_id: bytes, error: ErrorCode, message: str | None) -> Message:
    return Message(topic_name=name, topic_id=topic_id, error_code=error, error_message=message)


def handle(ctx: RequestContext, request: Message) -> Message:
    group_id = request.group_id
    if not ctx.authorized(DELETE, GROUP, group_id):
        return _whole(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    shares = ctx.state.shares
    shares.expire_members()
    refused, named = [], []
    for topic in request.topics:
        if ctx.authorized(READ, TOPIC, topic.topic_name):
            named.append(topic.topic_name)
        else:
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            refused.append(_topic(topic.topic_name, ZERO_UUID, error, MESSAGES[error]))
    if not group_id:
        return _whole(ErrorCode.INVALID_GROUP_ID)
    group = shares.groups.get(group_id)
    if group is None:
        if other_kind(ctx, group_id):
            return _whole(ErrorCode.GROUP_ID_NOT_FOUND, not_a_share_group(group_id))
        return _whole(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if group.members:
        return _whole(ErrorCode.NON_EMPTY_GROUP)
    deleted, failed = [], []
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    for name in named:
        info = ctx.state.store.topic(name)
        if info is None:
            failed.append(_topic(name, ZERO_UUID, unknown, MESSAGES[unknown]))
        elif shares.delete_offsets(group_id, info.topic_id):
            deleted.append(_topic(name, info.topic_id, ErrorCode.NONE, None))
        else:
            failed.append(_topic(name, ZERO_UUID, unknown, NOTHING_TO_DELETE))
    return Message(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        responses=refused + deleted + failed,
    )
