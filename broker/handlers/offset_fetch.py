"""OffsetFetch, versions 1-9 (v8+ several groups per request).

Behaviour: the committed offset, leader epoch and metadata of each requested partition;
-1 with empty metadata where nothing is committed (also for unknown groups, as Kafka).
Null topics (v2+) = every partition the group committed. require_stable (v7+, KIP-447): a
partition with transactional offsets waiting for their transaction's end answers
UNSTABLE_OFFSET_COMMIT with offset -1 (OffsetMetadataManager.fetchOffsets); clients retry.
v9's member id and epoch are checked for KIP-848 consumer groups (UNKNOWN_MEMBER_ID,
STALE_MEMBER_EPOCH, ConsumerGroup.validateOffsetFetch) and ignored for classic groups.
Group-level errors go to error_code (v2-7), to each group (v8+), or to each partition (v1).
Authorization (KafkaApis.handleOffsetFetchRequest): DESCRIBE on the group, else
GROUP_AUTHORIZATION_FAILED; a listed topic the caller may not DESCRIBE answers
TOPIC_AUTHORIZATION_FAILED on its partitions, and "every partition" leaves such topics out.
"""

from __future__ import annotations

from broker.coordinator.groups.coordinator import FetchedOffset, GroupCoordinator
from broker.core.request_context import RequestContext
from broker.handlers._groups import coordinator
from broker.security.acl import DESCRIBE, GROUP, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.offset_fetch import OFFSET_FETCH
from protocol.schema import Message

API = OFFSET_FETCH
MIN_VERSION = 1
MAX_VERSION = 9


def _lookup(
    ctx: RequestContext,
    groups: GroupCoordinator,
    group_id: str,
    topics: list[Message] | None,
    require_stable: bool,
    member: tuple[str | None, int] = (None, -1),
) -> tuple[int, list[FetchedOffset]]:
    wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    error, offsets = groups.fetch_offsets(group_id, wanted, *member)
    if require_stable and not error:
        unstable = ctx.state.transactions.pending_offset_partitions(group_id)
        offsets = [
            FetchedOffset(o.topic, o.partition, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
            if (o.topic, o.partition) in unstable
            else o
            for o in offsets
        ]
    return error, offsets


def _fetch(
    ctx: RequestContext,
    groups: GroupCoordinator,
    group_id: str,
    topics: list[Message] | None,
    require_stable: bool,
    member: tuple[str | None, int] = (None, -1),
) -> tuple[int, list[FetchedOffset]]:
    if not ctx.authorized(DESCRIBE, GROUP, group_id):
        if topics is None or ctx.version >= 2:
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
        denied = ErrorCode.GROUP_AUTHORIZATION_FAILED
        return denied, [
            FetchedOffset(t.name, p, -1, -1, "", denied)
            for t in topics
            for p in t.partition_indexes
        ]
    if topics is None:
        error, offsets = _lookup(ctx, groups, group_id, None, require_stable, member)
        return error, [
            o for o in offsets if ctx.authorized(DESCRIBE, TOPIC, o.topic, log_denied=False)
        ]
    allowed = [t for t in topics if ctx.authorized(DESCRIBE, TOPIC, t.name)]
    error, offsets = _lookup(ctx, groups, group_id, allowed, require_stable, member)
    offsets += [
        FetchedOffset(t.name, p, -1, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for t in topics
        if t not in allowed
        for p in t.partition_indexes
    ]
    return error, offsets


def _by_topic(offsets: list[FetchedOffset], error: int) -> list[Message]:
    topics: dict[str, list[Message]] = {}
    for o in offsets:
        topics.setdefault(o.topic, []).append(
            Message(
                partition_index=o.partition,
                committed_offset=o.offset,
                committed_leader_epoch=o.leader_epoch,
                metadata=o.metadata,
                error_code=error or o.error,
            )
        )
    return [Message(name=name, partitions=parts) for name, parts in topics.items()]


def handle(ctx: RequestContext, request: Message) -> Message:
    groups = coordinator(ctx)
    if ctx.version >= 8:
        out = []
        for group in request.groups:
            error, offsets = _fetch(
                ctx,
                groups,
                group.group_id,
                group.topics,
                request.require_stable,
                (group.member_id, group.member_epoch),
            )
            out.append(
                Message(group_id=group.group_id, topics=_by_topic(offsets, 0), error_code=error)
            )
        return Message(throttle_time_ms=0, groups=out)
    error, offsets = _fetch(ctx, groups, request.group_id, request.topics, request.require_stable)
    if ctx.version < 2:
        # No top-level error code before v2: each partition carries it.
        return Message(throttle_time_ms=0, topics=_by_topic(offsets, error))
    return Message(throttle_time_ms=0, topics=_by_topic(offsets, 0), error_code=error)
