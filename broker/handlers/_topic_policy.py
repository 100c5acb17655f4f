"""Produce-time effects of topic configs (broker.topic_configs) on one validated batch.

- message.timestamp.type=LogAppendTime: Kafka's LogValidator stamps the batch in place:
  the timestamp-type attribute bit is set and max_timestamp becomes the broker's clock,
  then the CRC is recomputed (KAFKA_NOTES §4). Per-record timestamps stay as sent; readers
  use max_timestamp for every record of a LogAppendTime batch.
- cleanup.policy=compact: every record needs a key; Kafka answers INVALID_RECORD with one
  record error per keyless record (batch_index = the record's position in the batch) and
  an error message summarising them (LogValidator.validateKey / processRecordErrors).
"""

from __future__ import annotations

from protocol.records import (
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    CorruptBatchError,
    decode_records,
    parse_header,
    set_max_timestamp,
)
from protocol.schema import Message

_ATTRIBUTES_LOW_BYTE = 22  # attributes are an int16 at 21; the low byte holds bits 0-7


def stamp_log_append_time(batch: bytearray, now_ms: int) -> BatchHeader:
    """Make ``batch`` a LogAppendTime batch stamped ``now_ms``; returns its new header."""
    batch[_ATTRIBUTES_LOW_BYTE] |= TIMESTAMP_TYPE_BIT
    set_max_timestamp(batch, now_ms)  # recomputes the CRC
    return parse_header(batch)


def keyless_record_errors(
    batch: bytes | bytearray | memoryview, header: BatchHeader, topic: str, partition: int
) -> tuple[list[Message], str | None]:
    """(record_errors, error_message) for records without a key; empty when all have one."""
    try:
        records = decode_records(batch, header)
    except CorruptBatchError as exc:
        return [], f"malformed records: {exc}"
    message = (
        f"Compacted topic cannot accept message without key in topic partition {topic}-{partition}."
    )
    errors = [
        Message(batch_index=i, batch_index_error_message=message)
        for i, record in enumerate(records)
        if record.key is None
    ]
    if not errors:
        return [], None
    shown = ", ".join(
        f"RecordError(batchIndex={e.batch_index}, message='{message}')" for e in errors[:3]
    )
    return errors, (
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"
    )
