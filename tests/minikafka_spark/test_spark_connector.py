"""Spark's own Kafka connector (spark-sql-kafka-0-10, format("kafka")) against a real broker:
batch and streaming reads and writes checked against what the broker stored and what a plain
consumer reads, checkpoint restarts, admission control, timestamps, read_committed and
failOnDataLoss after DeleteRecords."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.minikafka_spark.conftest import CONNECTOR_JARS
from tests.minikafka_spark.kafka_helpers import (
    batch_read,
    create_topic,
    delete_records_before,
    stored_records,
)
from tests.minikafka_spark.test_spark_source import (
    broker_rows,
    produce,
    produce_transactions,
    source_rows,
)
from tests.support.broker_process import BrokerProcess
from tests.support.real_clients import Sent, consume_confluent, produce_confluent

QUERY_TIMEOUT_S = 300


@pytest.fixture(autouse=True)
def connector(spark: Any) -> Iterator[None]:
    names = {jar.name.rsplit("-", 1)[0] for jar in CONNECTOR_JARS}
    assert "spark-sql-kafka-0-10_2.13" in names, "run `make spark`: it resolves the connector"
    yield
    # A failed test must not leave a streaming query running into the next one.
    for query in spark.streams.active:
        query.stop()


def kafka_reader(spark: Any, broker: BrokerProcess, topic: str, **options: str) -> Any:
    return batch_read(spark, "kafka", broker.bootstrap, topic, **options)


def test_batch_read_with_headers_equals_what_the_broker_stored(
    spark: Any, broker: BrokerProcess
) -> None:
    create_topic(broker.bootstrap, "conn-batch", 3)
    produce(broker, "conn-batch", 3000, 3)
    frame = kafka_reader(spark, broker, "conn-batch", includeHeaders="true")
    got = sorted(source_rows(frame), key=lambda r: (r[1], r[2]))
    expected = sorted(broker_rows(broker, "conn-batch", 3), key=lambda r: (r[1], r[2]))
    assert len(expected) == 3000
    assert got == expected


def test_batch_write_with_a_headers_column_is_stored_and_read_by_a_plain_consumer(
    spark: Any, broker: BrokerProcess
) -> None:
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        StringType,
        StructField,
        StructType,
    )

    topic = "conn-write"
    create_topic(broker.bootstrap, topic, 2)
    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    schema = StructType(
        [
            StructField("key", StringType()),
            StructField("value", BinaryType()),
            StructField("partition", IntegerType()),
            StructField("headers", ArrayType(header)),
        ]
    )
    rows = [
        (
            None if i % 7 == 0 else f"k-{i}",
            None if i % 11 == 0 else b"v-%d" % i,
            i % 2,
            [("n", b"%d" % i), ("dup", b"x"), ("dup", None)] if i % 3 else [],
        )
        for i in range(1000)
    ]
    (
        spark.createDataFrame(rows, schema)
        .repartition(2)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", topic)
        .save()
    )

    want = Counter((p, None if k is None else k.encode(), v, tuple(h)) for k, v, p, h in rows)
    stored = stored_records(broker.data_dir, topic, 2)
    assert Counter((r.partition, r.key, r.value, r.headers) for r in stored) == want
    # kafka-clients' producer is idempotent by default: a producer id on every batch.
    assert all(r.producer_id >= 0 for r in stored)
    read = consume_confluent(broker.bootstrap, topic, 2, len(rows), 60)
    assert Counter((g.partition, g.key, g.value, g.headers) for g in read) == want


def run_pipeline(
    spark: Any, broker: BrokerProcess, source: str, sink: str, checkpoint: Path, **options: str
) -> list[Any]:
    """source -> sink, both format("kafka"), with trigger(availableNow=True)."""
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
    )
    for key, value in options.items():
        stream = stream.option(key, value)
    query = (
        stream.load()
        .selectExpr("key", "value", "headers")
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "availableNow query did not finish"
    finally:
        query.stop()
    return list(query.recentProgress)


def test_streaming_pipeline_restarted_from_its_checkpoint_writes_each_record_once(
    spark: Any, broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "conn-in", 3)
    create_topic(broker.bootstrap, "conn-out", 1)
    produce(broker, "conn-in", 900, 3)
    checkpoint = tmp_path / "checkpoint"
    options = {"maxOffsetsPerTrigger": "300", "includeHeaders": "true"}
    first = run_pipeline(spark, broker, "conn-in", "conn-out", checkpoint, **options)
    # maxOffsetsPerTrigger: 900 records in batches of at most 300.
    sizes = [p["numInputRows"] for p in first if p["numInputRows"]]
    assert sum(sizes) == 900 and max(sizes) <= 300 and len(sizes) >= 3

    produce(broker, "conn-in", 450, 3, first=900)
    second = run_pipeline(spark, broker, "conn-in", "conn-out", checkpoint, **options)
    assert sum(p["numInputRows"] for p in second) == 450

    source = stored_records(broker.data_dir, "conn-in", 3)
    want = Counter((r.key, r.value, r.headers) for r in source)
    assert len(source) == 1350
    sink = stored_records(broker.data_dir, "conn-out", 1)
    assert Counter((r.key, r.value, r.headers) for r in sink) == want
    read = consume_confluent(broker.bootstrap, "conn-out", 1, len(source), 60)
    assert Counter((g.key, g.value, g.headers) for g in read) == want


def test_starting_and_ending_offsets_by_timestamp_select_by_record_time(
    spark: Any, broker: BrokerProcess
) -> None:
    topic = "conn-time"
    create_topic(broker.bootstrap, topic, 2)
    base = int(time.time() * 1000) - 600_000
    # Record i of each partition is stamped base + i s: ListOffsets by timestamp finds i.
    records = [
        Sent(p, b"k-%d" % i, b"%d-%d" % (p, i), (), base + i * 1000)
        for i in range(50)
        for p in (0, 1)
    ]
    produce_confluent(broker.bootstrap, topic, "none", records)
    frame = kafka_reader(
        spark,
        broker,
        topic,
        # Partition 0 from record 10 (an exact stamp), partition 1 from 21 (between stamps).
        startingOffsetsByTimestamp=f'{{"{topic}":{{"0":{base + 10_000},"1":{base + 20_500}}}}}',
        endingOffsetsByTimestamp=f'{{"{topic}":{{"0":{base + 40_000},"1":{base + 45_000}}}}}',
    )
    got = {(r["partition"], r["offset"]) for r in frame.collect()}
    assert got == {(0, i) for i in range(10, 40)} | {(1, i) for i in range(21, 45)}


def test_min_partitions_splits_offset_ranges_and_reads_each_record_once(
    spark: Any, broker: BrokerProcess
) -> None:
    topic = "conn-split"
    create_topic(broker.bootstrap, topic, 2)
    produce(broker, topic, 2000, 2)
    frame = kafka_reader(spark, broker, topic, minPartitions="6")
    assert frame.rdd.getNumPartitions() >= 6
    counts = Counter((r["partition"], r["offset"]) for r in frame.collect())
    assert max(counts.values()) == 1
    assert set(counts) == {
        (r.partition, r.offset) for r in stored_records(broker.data_dir, topic, 2)
    }


def test_read_committed_skips_aborted_records_in_batch_and_stream(
    spark: Any, broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = "conn-txn"
    create_topic(broker.bootstrap, topic, 1)
    produce_transactions(broker.bootstrap, topic)
    committed = [b"c-%d" % i for i in range(10)] + [b"d-%d" % i for i in range(10)]
    aborted = [b"a-%d" % i for i in range(10)]
    opened = [b"o-%d" % i for i in range(5)]  # written in a transaction left open, then aborted

    def batch(isolation: str) -> list[bytes]:
        frame = kafka_reader(spark, broker, topic, **{"kafka.isolation.level": isolation})
        return [bytes(r["value"]) for r in frame.orderBy("offset").collect()]

    assert batch("read_committed") == committed
    assert sorted(batch("read_uncommitted")) == sorted(committed + aborted)

    # A transaction still open: read_committed ends at the last stable offset (Spark asks
    # ListOffsets for latest with the isolation level), before the open records.
    from confluent_kafka import Producer

    open_tx = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "conn-open"})
    open_tx.init_transactions(30)
    open_tx.begin_transaction()
    for value in opened:
        open_tx.produce(topic, value, partition=0)
    open_tx.flush(30)
    try:
        assert batch("read_committed") == committed
        assert sorted(batch("read_uncommitted")) == sorted(committed + aborted + opened)
    finally:
        open_tx.abort_transaction(30)

    out = tmp_path / "out"
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
        .selectExpr("offset", "value")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S)
    finally:
        query.stop()
    streamed = [bytes(r["value"]) for r in spark.read.parquet(str(out)).orderBy("offset").collect()]
    assert streamed == committed
    # The broker stored every record, transactional, and the markers that tell them apart.
    stored = stored_records(broker.data_dir, topic, 1)
    assert sorted(r.value for r in stored) == sorted(committed + aborted + opened)
    assert all(r.transactional for r in stored)


def run_to_parquet(
    spark: Any, broker: BrokerProcess, topic: str, out: Path, checkpoint: Path, **options: str
) -> None:
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for key, value in options.items():
        stream = stream.option(key, value)
    query = (
        stream.load()
        .selectExpr("offset", "value")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "availableNow query did not finish"
    finally:
        query.stop()


def test_stream_after_delete_records_follows_fail_on_data_loss(
    spark: Any, broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = "conn-loss"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker, topic, 100, 1)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    run_to_parquet(spark, broker, topic, out, checkpoint)
    produce(broker, topic, 100, 1, first=100)
    assert delete_records_before(broker.bootstrap, topic, 0, 150) == 150

    # The checkpoint says 100; the log now starts at 150: Spark's data loss error.
    with pytest.raises(Exception, match="Some data may have been lost"):
        run_to_parquet(spark, broker, topic, out, checkpoint)
    # failOnDataLoss=false: the lost offsets are skipped, the rest read once.
    run_to_parquet(spark, broker, topic, out, checkpoint, failOnDataLoss="false")
    offsets = sorted(r["offset"] for r in spark.read.parquet(str(out)).collect())
    assert offsets == list(range(100)) + list(range(150, 200))
