"""The Spark sink against a real broker: Spark's input columns as stored, an idempotent
producer by default, and a pipeline that keeps every record through a broker SIGKILL and a
failed Spark task (exactly once with exactlyOnce=true, at least once without)."""

from __future__ import annotations

import socket
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.minikafka_spark.kafka_helpers import create_topic, stored_records
from tests.support.broker_process import BrokerProcess
from tests.support.produce import stored


def test_batch_write_stores_spark_s_columns_through_an_idempotent_producer(
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

    create_topic(broker.bootstrap, "sink-a", 2)
    create_topic(broker.bootstrap, "sink-b", 1)
    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    schema = StructType(
        [
            StructField("key", StringType()),
            StructField("value", BinaryType()),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("headers", ArrayType(header)),
        ]
    )
    rows = []
    for i in range(3000):
        headers = [("n", b"%d" % i), ("dup", b"x"), ("dup", None)] if i % 3 else []
        rows.append(
            (
                None if i % 7 == 0 else f"k-{i}",
                None if i % 11 == 0 else b"v-%d" % i,
                "sink-a" if i % 2 else "sink-b",
                (i // 2) % 2 if i % 2 else None,
                headers,
            )
        )
    spark.createDataFrame(rows, schema).repartition(3).write.mode("append").format(
        "minikafka"
    ).option("kafka.bootstrap.servers", broker.bootstrap).save()

    stored_a = stored_records(broker.data_dir, "sink-a", 2)
    stored_b = stored_records(broker.data_dir, "sink-b", 1)
    got = Counter(
        (r.topic, r.partition if r.topic == "sink-a" else None, r.key, r.value, r.headers)
        for r in stored_a + stored_b
    )
    want = Counter((t, p, None if k is None else k.encode(), v, tuple(h)) for k, v, t, p, h in rows)
    assert got == want
    # Idempotent: every batch carries a producer id and each producer's sequences on a
    # partition run 0, 1, 2, ... without a gap or a repeat.
    sequences: dict[tuple[str, int, int], list[int]] = defaultdict(list)
    for r in stored_a + stored_b:
        assert r.producer_id >= 0
        sequences[(r.topic, r.partition, r.producer_id)].append(r.sequence)
    for seqs in sequences.values():
        assert sorted(seqs) == list(range(len(seqs)))


def test_topic_option_wins_over_the_topic_column_as_in_spark(
    spark: Any, broker: BrokerProcess
) -> None:
    create_topic(broker.bootstrap, "sink-option", 1)
    frame = spark.createDataFrame([("elsewhere", "v1"), ("elsewhere", "v2")], ["topic", "value"])
    frame.write.mode("append").format("minikafka").option(
        "kafka.bootstrap.servers", broker.bootstrap
    ).option("topic", "sink-option").save()
    assert sorted(r.value for r in stored_records(broker.data_dir, "sink-option", 1)) == [
        b"v1",
        b"v2",
    ]
    assert not (broker.data_dir / "elsewhere-0").exists()


def test_sink_refuses_input_without_a_value_column(spark: Any, broker: BrokerProcess) -> None:
    frame = spark.createDataFrame([("t", "k")], ["topic", "key"])
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        frame.write.mode("append").format("minikafka").option(
            "kafka.bootstrap.servers", broker.bootstrap
        ).save()


# -- a pipeline through a broker SIGKILL and a failed task ------------------------------------

INPUT_RECORDS = 12_000
FAIL_ON_VALUE = "in-8851"  # offset 2950 of partition 1: late in its micro-batch task


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_broker(data: Path, port: int) -> BrokerProcess:
    return BrokerProcess(data, {"listeners": f"PLAINTEXT://127.0.0.1:{port}"}).start()


def fail_first_attempt_at(value: str, witness: Path) -> Any:
    """A transformation that makes the first attempt of one task fail in the sink, mid-batch:
    on that attempt the record `value` becomes larger than the client's message.max.bytes,
    which the producer refuses when it is handed the record, after the task's earlier
    records. The sink flushes those before the task fails (as Spark's KafkaDataWriter.close),
    so Kafka holds them when Spark retries the task. `witness` says the failure happened."""
    from pyspark import TaskContext
    from pyspark.sql.functions import udf

    def transform(v: str) -> str:
        context = TaskContext.get()
        if v == value and context is not None and context.attemptNumber() == 0:
            witness.touch()
            return "x" * 2_000_000
        return v.replace("in-", "out-")

    return udf(transform, useArrow=False)


def read_committed(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "pipeline-check",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    values: list[bytes] = []
    at_end: set[int] = set()
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    deadline = time.monotonic() + 60
    try:
        while len(at_end) < partitions and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=1000, timeout=0.5):
                if m.error() is not None:
                    at_end.add(m.partition() or 0)
                    continue
                value = m.value()
                assert value is not None
                values.append(value)
    finally:
        consumer.close()
    assert len(at_end) == partitions, f"read {len(values)} of at least {expected}"
    return values


def run_pipeline(
    spark: Any, tmp_path: Path, exactly_once: bool
) -> tuple[BrokerProcess, list[bytes]]:
    from pyspark.sql.functions import col

    from tests.support.real_clients import Sent, produce_confluent

    data, port = tmp_path / "data", free_port()
    broker = start_broker(data, port)
    create_topic(broker.bootstrap, "pipe-in", 3)
    create_topic(broker.bootstrap, "pipe-out", 3)
    produce_confluent(
        broker.bootstrap,
        "pipe-in",
        "none",
        [
            Sent(i % 3, b"k%d" % i, b"in-%d" % i, (), int(time.time() * 1000))
            for i in range(INPUT_RECORDS)
        ],
    )
    checkpoint = tmp_path / "checkpoint"
    witness = tmp_path / "failed-once"

    def start_query() -> Any:
        source = (
            spark.readStream.format("minikafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", "pipe-in")
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "3000")
            .load()
        )
        fail = fail_first_attempt_at(FAIL_ON_VALUE, witness)
        out = source.select(col("key"), fail(col("value").cast("string")).alias("value"))
        return (
            out.writeStream.format("minikafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("topic", "pipe-out")
            .option("exactlyOnce", str(exactly_once).lower())
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )

    query = start_query()
    killed = False
    try:
        deadline = time.monotonic() + 300
        while query.isActive and time.monotonic() < deadline:
            if not killed and any(p["numInputRows"] for p in query.recentProgress):
                # Mid-run: a micro-batch is done, others are to come.
                broker.kill()
                broker = start_broker(data, port)
                killed = True
            time.sleep(0.1)  # polling the query's progress, not synchronising
        assert killed, "the query ended before the broker could be killed"
        # A micro-batch the outage made fail is re-run from the checkpoint, as an operator's
        # restart would.
        for _ in range(3):
            query.awaitTermination(300)
            if query.exception() is None:
                break
            query = start_query()
        else:
            raise AssertionError(f"pipeline kept failing: {query.exception()}")
        assert witness.exists(), "the injected task failure did not happen"
        return broker, read_committed(broker.bootstrap, "pipe-out", 3, INPUT_RECORDS)
    except BaseException:
        if query.isActive:
            query.stop()
        broker.kill()
        raise


EXPECTED = {b"out-%d" % i for i in range(INPUT_RECORDS)}


def test_idempotent_pipeline_loses_nothing_through_broker_sigkill_and_task_failure(
    spark: Any, tmp_path: Path
) -> None:
    broker, values = run_pipeline(spark, tmp_path, exactly_once=False)
    try:
        # At least once, as Spark's own connector: the retried task wrote again the records
        # its failed attempt had sent.
        assert set(values) == EXPECTED
        assert max(Counter(values).values()) == 2
        stored_values = Counter(r.value for r in stored_records(broker.data_dir, "pipe-out", 3))
        assert stored_values == Counter(values)
    finally:
        broker.stop()


def test_exactly_once_pipeline_writes_each_record_once_through_sigkill_and_task_failure(
    spark: Any, tmp_path: Path
) -> None:
    broker, values = run_pipeline(spark, tmp_path, exactly_once=True)
    try:
        counts = Counter(values)
        assert set(counts) == EXPECTED
        assert max(counts.values()) == 1
        # The failed attempt's records are in the log, in a transaction its retry aborted.
        assert len(stored_records(broker.data_dir, "pipe-out", 3)) > INPUT_RECORDS
        # Everything in the output topic was written in transactions.
        for partition in range(3):
            for header, _ in stored(broker.data_dir, "pipe-out", partition):
                assert header.is_transactional
    finally:
        broker.stop()
