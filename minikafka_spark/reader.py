"""Batch and streaming readers: plan one Spark task per topic-partition range.

Batch reads resolve startingOffsets (default earliest) and endingOffsets (default latest) when
the query is planned (Spark's KafkaBatch.planInputPartitions). Streaming reads keep
KafkaSourceOffset-shaped offsets, `{"topic":{"partition":offset}}`, which Spark checkpoints;
a restarted query resumes from the checkpointed offsets, not from startingOffsets
(KafkaMicroBatchStream). Partitions that appear later start from their earliest offset, as
Spark's connector does; one that disappears, or whose offset went backwards, is data loss.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from minikafka_spark.offsets import (
    EARLIEST,
    LATEST,
    OffsetRange,
    OffsetResolver,
    PartitionOffsets,
    from_json_dict,
    rate_limit,
    split_ranges,
    to_json_dict,
)
from minikafka_spark.options import SourceOptions
from minikafka_spark.partition_reader import read_range

log = logging.getLogger(__name__)


class RangePartition(InputPartition):
    def __init__(self, rng: OffsetRange) -> None:
        super().__init__(rng)
        self.range = rng


def _ranges(
    start: PartitionOffsets, end: PartitionOffsets, options: SourceOptions
) -> list[InputPartition]:
    ranges = []
    for tp, until in sorted(end.items()):
        begin = start.get(tp)
        if begin is None:
            continue
        if until < begin:
            _report_data_loss(
                f"Partition {tp[0]}-{tp[1]}'s offset was changed from {begin} to {until}, "
                "some data may have been missed",
                options.fail_on_data_loss,
            )
            continue
        ranges.append(OffsetRange(tp[0], tp[1], begin, until))
    return [RangePartition(r) for r in split_ranges(ranges, options.min_partitions)]


def _read(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    # With nothing to read, partitions() is empty and pyspark's batch read still runs one
    # task on a placeholder InputPartition(None): it yields no rows, as Spark's connector
    # answers 0 rows.
    if isinstance(partition, RangePartition):
        yield from read_range(options, partition.range)


def _report_data_loss(message: str, fail_on_data_loss: bool) -> None:
    # KafkaMicroBatchStream.reportDataLoss.
    if fail_on_data_loss:
        raise RuntimeError(
            message + ". Some data may have been lost because they are not available in Kafka "
            "any more; either the data was aged out by Kafka or the topic may have been deleted "
            "before all the data in the topic was processed. If you want your streaming query "
            "to continue on such cases, set the source option 'failOnDataLoss' to 'false'."
        )
    log.warning("%s (failOnDataLoss=false)", message)


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        resolver = OffsetResolver(self.options)
        partitions = resolver.partitions()
        start = resolver.starting(partitions, default=EARLIEST)
        end = resolver.ending(partitions)
        if any(offset == EARLIEST for offset in start.values()):
            start = {**start, **resolver.earliest(tp for tp, o in start.items() if o == EARLIEST)}
        return _ranges(start, end, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._resolver: OffsetResolver | None = None
        self._available_now_target: PartitionOffsets | None = None

    @property
    def resolver(self) -> OffsetResolver:
        if self._resolver is None:
            self._resolver = OffsetResolver(self.options)
        return self._resolver

    def initialOffset(self) -> dict[str, Any]:
        partitions = self.resolver.partitions()
        return to_json_dict(self.resolver.starting(partitions, default=LATEST))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        # Trigger.AvailableNow: read up to what is there now, in as many batches as the read
        # limit takes (KafkaMicroBatchStream.prepareForTriggerAvailableNow).
        self._available_now_target = self._latest_with_new_partitions()

    def _latest_with_new_partitions(self) -> PartitionOffsets:
        partitions = self.resolver.partitions()
        return self.resolver.latest(partitions)

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, Any]:
        latest = (
            self._available_now_target
            if self._available_now_target is not None
            else self._latest_with_new_partitions()
        )
        begin = from_json_dict(start) if start is not None else {}
        new_partitions = [tp for tp in latest if tp not in begin]
        if new_partitions:
            log.info("Added partitions %s, starting from their earliest offsets", new_partitions)
            begin = {**begin, **self.resolver.earliest(new_partitions)}
        for tp in begin:
            if tp not in latest:
                _report_data_loss(
                    f"Partition {tp[0]}-{tp[1]} is gone", self.options.fail_on_data_loss
                )
        end = {tp: offset for tp, offset in latest.items()}
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, end, limit.max_rows)
        # Never move a partition backwards here; partitions() reports the data loss.
        return to_json_dict(end)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = from_json_dict(start)
        until = from_json_dict(end)
        new_partitions = [tp for tp in until if tp not in begin]
        if new_partitions:
            begin = {**begin, **self.resolver.earliest(new_partitions)}
        return _ranges(begin, until, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        # Offsets live in Spark's checkpoint; nothing is committed to Kafka (Spark's
        # connector commits none either).
        return None
