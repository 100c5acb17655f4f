"""The rows the source yields and the sink takes: Spark's Kafka columns.

Source columns are KafkaRecordToRowConverter's: key, value, topic, partition, offset, timestamp,
timestampType (0 CreateTime, 1 LogAppendTime: Kafka's TimestampType ids) and, with
includeHeaders=true, headers as array<struct<key: string, value: binary>>. This source adds,
with includeProducerMetadata=true, producerId, producerEpoch and sequence (the record's own
sequence number: its batch's base sequence plus its offset delta; -1 when the record was not
written by an idempotent producer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADER_TYPE = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
_ARROW_HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])


def source_schema(include_headers: bool, include_producer_metadata: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(HEADER_TYPE)))
    if include_producer_metadata:
        fields += [
            StructField("producerId", LongType()),
            StructField("producerEpoch", ShortType()),
            StructField("sequence", IntegerType()),
        ]
    return StructType(fields)


class RowBatchBuilder:
    """Collects records column by column and hands them out as Arrow record batches, so that
    Spark converts whole batches instead of one Python tuple per record."""

    def __init__(self, include_headers: bool, include_producer_metadata: bool) -> None:
        self.include_headers = include_headers
        self.include_producer_metadata = include_producer_metadata
        self._reset()

    def _reset(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.topics: list[str] = []
        self.partitions: list[int] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.headers: list[list[dict[str, Any]] | None] = []
        self.producer_ids: list[int] = []
        self.producer_epochs: list[int] = []
        self.sequences: list[int] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(
        self,
        key: bytes | None,
        value: bytes | None,
        topic: str,
        partition: int,
        offset: int,
        timestamp_ms: int,
        timestamp_type: int,
        headers: Sequence[tuple[str, bytes | None]] | None,
        producer: tuple[int, int, int] | None = None,
    ) -> None:
        self.keys.append(key)
        self.values.append(value)
        self.topics.append(topic)
        self.partitions.append(partition)
        self.offsets.append(offset)
        self.timestamps.append(timestamp_ms * 1000)
        self.timestamp_types.append(timestamp_type)
        if self.include_headers:
            # Spark's converter gives null, never an empty array, for a record without headers.
            self.headers.append([{"key": k, "value": v} for k, v in headers] if headers else None)
        if self.include_producer_metadata:
            pid, epoch, sequence = producer or (-1, -1, -1)
            self.producer_ids.append(pid)
            self.producer_epochs.append(epoch)
            self.sequences.append(sequence)

    def take(self) -> pa.RecordBatch:
        arrays = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.array(self.topics, pa.string()),
            pa.array(self.partitions, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, pa.timestamp("us", tz="UTC")),
            pa.array(self.timestamp_types, pa.int32()),
        ]
        names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
        if self.include_headers:
            arrays.append(pa.array(self.headers, pa.list_(_ARROW_HEADER)))
            names.append("headers")
        if self.include_producer_metadata:
            arrays += [
                pa.array(self.producer_ids, pa.int64()),
                pa.array(self.producer_epochs, pa.int16()),
                pa.array(self.sequences, pa.int32()),
            ]
            names += ["producerId", "producerEpoch", "sequence"]
        batch = pa.RecordBatch.from_arrays(arrays, names=names)
        self._reset()
        return batch
