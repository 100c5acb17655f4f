"""Fetch, versions 4-17 (Kafka 4.0's range).

Serves stored batches exactly as they sit in the segment files, sent from the file with
sendfile when large (broker.zero_copy). Behaviour as Kafka:
- at least one whole batch for the first partition with data even above max_bytes /
  partition_max_bytes (KIP-74), so a consumer always makes progress; later partitions stop
  once the response's max_bytes is used up; a partition's data may end inside a batch
  (LogSegment.read does not align to batches; clients drop the partial tail);
- long-poll: with fewer than min_bytes available the answer waits up to max_wait_ms for
  new appends;
- offsets outside log_start..log_end get OFFSET_OUT_OF_RANGE; v13+ topic ids that are
  unknown get UNKNOWN_TOPIC_ID.
A negative partition_max_bytes gets INVALID_FETCH_SIZE (Kafka fails the read with an
IllegalArgumentException, which reaches clients as UNKNOWN_SERVER_ERROR); a non-positive
request max_bytes still returns the first batch, as Kafka's minOneMessage does for v3+.
Deviation: no incremental fetch sessions (KIP-227). Every answer carries session_id 0,
which tells clients "no session was created", so they keep sending full fetch requests; a
broker whose session cache is full answers the same way.
"""

from __future__ import annotations

import asyncio
import time

from broker.dispatch import RequestContext
from broker.zero_copy import FileRecords
from protocol.errors import ErrorCode
from protocol.messages.fetch import FETCH
from protocol.schema import Message
from storage.partition_log import OffsetOutOfRangeError

API = FETCH
MIN_VERSION = 4
MAX_VERSION = 17

READ_COMMITTED = 1


async def handle(ctx: RequestContext, request: Message) -> Message:
    state = ctx.state
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    while True:
        # Taken before reading, so an append between the read and the wait is not missed.
        appended = state.append_signal()
        responses, total = _collect(ctx, request)
        remaining = deadline - time.monotonic()
        if (
            total >= request.min_bytes
            or remaining <= 0
            or state.shutting_down
            or _has_error(responses)
        ):
            break
        try:
            await asyncio.wait_for(appended.wait(), remaining)
        except TimeoutError:
            responses, total = _collect(ctx, request)
            break
    return Message(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=responses)


def _collect(ctx: RequestContext, request: Message) -> tuple[list[Message], int]:
    store = ctx.state.store
    by_id = {t.topic_id: t for t in store.topics()} if ctx.version >= 13 else {}
    budget = request.max_bytes if request.max_bytes > 0 else 0x7FFFFFFF
    read_committed = request.isolation_level == READ_COMMITTED
    total = 0
    responses: list[Message] = []
    for topic in request.topics:
        if ctx.version >= 13:
            info = by_id.get(topic.topic_id)
            missing = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            info = store.topic(topic.topic)
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        parts: list[Message] = []
        for part in topic.partitions:
            log_ = (
                info.partitions[part.partition]
                if info is not None and 0 <= part.partition < len(info.partitions)
                else None
            )
            if log_ is None:
                parts.append(
                    _empty(
                        part.partition,
                        missing if info is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    )
                )
                continue
            if part.partition_max_bytes < 0:
                # Kafka's log read rejects a negative size with an IllegalArgumentException,
                # which clients see as UNKNOWN_SERVER_ERROR; INVALID_FETCH_SIZE names it.
                parts.append(_empty(part.partition, ErrorCode.INVALID_FETCH_SIZE))
                continue
            limit = min(part.partition_max_bytes, budget - total)
            data: bytes | FileRecords = b""
            error = ErrorCode.NONE
            if limit > 0 or total == 0:
                try:
                    data = FileRecords(log_.read_slice(part.fetch_offset, max(limit, 1)))
                except OffsetOutOfRangeError:
                    error = ErrorCode.OFFSET_OUT_OF_RANGE
            total += len(data)
            end = log_.log_end_offset
            parts.append(
                Message(
                    partition_index=part.partition,
                    error_code=error,
                    high_watermark=end if error == ErrorCode.NONE else -1,
                    last_stable_offset=end if error == ErrorCode.NONE else -1,
                    log_start_offset=log_.log_start_offset,
                    aborted_transactions=[] if read_committed else None,
                    preferred_read_replica=-1,
                    records=data,
                )
            )
        responses.append(
            Message(
                topic=topic.topic if info is None else info.name,
                topic_id=topic.topic_id,
                partitions=parts,
            )
        )
    return responses, total


def _has_error(responses: list[Message]) -> bool:
    # Kafka answers at once when any partition has an error, without waiting for data.
    return any(p.error_code != ErrorCode.NONE for t in responses for p in t.partitions)


def _empty(partition: int, error: ErrorCode) -> Message:
    return Message(
        partition_index=partition,
        error_code=error,
        high_watermark=-1,
        last_stable_offset=-1,
        log_start_offset=-1,
        aborted_transactions=None,
        preferred_read_replica=-1,
        records=b"",
    )
