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
)
from protocol.value_type import value_type


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
    keep: Callable[[Record, int], bool],
    now_ms: int,
    delete_retention_ms: int,
) -> Filtered:
    """``keep(record, offset)`` decides each record (not asked for DELETE)."""
    if retention is BatchRetention.DELETE:
        return Filtered(None, header.records_count, 0)
    records = decode_records(batch, header) if header.records_count else []
    kept: list[Record] = []
    tombstones = False
    for record in records:
        if keep(record, header.base_offset + record.offset_delta):
            kept.append(record)
            tombstones = tombstones or record.value is None
    if kept:
        horizon = header.delete_horizon_ms
        set_horizon = (tombstones or marker_for_empty_txn) and horizon is None
        if len(kept) == len(records) and not set_horizon:
            return Filtered(batch, len(records), len(kept))
        if set_horizon:
            horizon = now_ms + delete_retention_ms
        return Filtered(_rebuild(header, kept, horizon), len(records), len(kept))
    if retention is BatchRetention.RETAIN_EMPTY:
        return Filtered(_empty(header), len(records), 0)
    return Filtered(None, len(records), 0)


def _timestamp(header: BatchHeader, record: Record) -> int:
    if header.log_append_time:
        return header.max_timestamp
    return header.base_timestamp + record.timestamp_delta


def _rebuild(header: BatchHeader, kept: list[Record], horizon: int | None) -> bytes:
    """MemoryRecordsBuilder over the kept records, the original last offset kept
    (overrideLastOffset) so the producer's last sequence survives."""
    stamps = [_timestamp(header, r) for r in kept]
    base_ts = horizon if horizon is not None else stamps[0]
    records = [
        Record(r.offset_delta, ts - base_ts, r.key, r.value, r.headers)
        for r, ts in zip(kept, stamps, strict=True)
    ]
    codec = header.compression
    attributes = header.attributes & (
        COMPRESSION_MASK | TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT
    )
    if horizon is not None:
        attributes |= DELETE_HORIZON_BIT
    max_ts = header.max_timestamp if header.log_append_time else max(stamps)
    body = (
        compression.compress(codec, encode_records(records)) if codec else encode_records(records)
    )
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
        records_count=len(records),
    )
    return encode_batch(new, body)


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
