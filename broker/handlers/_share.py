"""Helpers shared by ShareFetch and ShareAcknowledge: the request checks both make first,
their error answer, acknowledgement checks and records.

Acknowledgement batches are checked as Kafka's KafkaApis.validateAcknowledgementBatches
does: first <= last, ascending and not overlapping, one type for the range or one per
offset, types 0-3 (4, RENEW, from v2 only); a partition whose batches fail gets
INVALID_REQUEST. Ranges are bounded by the share-partition's in-flight limit (a record not
in flight can not be acknowledged anyway), so a request can not make us walk huge ranges.
"""

from __future__ import annotations

from broker.coordinator.share.coordinator import ShareCoordinator, monotonic_ms
from broker.coordinator.share.partition import AckBatch, AckType, SharePartition
from broker.core.request_context import RequestContext
from broker.security.acl import GROUP, READ
from protocol.errors import ErrorCode
from protocol.schema import Message
from storage.partition_log import PartitionLog

# KIP-1222: RENEW from ShareFetch/ShareAcknowledge v2.
RENEW_SINCE = 2


def ack_batches(batches: list[Message], version: int, max_span: int) -> list[AckBatch] | None:
    """The request's batches, or None when they break Kafka's rules."""
    out: list[AckBatch] = []
    top = AckType.RENEW if version >= RENEW_SINCE else AckType.REJECT
    previous = -1
    for batch in batches:
        first, last, types = batch.first_offset, batch.last_offset, list(batch.acknowledge_types)
        if first < 0 or last < first or first <= previous or last - first >= max_span:
            return None
        if len(types) not in (1, last - first + 1) or not all(0 <= t <= top for t in types):
            return None
        out.append(AckBatch(first, last, tuple(types)))
        previous = last
    return out


def acknowledge(
    shares: ShareCoordinator,
    group_id: str,
    member_id: str,
    part: SharePartition,
    batches: list[Message],
    version: int,
) -> ErrorCode:
    checked = ack_batches(batches, version, part.max_in_flight)
    if checked is None:
        return ErrorCode.INVALID_REQUEST
    return part.acknowledge(member_id, checked, monotonic_ms(), shares.record_lock_ms(group_id))


def skipped_offsets(plog: PartitionLog, start: int, end: int) -> list[int]:
    """Offsets in [start, end) of control batches (transaction markers): never delivered."""
    out: list[int] = []
    if start >= end:
        return out
    for header in plog.headers(start):
        if header.base_offset >= end:
            break
        if header.is_control:
            last = header.base_offset + header.last_offset_delta
            out.extend(range(max(start, header.base_offset), min(last, end - 1) + 1))
    return out


def aborted_offsets(plog: PartitionLog, start: int, end: int) -> list[int]:
    """Offsets in [start, end) of data batches of aborted transactions, which a
    read_committed share group never delivers: Kafka's SharePartition archives them
    (fetchAbortedTransactionRecordBatches). A transactional batch is aborted when its
    producer has an aborted transaction that began at or before it and ended (its marker)
    after it."""
    out: list[int] = []
    if start >= end:
        return out
    aborted = plog.aborted_transactions(start, end)
    if not aborted:
        return out
    for header in plog.headers(start):
        if header.base_offset >= end:
            break
        if header.is_control or not header.is_transactional:
            continue
        last = header.base_offset + header.last_offset_delta
        if any(
            a.producer_id == header.producer_id and a.first_offset <= last < a.last_offset
            for a in aborted
        ):
            out.extend(range(max(start, header.base_offset), min(last, end - 1) + 1))
    return out


def byte_limit(plog: PartitionLog, first: int, max_bytes: int) -> int:
    """The offset after the whole batches from the one holding ``first`` that fit in
    ``max_bytes`` (at least one): a fetch acquires only records whose bytes it sends, as
    Kafka acquires within the batches it read."""
    size = 0
    limit = first
    for header, data in plog.batches(first):
        last = header.base_offset + header.last_offset_delta
        if last < first:
            continue
        if limit > first and size + len(data) > max_bytes:
            break
        size += len(data)
        limit = last + 1
    return limit


def batches_covering(plog: PartitionLog, first: int, last: int, max_bytes: int) -> bytes:
    """Whole batches holding offsets first..last (the client keeps the acquired ones), at
    least one, then up to ``max_bytes``."""
    parts: list[bytes] = []
    size = 0
    for header, data in plog.batches(first):
        if header.base_offset > last:
            break
        if header.base_offset + header.last_offset_delta < first:
            continue
        if parts and size + len(data) > max_bytes:
            break
        parts.append(data)
        size += len(data)
    return b"".join(parts)


def no_leader() -> Message:
    """CurrentLeader as Kafka leaves it on a partition with no leadership error (the
    generated LeaderIdAndEpoch's zeros)."""
    return Message(leader_id=0, leader_epoch=0)


def error_response(error: ErrorCode, message: str | None = None) -> Message:
    """A ShareFetch or ShareAcknowledge answer refused as a whole (both have these fields)."""
    return Message(
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        acquisition_lock_timeout_ms=0,
        responses=[],
        node_endpoints=[],
    )


def refused(ctx: RequestContext, request: Message) -> Message | None:
    """KafkaApis' first checks of both requests: a group id, READ on the group, a member id."""
    if request.group_id is None:
        return error_response(ErrorCode.INVALID_REQUEST, "Invalid group id in the request.")
    if not ctx.authorized(READ, GROUP, request.group_id):
        return error_response(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not request.member_id:
        return error_response(ErrorCode.INVALID_REQUEST, "Invalid member id in the request.")
    return None
