"""OffsetCommit, versions 2-9.

Behaviour: Kafka's checks in Kafka's order: unknown topic or partition
UNKNOWN_TOPIC_OR_PARTITION; then the group: a simple consumer (generation -1, no member id)
may commit to an Empty or unknown group (which it creates); a member must be known
(UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID) and in the current generation (ILLEGAL_GENERATION);
REBALANCE_IN_PROGRESS while the group awaits SyncGroup; an unknown group with a generation
>= 0 gets GROUP_ID_NOT_FOUND (v9+) or ILLEGAL_GENERATION; metadata over 4096 bytes
OFFSET_METADATA_TOO_LARGE; a KIP-932 share group's id GROUP_ID_NOT_FOUND (Kafka's
ShareGroup.validateOffsetCommit). Durable before the answer: the records are fsynced (one grouped
fsync for all commits in flight) before the response is sent.
Retention: offsets expire after offsets.retention.minutes as Kafka 4.0's group coordinator
decides (broker.coordinator.groups.offset_expiration); a retention_time_ms other than -1
(v2-4) gives
the committed offsets their own expire timestamp, commit time + retention_time_ms, as
Kafka 4.0's OffsetMetadataManager.expireTimestampMs still does.
Authorization (with an authorizer): READ on the group (else GROUP_AUTHORIZATION_FAILED on
every partition) and on each topic (else TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from broker.coordinator.groups.coordinator import OffsetToCommit
from broker.core.request_context import RequestContext
from broker.handlers._groups import coordinator, offset_commit_answer
from broker.security.acl import GROUP, READ, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.schema import Message

API = OFFSET_COMMIT
MIN_VERSION = 2
MAX_VERSION = 9


async def handle(ctx: RequestContext, request: Message) -> Message:
    groups = coordinator(ctx)
    # (topic, partition) -> error; None = goes to the coordinator.
    errors: dict[tuple[str, int], int] = {}
    valid: list[OffsetToCommit] = []
    group_denied = not ctx.authorized(READ, GROUP, request.group_id)
    for topic in request.topics:
        info = ctx.state.store.topic(topic.name)
        topic_denied = not group_denied and not ctx.authorized(READ, TOPIC, topic.name)
        for part in topic.partitions:
            key = (topic.name, part.partition_index)
            if group_denied:
                # OffsetCommitRequest.getErrorResponse: the group error on every partition.
                errors[key] = ErrorCode.GROUP_AUTHORIZATION_FAILED
                continue
            if topic_denied:
                errors[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if info is None or not 0 <= part.partition_index < len(info.partitions):
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            valid.append(
                OffsetToCommit(
                    topic.name,
                    part.partition_index,
                    part.committed_offset,
                    part.committed_leader_epoch,
                    part.committed_metadata,
                )
            )
    if valid:
        streams_error = ctx.state.streams.validate_commit(
            request.group_id,
            request.member_id,
            request.generation_id_or_member_epoch,
            ctx.version,
            txn=False,
        )
        group_error = (
            # ShareGroup.validateOffsetCommit: a share group takes no offset commits.
            ErrorCode.GROUP_ID_NOT_FOUND
            if request.group_id in ctx.state.shares.groups
            else streams_error
            if streams_error is not None
            else groups.validate_commit(
                request.group_id,
                request.member_id,
                request.group_instance_id,
                request.generation_id_or_member_epoch,
                ctx.version,
            )
        )
        if group_error:
            for item in valid:
                errors[(item.topic, item.partition)] = group_error
        else:
            # v5+ has no retention_time_ms: it decodes as -1, Kafka's DEFAULT_RETENTION_TIME.
            results = await groups.commit(request.group_id, valid, request.retention_time_ms)
            for item, error in zip(valid, results, strict=True):
                errors[(item.topic, item.partition)] = error
    return offset_commit_answer(request, errors)
