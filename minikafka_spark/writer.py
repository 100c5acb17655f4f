"""Batch and streaming sinks: Spark's Kafka input columns, idempotent or exactly-once.

Input columns are Spark's (KafkaWriter.validateQuery): value (string or binary, required),
key (string or binary), topic (string; the `topic` option, when given, wins over the column,
as in Spark 3+), partition (int; absent or null lets the client's partitioner choose) and
headers (array<struct<key: string, value: binary>>).

The default sink is idempotent (enable.idempotence, acks=all): a retried send inside one task
never duplicates a record, but a retried *task* writes its records again, which is the
at-least-once guarantee of Spark's own connector. `exactlyOnce=true` writes each task's
records in one Kafka transaction whose transactional id is derived from the query (or job)
id and the task's partition id; the same transaction commits, as a consumer-group offset of a
marker group, the micro-batch id it wrote. A retried task (or the re-run of a micro-batch
after a restart) first fences earlier attempts (InitProducerId aborts their open
transaction), then reads the marker with read_committed: if its batch is already committed it
writes nothing. Readers with isolation.level=read_committed thus see every record once.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from minikafka_spark.columns import HEADER_TYPE
from minikafka_spark.options import OptionError, SinkOptions

_TXN_TIMEOUT_S = 60.0
# One record to send: topic, key, value, partition (None: the partitioner's choice), headers.
OutRecord = tuple[
    str, bytes | None, bytes | None, int | None, list[tuple[str, str | bytes | None]] | None
]
# Spark's local properties naming the running micro-batch and query (MicroBatchExecution
# .BATCH_ID_KEY, StreamExecution.QUERY_ID_KEY); the Python worker sees them in TaskContext.
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"


def _loose(data_type: DataType) -> DataType:
    """The type as DataTypeUtils.sameType compares it: nullability left out (every field and
    element nullable) and struct field names in lower case (Spark's analysis is
    case-insensitive by default). So `F.array(F.struct(F.lit("h1").alias("key"), ...))`,
    whose fields are not nullable, is a headers column as it is for Spark's connector."""
    if isinstance(data_type, ArrayType):
        return ArrayType(_loose(data_type.elementType), True)
    if isinstance(data_type, StructType):
        return StructType(
            [StructField(f.name.lower(), _loose(f.dataType), True) for f in data_type.fields]
        )
    return data_type


def validate_input_schema(schema: StructType, options: SinkOptions) -> None:
    """KafkaWriter.validateQuery's checks, with its messages."""
    fields = {f.name.lower(): f.dataType for f in schema.fields}

    def check(name: str, allowed: tuple[DataType, ...], wanted: str) -> None:
        data_type = fields.get(name)
        if data_type is not None and _loose(data_type) not in [_loose(a) for a in allowed]:
            raise OptionError(f"{name} attribute type must be a {wanted}")

    if options.topic is None and "topic" not in fields:
        raise OptionError(
            "topic option required when no 'topic' attribute is present. Use the topic option "
            "for setting a topic."
        )
    check("topic", (StringType(),), "StringType")
    if "value" not in fields:
        raise OptionError("Required attribute 'value' not found")
    check("value", (StringType(), BinaryType()), "StringType or BinaryType")
    check("key", (StringType(), BinaryType()), "StringType or BinaryType")
    check("partition", (IntegerType(),), "IntegerType")
    check(
        "headers",
        (ArrayType(HEADER_TYPE),),
        "ArrayType(StructType(StructField(key,StringType),StructField(value,BinaryType)))",
    )


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    records: int
    skipped_as_committed: bool = False


@dataclass
class _Delivery:
    """The first delivery failure, raised in the task as Spark's KafkaWriteTask.checkForErrors
    does."""

    error: KafkaError | None = None
    delivered: int = 0
    errors: list[KafkaError] = field(default_factory=list)

    def __call__(self, error: KafkaError | None, _message: object) -> None:
        if error is not None:
            if self.error is None:
                self.error = error
        else:
            self.delivered += 1

    def check(self) -> None:
        if self.error is not None:
            raise KafkaException(self.error)


def _bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)  # type: ignore[call-overload,no-any-return]


def _rows(batches: Iterator[pa.RecordBatch], topic_option: str | None) -> Iterator[OutRecord]:
    for batch in batches:
        columns = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
        count = batch.num_rows
        values = columns["value"].to_pylist()
        keys = columns["key"].to_pylist() if "key" in columns else [None] * count
        topics = [topic_option] * count if topic_option else columns["topic"].to_pylist()
        partitions = columns["partition"].to_pylist() if "partition" in columns else [None] * count
        headers = columns["headers"].to_pylist() if "headers" in columns else [None] * count
        for i in range(count):
            topic = topics[i]
            if topic is None:
                # KafkaWriteTask: "null topic present in the data".
                raise ValueError(
                    "null topic present in the data. Use the topic option for setting a topic."
                )
            row_headers = headers[i]
            yield (
                topic,
                _bytes(keys[i]),
                _bytes(values[i]),
                partitions[i],
                # By position: the struct's field names matched case-insensitively.
                [tuple(h.values()) for h in row_headers] if row_headers else None,
            )


