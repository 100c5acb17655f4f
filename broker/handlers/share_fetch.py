"""ShareFetch, versions 1-2 (KIP-932 share groups; served with share.version >= 1).

As Kafka's KafkaApis.handleShareFetchRequest and SharePartitionManager: a null group id is
INVALID_REQUEST, READ on the group else GROUP_AUTHORIZATION_FAILED; the share session
(broker.coordinator.share.sessions) decides which partitions are fetched; piggy-backed
acknowledgements are applied first (per partition AcknowledgeErrorCode); then each
partition acquires records for the member (broker.coordinator.share.partition) below the
high watermark, or with share.isolation.level=read_committed below the last stable offset
and without aborted transactions' records, at most
max_records in all, and answers the whole batches holding them with AcquiredRecords ranges
and the lock duration (group.share.record.lock.duration.ms). With nothing acquired the
request waits up to max_wait_ms for an append to one of its partitions or for a lock to
run out. READ on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions; an unknown
topic id UNKNOWN_TOPIC_ID. The final epoch (-1) only acknowledges and closes the session,
releasing what the member still holds; so does closing the connection that opened it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from broker.coordinator.share.coordinator import ShareCoordinator, monotonic_ms
from broker.coordinator.share.partition import Acquired
from broker.coordinator.share.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    SessionError,
    SharePartitionKey,
)
from broker.core.request_context import RequestContext
from broker.core.state import SHARE_VERSION_FEATURE
from broker.handlers._share import (
    aborted_offsets,
    acknowledge,
    batches_covering,
    byte_limit,
    error_response,
    no_leader,
    refused,
    skipped_offsets,
)
from broker.security.acl import READ, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.share_fetch import SHARE_FETCH
from protocol.schema import Message

API = SHARE_FETCH
MIN_VERSION = 1
MAX_VERSION = 2
FEATURE = SHARE_VERSION_FEATURE


@dataclass(slots=True)
class _Part:
    error: ErrorCode = ErrorCode.NONE
    ack_error: ErrorCode = ErrorCode.NONE
    records: bytes = b""
    acquired: list[Acquired] = field(default_factory=list)


class _Answer:
    """Per partition: error, acknowledgement error, records and acquired ranges."""

    def __init__(self) -> None:
        self.parts: dict[SharePartitionKey, _Part] = {}

    def get(self, key: SharePartitionKey) -> _Part:
        part = self.parts.get(key)
        if part is None:
            part = self.parts[key] = _Part()
        return part

    def by_topic(self) -> list[Message]:
        topics: dict[bytes, list[Message]] = {}
        for (topic_id, index), part in self.parts.items():
            topics.setdefault(topic_id, []).append(
                Message(
                    partition_index=index,
                    error_code=part.error,
                    error_message=None,
                    acknowledge_error_code=part.ack_error,
                    acknowledge_error_message=None,
                    current_leader=no_leader(),
                    records=part.records,
                    acquired_records=[
                        Message(
                            first_offset=r.first_offset,
                            last_offset=r.last_offset,
                            delivery_count=r.delivery_count,
                        )
                        for r in part.acquired
                    ],
                )
            )
        return [Message(topic_id=t, partitions=p) for t, p in topics.items()]


def _exists(ctx: RequestContext, key: SharePartitionKey) -> ErrorCode:
    info = ctx.state.store.topic_by_id(key[0])
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if not 0 <= key[1] < len(info.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE


def _readable(ctx: RequestContext, key: SharePartitionKey) -> ErrorCode:
    info = ctx.state.store.topic_by_id(key[0])
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if not ctx.authorized(READ, TOPIC, info.name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if not 0 <= key[1] < len(info.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE


def _acquire(
    ctx: RequestContext,
    shares: ShareCoordinator,
    request: Message,
    keys: list[SharePartitionKey],
    answer: _Answer,
) -> int:
    """Acquire for every readable partition, up to max_records in all; records acquired."""
    if request.max_bytes <= 0:
        # Kafka reads at most max_bytes of the log: with none, nothing is read or acquired
        # (librdkafka's 0180 pins this as the Java client sees it).
        return 0
    left = max(request.max_records, 0) if ctx.version >= 1 else 500
    bytes_left = request.max_bytes
    total = 0
    now = monotonic_ms()
    lock_ms = shares.record_lock_ms(request.group_id)
    for key in keys:
        if left <= 0 or bytes_left <= 0:
            break
        error = _readable(ctx, key)
        if error != ErrorCode.NONE:
            answer.get(key).error = error
            continue
        part = shares.partition(request.group_id, key[0], key[1])
        info = ctx.state.store.topic_by_id(key[0])
        if part is None or info is None:
            answer.get(key).error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        plog = info.partitions[key[1]]
        # share.isolation.level: read_committed reads up to the last stable offset and
        # never delivers aborted transactions' records (archived as control records are).
        committed = shares.read_committed(request.group_id)
        end = plog.last_stable_offset if committed else plog.high_watermark
        skipped = skipped_offsets(plog, part.end_offset, end)
        if committed:
            skipped = sorted({*skipped, *aborted_offsets(plog, part.end_offset, end)})
        below = byte_limit(plog, part.first_candidate(now), bytes_left)
        runs: list[Acquired] = part.acquire(
            request.member_id, left, end, skipped, now, lock_ms, below
        )
        if not runs:
            continue
        count = sum(r.last_offset - r.first_offset + 1 for r in runs)
        left -= count
        total += count
        entry = answer.get(key)
        entry.records = batches_covering(
            plog, runs[0].first_offset, runs[-1].last_offset, max(bytes_left, 1)
        )
        bytes_left -= len(entry.records)
        entry.acquired = runs
    return total


def _wait_keys(ctx: RequestContext, keys: list[SharePartitionKey]) -> list[tuple[str, int]]:
    out = []
    for topic_id, index in keys:
        info = ctx.state.store.topic_by_id(topic_id)
        if info is not None:
            out.append((info.name, index))
    return out


async def handle(ctx: RequestContext, request: Message) -> Message:
    if (refusal := refused(ctx, request)) is not None:
        return refusal
    shares = ctx.state.shares
    shares.expire_members()
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    # Only partitions that exist join the session (others are answered with their error and
    # forgotten), so a session never holds more than the cluster's partitions.
    asked = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]
    unknown = {key: error for key in asked if (error := _exists(ctx, key)) != ErrorCode.NONE}
    requested = [key for key in asked if key not in unknown]
    forgotten = [(t.topic_id, i) for t in request.forgotten_topics_data for i in t.partitions]
    has_acks = any(p.acknowledgement_batches for t in request.topics for p in t.partitions)
    try:
        if epoch == INITIAL_EPOCH:
            if has_acks:
                return error_response(ErrorCode.INVALID_REQUEST)
            session = shares.sessions.open(group_id, member_id, requested, ctx.peer)
            keys = list(session.partitions)
        elif epoch == FINAL_EPOCH:
            shares.sessions.existing(group_id, member_id, epoch)
            keys = []
        else:
            session = shares.sessions.advance(group_id, member_id, epoch, requested, forgotten)
            keys = list(session.partitions)
    except SessionError as failed:
        return error_response(failed.error)
    answer = _Answer()
    for key, error in unknown.items():
        answer.get(key).error = error
    woken: set[tuple[str, int]] = set()
    for topic in request.topics:
        for p in topic.partitions:
            if not p.acknowledgement_batches:
                continue
            key = (topic.topic_id, p.partition_index)
            error = _readable(ctx, key)
            part = None if error != ErrorCode.NONE else shares.partition(group_id, *key)
            if part is None:
                answer.get(key).ack_error = error or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            answer.get(key).ack_error = acknowledge(
                shares, group_id, member_id, part, p.acknowledgement_batches, ctx.version
            )
            if part.has_available():
                woken.update(_wait_keys(ctx, [key]))
    if epoch == FINAL_EPOCH:
        woken.update(_wait_keys(ctx, shares.close_session(group_id, member_id)))
    else:
        deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
        while True:
            watch = ctx.state.fetch_purgatory.watch(_wait_keys(ctx, keys))
            try:
                got = _acquire(ctx, shares, request, keys, answer)
                left = deadline - time.monotonic()
                if got or left <= 0 or not keys or ctx.state.shutting_down:
                    break
                # A lock running out makes records available again: wake then too.
                locks = [
                    p.next_deadline()
                    for (g, t, i), p in shares.partitions.items()
                    if g == group_id and (t, i) in session.partitions
                ]
                soonest = min((d for d in locks if d is not None), default=None)
                if soonest is not None:
                    left = min(left, max(soonest - monotonic_ms(), 0) / 1000 + 0.001)
                await watch.wait(left)
            finally:
                watch.cancel()
    shares.persist()
    for name_and_index in woken:
        ctx.state.fetch_purgatory.check_and_complete(name_and_index)
    return Message(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        acquisition_lock_timeout_ms=shares.record_lock_ms(group_id),
        responses=answer.by_topic(),
        node_endpoints=[],
    )
