"""Kafka's LogValidator per-record rules and batch rewrites, for one validated client batch.

Runs after storage.validation (header, CRC and the record walk), before the append:

- ``check_records``: LogValidator.validateRecord for each record: a keyless record on a
  compacted topic (validateKey), then validateTimestamp: on a CreateTime topic a record
  timestamp other than -1 must lie within [now - message.timestamp.before.max.ms,
  now + message.timestamp.after.max.ms]; a producer batch with the LogAppendTime bit is
  refused on a LogAppendTime topic, and on a CreateTime topic when its timestamp is -1.
  Every record gets at most one record error; processRecordErrors then answers
  INVALID_TIMESTAMP if any is a timestamp error, else INVALID_RECORD, with Kafka's
  error_message (the only Produce errors that carry one).
- ``rewrite_batch``: what LogValidator writes back into the batch: max_timestamp becomes the
  largest record timestamp and the timestamp-type bit the topic's (setMaxTimestamp; a
  LogAppendTime topic gets the broker clock), the CRC recomputed when either changed. A
  compressed batch whose offset deltas are not 0, 1, 2, ... is rebuilt with fresh ones
  and recompressed with its codec (buildRecordsAndAssignOffsets; "some older clients do
  not implement the V1 internal offsets correctly"); an uncompressed one is kept as sent,
  as Kafka keeps it (assignOffsetsNonCompressed never reads the deltas).

A record of a batch with the LogAppendTime bit reads as the batch's max_timestamp
(DefaultRecordBatch's iterator), so those are the timestamps checked and kept.

Record timestamps are Java longs: base_timestamp + delta and the distance to the clock wrap
around as they do in Kafka. At depth "header" the records are only read when a rule needs
them: on compacted topics, for a batch with the LogAppendTime bit, and when the header's
base or max timestamp is out of bounds; max_timestamp is then trusted as sent and offset
deltas are not looked at.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import compression
from protocol.errors import ErrorCode
from protocol.records import (
    HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    Record,
    RecordsScan,
    build_batch,
    parse_header,
    parse_records,
    records_data,
    scan_records,
    set_timestamp_type_and_max,
)
from protocol.value_type import value_type

NO_TIMESTAMP = -1
_LONG = 1 << 64
_LONG_MAX = (1 << 63) - 1


def _java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java's long arithmetic does."""
    value &= _LONG - 1
    return value - _LONG if value > _LONG_MAX else value


@dataclass(frozen=True, slots=True)
class TopicRules:
    """The topic configs LogValidator applies to each record."""

    topic_partition: str  # "topic-partition", as Kafka's TopicPartition.toString
    compact: bool
    log_append_time: bool
    timestamp_before_max_ms: int
    timestamp_after_max_ms: int


@value_type(frozen=True, slots=True)
class RecordsVerdict:
    error: ErrorCode
    # Kafka's error_message for record errors; the reason for the log otherwise.
    message: str | None
    # (batch_index, batch_index_error_message) per refused record.
    record_errors: tuple[tuple[int, str], ...] = ()
    # The batch's max_timestamp as Kafka recomputes it (CreateTime), when known.
    max_timestamp: int | None = None
    # Parsed records when they had to be read (a rebuild reuses them).
    records: tuple[Record, ...] | None = None


def check_records(
    batch: bytes | bytearray | memoryview,
    header: BatchHeader,
    scan: RecordsScan | None,
    rules: TopicRules,
    now_ms: int,
) -> RecordsVerdict:
    """LogValidator.validateRecord for every record of ``batch``; NONE when all pass."""
    lat_bit = header.log_append_time
    if scan is None and (rules.compact or lat_bit or not _header_in_bounds(header, rules, now_ms)):
        try:
            scan = scan_records(records_data(batch, header), header.records_count)
        except CorruptBatchError as exc:
            return RecordsVerdict(ErrorCode.INVALID_RECORD, f"malformed records: {exc}")
    if scan is None:
        return RecordsVerdict(ErrorCode.NONE, None)
    low = header.base_timestamp + scan.min_timestamp_delta
    high = header.base_timestamp + scan.max_timestamp_delta
    fast = (
        not lat_bit
        and not (rules.compact and scan.keyless)
        and low >= -_LONG_MAX - 1
        and high <= _LONG_MAX
        and (rules.log_append_time or _in_bounds(low, high, rules, now_ms))
    )
    if fast:
        return RecordsVerdict(ErrorCode.NONE, None, max_timestamp=max(high, NO_TIMESTAMP))
    try:
        records = parse_records(records_data(batch, header), header.records_count)
    except CorruptBatchError as exc:  # the scan read them already; kept as a guard
        return RecordsVerdict(ErrorCode.INVALID_RECORD, f"malformed records: {exc}")
    return _check_each(header, tuple(records), rules, now_ms)


def _header_in_bounds(header: BatchHeader, rules: TopicRules, now_ms: int) -> bool:
    if rules.log_append_time:
        return True
    return _in_bounds(header.base_timestamp, header.max_timestamp, rules, now_ms)


def _in_bounds(low: int, high: int, rules: TopicRules, now_ms: int) -> bool:
    return (
        now_ms - low <= rules.timestamp_before_max_ms
        and high - now_ms <= rules.timestamp_after_max_ms
    )


