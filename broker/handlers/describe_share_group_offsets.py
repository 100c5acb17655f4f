"""DescribeShareGroupOffsets, versions 0-1 (KIP-932; v1 adds Lag, KIP-1226; served with
share.version >= 1).

As Kafka's KafkaApis.handleDescribeShareGroupOffsetsRequest and GroupCoordinatorService:
DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it. Topics null: every
share-partition initialized for the group (assigned to a member as of its next heartbeat,
written, or altered: ShareCoordinator.initialized), leaving out topics the caller may not
DESCRIBE (nothing, without an error, for a missing group or one of another kind). Topics
named: those the caller may not DESCRIBE get TOPIC_AUTHORIZATION_FAILED per partition
(start and lag -1), an unknown topic start -1 with a zero topic id, a partition without a
written state start -1, leader epoch 0, lag -1 (Kafka's uninitialized summary); a partition
with one its start offset (SPSO), leader epoch 0 and its lag: the high watermark minus the
start offset minus the records past it already acknowledged or archived. Deviation: Kafka
answers the start offset it last persisted, which is the one before the last write's
acknowledgements moved it; we answer the current one.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.core.state import SHARE_VERSION_FEATURE
from broker.handlers._share_offsets import MESSAGES
from broker.security.acl import DESCRIBE, GROUP, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.share_group_offsets import DESCRIBE_SHARE_GROUP_OFFSETS
from protocol.primitives import ZERO_UUID
from protocol.schema import Message

API = DESCRIBE_SHARE_GROUP_OFFSETS
MIN_VERSION = 0
MAX_VERSION = 1
FEATURE = SHARE_VERSION_FEATURE


def _partition(ctx: RequestContext, group_id: str, topic_id: bytes, index: int) -> Message:
    shares = ctx.state.shares
    summary = shares.summary(group_id, topic_id, index)
    if summary is None:
        return Message(partition_index=index, start_offset=-1, leader_epoch=0, lag=-1, error_code=0)
    start, complete = summary
    info = ctx.state.store.topic_by_id(topic_id)
    lag = -1
    if info is not None and 0 <= index < len(info.partitions):
        lag = info.partitions[index].high_watermark - start - complete
    return Message(
        partition_index=index,
        start_offset=start,
        # The state's leader epoch: 0 on a single node (Kafka 4.4.0 answers 0 after an
        # AlterShareGroupOffsets too).
        leader_epoch=0,
        lag=lag,
        error_code=0,
    )


def _named(ctx: RequestContext, group_id: str, topics: list[Message]) -> list[Message]:
    known, unknown, refused = [], [], []
    for topic in topics:
        name, indexes = topic.topic_name, list(topic.partitions)
        if not ctx.authorized(DESCRIBE, TOPIC, name):
            refused.append(
                Message(
                    topic_name=name,
                    topic_id=ZERO_UUID,
                    partitions=[
                        Message(
                            partition_index=i,
                            start_offset=-1,
                            leader_epoch=0,
                            lag=-1,
                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            error_message=MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED],
                        )
                        for i in indexes
                    ],
                )
            )
            continue
        info = ctx.state.store.topic(name)
        if info is None:
            unknown.append(
                Message(
                    topic_name=name,
                    topic_id=ZERO_UUID,
                    partitions=[
                        Message(partition_index=i, start_offset=-1, leader_epoch=0, error_code=0)
                        for i in indexes
                    ],
                )
            )
            continue
        known.append(
            Message(
                topic_name=name,
                topic_id=info.topic_id,
                partitions=[_partition(ctx, group_id, info.topic_id, i) for i in indexes],
            )
        )
    # Kafka's order: the summaries read, the unknown topics, then the refused ones.
    return known + unknown + refused


def _all(ctx: RequestContext, group_id: str) -> list[Message]:
    out = []
    for topic_id, indexes in ctx.state.shares.initialized(group_id).items():
        info = ctx.state.store.topic_by_id(topic_id)
        if info is None or not ctx.authorized(DESCRIBE, TOPIC, info.name):
            continue
        out.append(
            Message(
                topic_name=info.name,
                topic_id=topic_id,
                partitions=[_partition(ctx, group_id, topic_id, i) for i in indexes],
            )
        )
    return out


def handle(ctx: RequestContext, request: Message) -> Message:
    ctx.state.shares.expire_members()
    groups = []
    for group in request.groups:
        group_id = group.group_id
        if not ctx.authorized(DESCRIBE, GROUP, group_id):
            groups.append(
                Message(
                    group_id=group_id, topics=[], error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED
                )
            )
            continue
        topics = (
            _all(ctx, group_id) if group.topics is None else _named(ctx, group_id, group.topics)
        )
        groups.append(Message(group_id=group_id, topics=topics, error_code=ErrorCode.NONE))
    return Message(throttle_time_ms=0, groups=groups)
