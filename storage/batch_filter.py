"""One batch through the log cleaner (Kafka's MemoryRecords.filterTo with the cleaner's
RecordFilter): which records stay, and the bytes written for the batch.

- The batch as it was, when every record stays and no delete horizon is due.
- Rebuilt (buildRetainedRecordsInto) when records went or a delete horizon is set: same
  base offset, last offset delta, producer fields, codec, timestamp type and leader epoch;
  the records keep their offsets and timestamps. A batch that holds a tombstone, or a
  marker whose transaction has no batch left, gets ``delete_horizon = now +
  delete.retention.ms`` (KIP-534: the flag bit and base_timestamp), counted from this
  cleaning; once past it the tombstone or marker goes.
- An empty batch (writeEmptyHeader: no records, the same offsets, sequence and producer)
  when nothing stays but the batch must (the last batch of a producer, the last of the
  cleaning round).
- Nothing otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from protocol import compression
from protocol.records import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    Record,
    decode_records,
    encode_batch,
    encode_records,
    records_data,
)
from protocol.value_type import value_type

from . import record_walk


class BatchRetention(Enum):
    DELETE = 0  # the whole batch goes
    DELETE_EMPTY = 1  # goes if no record stays
    RETAIN_EMPTY = 2  # stays, empty if no record does


@value_type(frozen=True, slots=True)
class Filtered:
    data: bytes | None  # what is written, None: nothing
    records_read: int
    records_kept: int


def filter_batch(
    batch: bytes,
    header: BatchHeader,
    retention: BatchRetention,
    marker_for_empty_txn: bool,
    keep: Callable[[bytes | None, bool, int], bool],
    now_ms: int,
    delete_retention_ms: int,
    select: Callable[[record_walk.Walked, int], list[int]] | None = None,
) -> Filtered:
    """``keep(key, has_value, offset)`` decides each record (not asked for DELETE); or
    ``select(walked, base_offset)``, when given, returns the kept records' indexes at once."""
    if retention is BatchRetention.DELETE:
        return Filtered(None, header.records_count, 0)
    count = header.records_count
    data = records_data(batch, header) if count else b""
    walked = record_walk.walk(data, count)
    base = header.base_offset
    if select is not None:
        kept = select(walked, base)
    else:
        kept = [
            i
            for i in range(count)
            if keep(walked.keys[i], walked.has_value[i], base + walked.offset_deltas[i])
        ]
    tombstones = any(not walked.has_value[i] for i in kept)
    if kept:
        horizon = header.delete_horizon_ms
        set_horizon = (tombstones or marker_for_empty_txn) and horizon is None
        if len(kept) == count and not set_horizon:
            return Filtered(batch, count, count)
        if set_horizon:
            horizon = now_ms + delete_retention_ms
        if header.log_append_time:
            records = decode_records(batch, header)
            rebuilt = _rebuild(header, [records[i] for i in kept], horizon)
        else:
            rebuilt = _splice(header, data, walked, kept, horizon)
        return Filtered(rebuilt, count, len(kept))
    if retention is BatchRetention.RETAIN_EMPTY:
        return Filtered(_empty(header), count, 0)
    return Filtered(None, count, 0)


def _splice(
    header: BatchHeader,
    data: bytes,
    walked: record_walk.Walked,
    kept: list[int],
    horizon: int | None,
) -> bytes:
    """A CreateTime batch rebuilt from its kept records' bytes (MemoryRecordsBuilder's
    result: base timestamp the horizon or the first kept record's, deltas re-based)."""
    stamps = [header.base_timestamp + walked.ts_deltas[i] for i in kept]
    base_ts = horizon if horizon is not None else stamps[0]
    raw = record_walk.splice(data, walked, kept, base_ts - header.base_timestamp)
    return _encode(header, raw, len(kept), base_ts, max(stamps), horizon)


def _encode(
    header: BatchHeader,
    raw: bytes,
    count: int,
    base_ts: int,
    max_ts: int,
    horizon: int | None,
) -> bytes:
    codec = header.compression
    kept_bits = COMPRESSION_MASK | TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT
    attributes = header.attributes & kept_bits
    if horizon is not None:
        attributes |= DELETE_HORIZON_BIT
    body = compression.compress(codec, raw) if codec else raw
    new = BatchHeader(
        base_offset=header.base_offset,
        batch_length=0,
        partition_leader_epoch=header.partition_leader_epoch,
        magic=2,
        crc=0,
        attributes=attributes,
        last_offset_delta=header.last_offset_delta,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        records_count=count,
    )
    return encode_batch(new, body)


def _timestamp(header: BatchHeader, record: Record) -> int:
    if header.log_append_time:
        return header.max_timestamp
    return header.base_timestamp + record.timestamp_delta


def _rebuild(header: BatchHeader, kept: list[Record], horizon: int | None) -> bytes:
    """MemoryRecordsBuilder over the kept records (LogAppendTime batches), the original last
    offset kept (overrideLastOffset) so the producer's last sequence survives."""
    stamps = [_timestamp(header, r) for r in kept]
    base_ts = horizon if horizon is not None else stamps[0]
    records = [
        Record(r.offset_delta, ts - base_ts, r.key, r.value, r.headers)
        for r, ts in zip(kept, stamps, strict=True)
    ]
    return _encode(
        header, encode_records(records), len(kept), base_ts, header.max_timestamp, horizon
    )


def _empty(header: BatchHeader) -> bytes:
    """DefaultRecordBatch.writeEmptyHeader: no codec, no delete horizon, both timestamps the
    batch's max."""
    attributes = header.attributes & (TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT)
    new = BatchHeader(
        base_offset=header.base_offset,
        batch_length=0,
        partition_leader_epoch=header.partition_leader_epoch,
        magic=2,
        crc=0,
        attributes=attributes,
        last_offset_delta=header.last_offset_delta,
        base_timestamp=header.max_timestamp,
        max_timestamp=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        records_count=0,
    )
    return encode_batch(new, b"")