def _check_each(
    header: BatchHeader, records: tuple[Record, ...], rules: TopicRules, now_ms: int
) -> RecordsVerdict:
    lat_bit = header.log_append_time
    # In-place validation of a compressed batch reads PartialDefaultRecords (key and value
    # sizes only; -1 for null), an uncompressed one DefaultRecords: their toString differ.
    partial = header.compression != compression.NONE
    errors: list[tuple[int, str]] = []
    timestamp_error = False
    max_timestamp = NO_TIMESTAMP
    for index, record in enumerate(records):
        timestamp = (
            header.max_timestamp
            if lat_bit
            else _java_long(header.base_timestamp + record.timestamp_delta)
        )
        if rules.compact and record.key is None:
            errors.append(
                (
                    index,
                    "Compacted topic cannot accept message without key in topic partition "
                    + rules.topic_partition,
                )
            )
            continue
        if not rules.log_append_time and timestamp != NO_TIMESTAMP:
            difference = _java_long(now_ms - timestamp)
            if (
                difference > rules.timestamp_before_max_ms
                or _java_long(-difference) > rules.timestamp_after_max_ms
            ):
                low = _java_long(now_ms - rules.timestamp_before_max_ms)
                high = _java_long(now_ms + rules.timestamp_after_max_ms)
                errors.append(
                    (
                        index,
                        f"Timestamp {timestamp} of message with offset {record.offset_delta} "
                        f"is out of range. The timestamp should be within [{low}, {high}]",
                    )
                )
                timestamp_error = True
                continue
        elif lat_bit:
            errors.append(
                (
                    index,
                    f"Invalid timestamp type in message {_describe(record, timestamp, partial)}"
                    ". Producer should not set timestamp type to LogAppendTime.",
                )
            )
            timestamp_error = True
            continue
        max_timestamp = max(max_timestamp, timestamp)
    if not errors:
        return RecordsVerdict(ErrorCode.NONE, None, max_timestamp=max_timestamp, records=records)
    if timestamp_error:
        return RecordsVerdict(
            ErrorCode.INVALID_TIMESTAMP,
            "One or more records have been rejected due to invalid timestamp",
            tuple(errors),
        )
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return RecordsVerdict(
        ErrorCode.INVALID_RECORD,
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]",
        tuple(errors),
    )


def _describe(record: Record, timestamp: int, partial: bool) -> str:
    """DefaultRecord.toString / PartialDefaultRecord.toString (offsets before assignment)."""
    if partial:
        key = len(record.key) if record.key is not None else -1
        value = len(record.value) if record.value is not None else -1
        kind = "PartialDefaultRecord"
    else:
        key = len(record.key) if record.key is not None else 0
        value = len(record.value) if record.value is not None else 0
        kind = "DefaultRecord"
    return (
        f"{kind}(offset={record.offset_delta}, timestamp={timestamp}, "
        f"key={key} bytes, value={value} bytes)"
    )


def rewrite_batch(
    batch: bytearray,
    header: BatchHeader,
    scan: RecordsScan | None,
    verdict: RecordsVerdict,
    rules: TopicRules,
    now_ms: int,
) -> tuple[bytearray, BatchHeader]:
    """Apply LogValidator's rewrites to an accepted ``batch``; the batch and its header.

    ``batch`` is changed in place unless it has to be rebuilt (then a new one is returned).
    """
    if scan is not None and not scan.sequential_offsets and header.compression != compression.NONE:
        return _rebuild(batch, header, verdict, rules, now_ms)
    if rules.log_append_time:
        max_timestamp = now_ms
    elif verdict.max_timestamp is not None:
        max_timestamp = verdict.max_timestamp
    else:
        # Depth "header": the records were not read; keep what the producer computed (a
        # LogAppendTime-bit batch's records all read as it anyway).
        max_timestamp = header.max_timestamp
    if set_timestamp_type_and_max(batch, rules.log_append_time, max_timestamp):
        header = parse_header(batch)
    return batch, header


def _rebuild(
    batch: bytearray,
    header: BatchHeader,
    verdict: RecordsVerdict,
    rules: TopicRules,
    now_ms: int,
) -> tuple[bytearray, BatchHeader]:
    records = verdict.records
    if records is None:
        records = tuple(parse_records(records_data(batch, header), header.records_count))
    timestamps = [
        header.max_timestamp
        if header.log_append_time
        else _java_long(header.base_timestamp + r.timestamp_delta)
        for r in records
    ]
    # MemoryRecordsBuilder: the first record's timestamp is the base; records are written
    # with attributes 0 and fresh offset deltas; max_timestamp is the largest timestamp
    # (from -1), or the broker clock on a LogAppendTime topic.
    base = timestamps[0]
    rebuilt = [
        Record(i, _java_long(ts - base), r.key, r.value, r.headers)
        for i, (r, ts) in enumerate(zip(records, timestamps, strict=True))
    ]
    data = bytearray(
        build_batch(
            rebuilt,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            codec=header.compression,
            transactional=header.is_transactional,
            base_timestamp=base,
            partition_leader_epoch=header.partition_leader_epoch,
        )
    )
    max_timestamp = now_ms if rules.log_append_time else max([NO_TIMESTAMP, *timestamps])
    set_timestamp_type_and_max(data, rules.log_append_time, max_timestamp)
    assert len(data) >= HEADER_SIZE
    return data, parse_header(data)
