"""One Spark task's read: the records of one offset range of one partition.

Data loss follows Spark's KafkaDataConsumer.get/fetchRecord: an offset below the partition's
earliest available one (aged out, deleted by DeleteRecords, topic recreated) fails the task
with failOnDataLoss=true and is skipped, with a warning, with failOnDataLoss=false. Offsets
that are merely invisible (transaction markers, aborted records under read_committed,
compacted records) are skipped silently either way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from minikafka_spark.columns import RowBatchBuilder
from minikafka_spark.offsets import OffsetRange
from minikafka_spark.options import SourceOptions

log = logging.getLogger(__name__)

ARROW_BATCH_ROWS = 10_000
_CONSUME_BATCH = 10_000
# librdkafka's timestamp types -> Kafka's TimestampType ids, which Spark's column carries.
_TIMESTAMP_TYPE = {1: 0, 2: 1}
_OUT_OF_RANGE = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE}


class DataLossError(RuntimeError):
    """Spark's KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE."""


def data_loss_message(rng: OffsetRange, start: int, end: int, group_id: str) -> str:
    # QueryExecutionErrors.couldNotReadOffsetRangeInKafkaError's wording.
    return (
        f"Cannot fetch records in [{start}, {end}) (GroupId: {group_id}, TopicPartition: "
        f"{rng.topic}-{rng.partition}). Some data may have been lost because they are not "
        "available in Kafka any more; either the data was aged out by Kafka or the topic may "
        "have been deleted before all the data in the topic was processed. If you want your "
        "streaming query to continue on such cases, set the source option 'failOnDataLoss' "
        "to 'false'."
    )


@dataclass
class _Position:
    next_offset: int
    last_progress: float


def read_range(options: SourceOptions, rng: OffsetRange) -> Iterator[pa.RecordBatch]:
    if rng.size == 0:
        return
    if options.include_producer_metadata:
        from minikafka_spark.batch_fetch import read_range_with_producer_metadata

        yield from read_range_with_producer_metadata(options, rng)
        return
    config = options.consumer_config("executor")
    consumer = Consumer(config)
    try:
        yield from _consume(consumer, options, rng, str(config["group.id"]))
    finally:
        consumer.close()


def _earliest(consumer: Consumer, rng: OffsetRange, timeout_s: float) -> int:
    low, _ = consumer.get_watermark_offsets(
        TopicPartition(rng.topic, rng.partition), timeout=timeout_s, cached=False
    )
    return int(low)


def _skip_lost(
    consumer: Consumer, options: SourceOptions, rng: OffsetRange, offset: int, group_id: str
) -> int | None:
    """Where to go on from an offset that is no longer in the log, or None when nothing of
    the range is left (KafkaDataConsumer.getEarliestAvailableOffsetBetween)."""
    earliest = _earliest(consumer, rng, options.poll_timeout_ms / 1000)
    if offset >= earliest:
        return offset
    if options.fail_on_data_loss:
        # Spark names the whole range the task could not read
        # (KafkaDataConsumer.get -> throwOnDataLoss(toFetchOffset, untilOffset)).
        raise DataLossError(data_loss_message(rng, offset, rng.until_offset, group_id))
    log.warning(
        "Some data may be lost: records in [%d, %d) of %s-%d are skipped (failOnDataLoss=false)",
        offset,
        min(earliest, rng.until_offset),
        rng.topic,
        rng.partition,
    )
    return earliest if earliest < rng.until_offset else None


def _consume(
    consumer: Consumer, options: SourceOptions, rng: OffsetRange, group_id: str
) -> Iterator[pa.RecordBatch]:
    start = _skip_lost(consumer, options, rng, rng.from_offset, group_id)
    if start is None:
        return
    consumer.assign([TopicPartition(rng.topic, rng.partition, start)])
    builder = RowBatchBuilder(options.include_headers, include_producer_metadata=False)
    position = _Position(start, time.monotonic())
    timeout_s = options.poll_timeout_ms / 1000
    until = rng.until_offset
    while position.next_offset < until:
        messages = consumer.consume(num_messages=_CONSUME_BATCH, timeout=0.5)
        for message in messages:
            error = message.error()
            if error is not None:
                code = error.code()
                if code == KafkaError._PARTITION_EOF:
                    # Everything up to the end (the last stable offset under read_committed)
                    # was read; offsets left below `until` were invisible ones.
                    eof = message.offset()
                    if eof is not None and eof >= until:
                        position.next_offset = until
                    continue
                if code in _OUT_OF_RANGE:
                    resume = _skip_lost(consumer, options, rng, position.next_offset, group_id)
                    if resume is None:
                        position.next_offset = until
                        break
                    position.next_offset = resume
                    consumer.assign([TopicPartition(rng.topic, rng.partition, resume)])
                    break
                raise KafkaException(error)
            offset = message.offset()
            if offset is None or offset < position.next_offset:
                continue
            if offset >= until:
                position.next_offset = until
                break
            kind, stamp = message.timestamp()
            builder.add(
                message.key(),
                message.value(),
                rng.topic,
                rng.partition,
                offset,
                stamp,
                _TIMESTAMP_TYPE.get(kind, -1),
                message.headers(),  # type: ignore[arg-type]  # a consumer's are a list
            )
            position.next_offset = offset + 1
            position.last_progress = time.monotonic()
        if len(builder) >= ARROW_BATCH_ROWS:
            yield builder.take()
        if messages:
            position.last_progress = time.monotonic()
        elif time.monotonic() - position.last_progress > timeout_s:
            # KafkaDataConsumer.fetchData's TimeoutException.
            raise TimeoutError(
                f"Cannot fetch record for offset {position.next_offset} of "
                f"{rng.topic}-{rng.partition} in {options.poll_timeout_ms} milliseconds"
            )
    if len(builder):
        yield builder.take()
