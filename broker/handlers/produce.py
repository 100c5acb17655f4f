"""Produce, versions 3-12 served, 0-12 advertised.

Kafka 4.0 still advertises v0-2 because librdkafka <= 2.11 disables features otherwise; a
v0-2 request is answered with UNSUPPORTED_VERSION for every partition, as Kafka 4.0 does
(KIP-896). Each partition's batch is validated (storage.validation, KAFKA_NOTES §4), then
appended by PartitionLog.append, which runs the idempotence check, the write and the
producer-state update as one synchronous step (no await in between).

Topic configs (broker.topic_configs): max.message.bytes per topic; LogAppendTime topics get
each batch stamped with the broker's clock (attribute bit, max_timestamp, CRC) and answer
log_append_time_ms; compacted topics refuse keyless records (INVALID_RECORD, record_errors).

acks=0: processed normally, no response; if any partition failed the connection is closed
so the client refreshes its metadata (Kafka's behaviour).
Transactions are not implemented: a transactional id or a transactional batch is refused.
"""

from __future__ import annotations

import logging
import time

from broker.dispatch import CloseConnection, RequestContext
from broker.handlers._topic_policy import keyless_record_errors, stamp_log_append_time
from protocol.errors import ErrorCode
from protocol.messages.produce import PRODUCE
from protocol.schema import Message
from storage.partition_log import PartitionLog
from storage.validation import validate_batch

API = PRODUCE
MIN_VERSION = 3
MAX_VERSION = 12
ADVERTISED_MIN_VERSION = 0

# zstd needs Produce v7+ (KIP-110): older clients could not read it back.
ZSTD_MIN_VERSION = 7

log = logging.getLogger(__name__)


def _partition(index: int, error: ErrorCode, message: str | None = None) -> Message:
    return Message(
        index=index,
        error_code=error,
        base_offset=-1,
        log_append_time_ms=-1,
        log_start_offset=-1,
        record_errors=[],
        error_message=message,
    )


def _all_failed(request: Message, error: ErrorCode, message: str | None) -> list[Message]:
    return [
        Message(
            name=topic.name,
            partition_responses=[_partition(p.index, error, message) for p in topic.partition_data],
        )
        for topic in request.topic_data
    ]


async def handle(ctx: RequestContext, request: Message) -> Message | None:
    acks = request.acks
    if ctx.version < MIN_VERSION:
        responses = _all_failed(
            request, ErrorCode.UNSUPPORTED_VERSION, "Produce v0-2 is not supported"
        )
        log.warning("Produce v%d refused (%s)", ctx.version, ctx.describe())
    elif acks not in (-1, 0, 1):
        log.warning("Produce with acks=%d refused (%s)", acks, ctx.describe())
        responses = _all_failed(request, ErrorCode.INVALID_REQUIRED_ACKS, None)
    elif request.transactional_id is not None:
        log.warning(
            "transactional Produce refused: transactions are not supported (%s)", ctx.describe()
        )
        responses = _all_failed(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
    else:
        appended: list[PartitionLog] = []
        responses = [_produce_topic(ctx, topic, appended) for topic in request.topic_data]
        if appended:
            ctx.state.notify_appended()
            # Flush policy (flush.messages / flush.ms): answer only once the data is fsynced,
            # as Kafka does when it flushes in the append path; rounds are shared.
            now_ms = int(time.time() * 1000)
            due = [plog for plog in appended if plog.needs_flush(now_ms)]
            if due:
                await ctx.state.flusher.flush(due)

    if acks == 0:
        failed = [
            (t.name, p.index, ErrorCode(p.error_code).name)
            for t in responses
            for p in t.partition_responses
            if p.error_code != ErrorCode.NONE
        ]
        if failed:
            raise CloseConnection(f"acks=0 Produce failed for {failed}")
        return None
    return Message(responses=responses, throttle_time_ms=0)


def _produce_topic(ctx: RequestContext, topic: Message, appended: list[PartitionLog]) -> Message:
    state = ctx.state
    config = state.config
    info = state.store.topic(topic.name)
    # Topic configs: max.message.bytes, message.timestamp.type, cleanup.policy.
    settings = state.topic_settings(info) if info is not None else None
    now_ms = int(time.time() * 1000)
    allow_zstd = ctx.version >= ZSTD_MIN_VERSION
    results: list[Message] = []
    for part in topic.partition_data:
        log_ = state.store.partition(topic.name, part.index) if info is not None else None
        if log_ is None or settings is None:
            results.append(_partition(part.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        records = part.records
        if records is None:
            results.append(_partition(part.index, ErrorCode.INVALID_RECORD, "no records"))
            continue
        checked = validate_batch(
            records,
            max_message_bytes=settings.max_message_bytes,
            allow_zstd=allow_zstd,
            depth=config.record_validation,
        )
        if checked.error != ErrorCode.NONE or checked.header is None:
            log.warning(
                "rejected batch for %s-%d: %s %s (%s)",
                topic.name,
                part.index,
                checked.error.name,
                checked.message or "",
                ctx.describe(),
            )
            results.append(_partition(part.index, checked.error, checked.message))
            continue
        header = checked.header
        if header.is_transactional:
            results.append(
                _partition(
                    part.index, ErrorCode.INVALID_TXN_STATE, "transactions are not supported"
                )
            )
            continue
        if settings.compact:
            record_errors, message = keyless_record_errors(records, header, topic.name, part.index)
            if message is not None:
                log.warning(
                    "rejected batch for compacted %s-%d: %s (%s)",
                    topic.name,
                    part.index,
                    message,
                    ctx.describe(),
                )
                results.append(
                    Message(
                        index=part.index,
                        error_code=ErrorCode.INVALID_RECORD,
                        base_offset=-1,
                        log_append_time_ms=-1,
                        log_start_offset=-1,
                        record_errors=record_errors,
                        error_message=message,
                    )
                )
                continue
        batch = bytearray(records)
        if settings.log_append_time:
            header = stamp_log_append_time(batch, now_ms)
        result = log_.append(batch, header, now_ms)
        if result.error == ErrorCode.NONE:
            appended.append(log_)
        else:
            log.info(
                "%s for %s-%d producer_id=%d epoch=%d base_sequence=%d (%s)",
                result.error.name,
                topic.name,
                part.index,
                header.producer_id,
                header.producer_epoch,
                header.base_sequence,
                ctx.describe(),
            )
        results.append(
            Message(
                index=part.index,
                error_code=result.error,
                base_offset=result.base_offset,
                # LogAppendTime topics answer the broker's timestamp (a duplicate: the
                # original batch's, which storage reports).
                log_append_time_ms=now_ms
                if settings.log_append_time
                and result.error == ErrorCode.NONE
                and result.log_append_time_ms < 0
                else result.log_append_time_ms,
                log_start_offset=result.log_start_offset,
                record_errors=[],
                error_message=None,
            )
        )
    return Message(name=topic.name, partition_responses=results)