def _send_all(
    producer: Producer,
    rows: Iterator[OutRecord],
    delivery: _Delivery,
) -> int:
    sent = 0
    for topic, key, value, partition, headers in rows:
        while True:
            try:
                if partition is None:
                    producer.produce(topic, value, key, headers=headers, on_delivery=delivery)
                else:
                    producer.produce(
                        topic, value, key, partition, headers=headers, on_delivery=delivery
                    )
                break
            except BufferError:
                # The client's queue is full: let it send, then try again.
                producer.poll(0.1)
        sent += 1
        if sent % 1000 == 0:
            producer.poll(0)
            delivery.check()
    return sent


def _send_or_flush_and_fail(
    producer: Producer, rows: Iterator[OutRecord], delivery: _Delivery
) -> int:
    """Sends every row; when a row cannot be sent, the ones handed to the client before it are
    still flushed before the task fails, as Spark's KafkaDataWriter.close flushes its producer
    whatever happened (so a failed task's sent records are in Kafka: in the log for the
    idempotent sink, in the open transaction its retry aborts for the exactly-once sink)."""
    try:
        return _send_all(producer, rows, delivery)
    except BaseException:
        producer.flush(_TXN_TIMEOUT_S)
        raise


def write_idempotent(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
    producer = Producer(options.producer_config())
    delivery = _Delivery()
    sent = _send_or_flush_and_fail(producer, _rows(batches, options.topic), delivery)
    remaining = producer.flush(_TXN_TIMEOUT_S)
    delivery.check()
    if remaining:
        raise TimeoutError(f"{remaining} records were not acknowledged in {_TXN_TIMEOUT_S} s")
    return KafkaCommitMessage(sent)


def write_exactly_once(
    options: SinkOptions, batches: Iterator[pa.RecordBatch], write_id: str, batch_id: int
) -> KafkaCommitMessage:
    context = TaskContext.get()
    partition_id = context.partitionId() if context is not None else 0
    transactional_id = f"{options.transactional_id_prefix}-{write_id}-{partition_id}"
    rows = _rows(batches, options.topic)
    first = next(rows, None)
    if first is None:
        return KafkaCommitMessage(0)
    config = options.producer_config()
    config["transactional.id"] = transactional_id
    # librdkafka's 60 s default would let the coordinator abort a long task's transaction;
    # 5 minutes bounds how long a dead task's open transaction holds read_committed readers
    # back (the retry's InitProducerId usually ends it much sooner).
    config.setdefault("transaction.timeout.ms", 300_000)
    producer = Producer(config)
    # Fences every earlier attempt of this task and aborts its open transaction
    # (InitProducerId with a transactional id, KIP-98).
    producer.init_transactions(_TXN_TIMEOUT_S)
    # Partition 0 of the `topic` option's topic, else of the first record's: a retry of the
    # same (deterministic) input finds the same marker.
    marker = TopicPartition(first[0], 0)
    marker_consumer = Consumer(
        {
            "bootstrap.servers": options.bootstrap_servers,
            "group.id": transactional_id,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            **{
                k: v
                for k, v in options.client_params.items()
                if k.startswith(("security.", "sasl.", "ssl."))
            },
        }
    )
    try:
        committed = marker_consumer.committed([marker], timeout=_TXN_TIMEOUT_S)[0].offset
        if committed is not None and committed > batch_id:
            # An earlier attempt committed this batch: writing again would duplicate it.
            for _ in rows:
                pass
            return KafkaCommitMessage(0, skipped_as_committed=True)
        delivery = _Delivery()
        producer.begin_transaction()

        sent = _send_or_flush_and_fail(producer, itertools.chain([first], rows), delivery)
        producer.flush(_TXN_TIMEOUT_S)
        delivery.check()
        producer.send_offsets_to_transaction(
            [TopicPartition(marker.topic, 0, batch_id + 1)],
            marker_consumer.consumer_group_metadata(),
            _TXN_TIMEOUT_S,
        )
        producer.commit_transaction(_TXN_TIMEOUT_S)
        return KafkaCommitMessage(sent)
    finally:
        marker_consumer.close()


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        # One id for every task (and retry) of this write: pickled with the writer.
        self.write_id = str(uuid.uuid4())

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        if self.options.exactly_once:
            return write_exactly_once(self.options, iterator, self.write_id, 0)
        return write_idempotent(self.options, iterator)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        if not self.options.exactly_once:
            return write_idempotent(self.options, iterator)
        context = TaskContext.get()
        query_id = context.getLocalProperty(QUERY_ID_PROPERTY) if context else None
        batch_id = context.getLocalProperty(BATCH_ID_PROPERTY) if context else None
        if query_id is None or batch_id is None:
            raise RuntimeError(
                "exactlyOnce=true needs the streaming query id and batch id, which Spark did "
                "not pass to this task"
            )
        return write_exactly_once(self.options, iterator, query_id, int(batch_id))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # Each task committed its own transaction; the markers make a re-run skip them.
        return None

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # A failed task's open transaction is aborted by its retry's InitProducerId, or by
        # the coordinator after transaction.timeout.ms.
        return None
