"""The Spark source against a real broker: every column as the broker stored it, offsets
checkpointed across restarts, Spark's failOnDataLoss rules after DeleteRecords."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.minikafka_spark.kafka_helpers import (
    create_topic,
    delete_records_before,
    stored_records,
)
from tests.support.broker_process import BrokerProcess
from tests.support.real_clients import make_records, produce_confluent


def produce(broker: BrokerProcess, topic: str, n: int, partitions: int, first: int = 0) -> None:
    records = make_records(
        first + n, partitions, int(time.time() * 1000) - 60_000, null_header_values=True
    )[first:]
    produce_confluent(broker.bootstrap, topic, "none", records)


def source_rows(frame: Any) -> list[tuple[Any, ...]]:
    """Spark rows -> (topic, partition, offset, key, value, headers, timestamp ms, type)."""
    rows = []
    for row in frame.collect():
        # As Spark's connector: a record without headers has null headers, not an empty array.
        assert row["headers"] is None or len(row["headers"]) > 0
        headers = tuple(
            (h["key"], None if h["value"] is None else bytes(h["value"]))
            for h in row["headers"] or ()
        )
        rows.append(
            (
                row["topic"],
                row["partition"],
                row["offset"],
                None if row["key"] is None else bytes(row["key"]),
                None if row["value"] is None else bytes(row["value"]),
                headers,
                round(row["timestamp"].timestamp() * 1000),
                row["timestampType"],
            )
        )
    return rows


def broker_rows(broker: BrokerProcess, topic: str, partitions: int) -> list[tuple[Any, ...]]:
    return [
        (r.topic, r.partition, r.offset, r.key, r.value, r.headers, r.timestamp, r.timestamp_type)
        for r in stored_records(broker.data_dir, topic, partitions)
    ]


def test_batch_read_of_100000_records_equals_what_the_broker_stored(
    spark: Any, broker: BrokerProcess
) -> None:
    create_topic(broker.bootstrap, "batch-100k", 3)
    produce(broker, "batch-100k", 100_000, 3)
    frame = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "batch-100k")
        .option("includeHeaders", "true")
        .load()
    )
    assert frame.rdd.getNumPartitions() == 3  # one task per topic-partition
    got = source_rows(frame)
    expected = broker_rows(broker, "batch-100k", 3)
    assert len(expected) == 100_000
    assert sorted(got, key=lambda r: (r[1], r[2])) == sorted(expected, key=lambda r: (r[1], r[2]))


def test_batch_offsets_json_and_timestamps_select_spark_s_range(
    spark: Any, broker: BrokerProcess
) -> None:
    topic = "ranges"
    create_topic(broker.bootstrap, topic, 2)
    produce(broker, topic, 200, 2)  # 100 per partition
    stored = stored_records(broker.data_dir, topic, 2)
    reader = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("assign", f'{{"{topic}":[0,1]}}')
    )
    by_json = reader.option("startingOffsets", f'{{"{topic}":{{"0":10,"1":-2}}}}').option(
        "endingOffsets", f'{{"{topic}":{{"0":20,"1":-1}}}}'
    )
    got = {(r["partition"], r["offset"]) for r in by_json.load().collect()}
    assert got == {(0, o) for o in range(10, 20)} | {(1, o) for o in range(100)}

    # The first record at or after a timestamp starts the range (ListOffsets by timestamp).
    p0 = sorted((r for r in stored if r.partition == 0), key=lambda r: r.offset)
    cut = sorted(r.timestamp for r in p0)[50]
    first_at_or_after = min(r.offset for r in p0 if r.timestamp >= cut)
    by_time = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("assign", f'{{"{topic}":[0]}}')
        .option("startingOffsetsByTimestamp", f'{{"{topic}":{{"0":{cut}}}}}')
        .load()
    )
    offsets = sorted(r["offset"] for r in by_time.collect())
    assert offsets == list(range(first_at_or_after, 100))


def run_available_now(
    spark: Any, broker: BrokerProcess, topic: str, out: Path, checkpoint: Path, **options: str
) -> list[Any]:
    stream = (
        spark.readStream.format("minikafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for key, value in options.items():
        stream = stream.option(key, value)
    query = (
        stream.load()
        .selectExpr("partition", "offset", "value")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))
    return list(query.recentProgress)


def test_available_now_query_stopped_and_restarted_reads_each_record_once(
    spark: Any, broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "restart", 3)
    produce(broker, "restart", 3000, 3)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    first = run_available_now(
        spark, broker, "restart", out, checkpoint, maxOffsetsPerTrigger="1000"
    )
    # Admission control: 3000 records in batches of at most 1000.
    sizes = [p["numInputRows"] for p in first if p["numInputRows"]]
    assert sum(sizes) == 3000 and max(sizes) <= 1000 and len(sizes) >= 3

    produce(broker, "restart", 1500, 3, first=3000)
    run_available_now(spark, broker, "restart", out, checkpoint, maxOffsetsPerTrigger="1000")

    rows = spark.read.parquet(str(out)).collect()
    counts = Counter((r["partition"], r["offset"]) for r in rows)
    stored = {(r.partition, r.offset) for r in stored_records(broker.data_dir, "restart", 3)}
    assert len(stored) == 4500
    assert set(counts) == stored
    assert max(counts.values()) == 1


def test_stream_after_delete_records_fails_with_fail_on_data_loss_true(
    spark: Any, broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "loss-stream", 1)
    produce(broker, "loss-stream", 100, 1)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    run_available_now(spark, broker, "loss-stream", out, checkpoint)
    produce(broker, "loss-stream", 100, 1, first=100)
    assert delete_records_before(broker.bootstrap, "loss-stream", 0, 150) == 150

    # The checkpoint says 100; the log now starts at 150.
    with pytest.raises(Exception, match=r"Cannot fetch records in \[100, 200\)"):
        run_available_now(spark, broker, "loss-stream", out, checkpoint)
    # failOnDataLoss=false: the lost offsets are skipped, the rest read once.
    run_available_now(spark, broker, "loss-stream", out, checkpoint, failOnDataLoss="false")
    offsets = sorted(r["offset"] for r in spark.read.parquet(str(out)).collect())
    assert offsets == list(range(100)) + list(range(150, 200))


def test_batch_read_below_the_log_start_follows_fail_on_data_loss(
    spark: Any, broker: BrokerProcess
) -> None:
    topic = "loss-batch"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker, topic, 100, 1)
    assert delete_records_before(broker.bootstrap, topic, 0, 40) == 40

    def read(fail_on_data_loss: str) -> list[int]:
        frame = (
            spark.read.format("minikafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", f'{{"{topic}":{{"0":10}}}}')
            .option("failOnDataLoss", fail_on_data_loss)
            .load()
        )
        return sorted(r["offset"] for r in frame.collect())

    with pytest.raises(Exception, match=r"Cannot fetch records in \[10, 100\)"):
        read("true")
    assert read("false") == list(range(40, 100))


def test_source_refuses_the_options_spark_s_connector_refuses(
    spark: Any, broker: BrokerProcess
) -> None:
    base = spark.read.format("minikafka").option("kafka.bootstrap.servers", broker.bootstrap)
    with pytest.raises(Exception, match="subscribe, subscribePattern, assign"):
        base.load().collect()
    with pytest.raises(Exception, match="starting offset can't be latest for batch queries"):
        base.option("subscribe", "t").option("startingOffsets", "latest").load().collect()
    with pytest.raises(Exception, match=r"Kafka option 'auto\.offset\.reset' is not supported"):
        base.option("subscribe", "t").option("kafka.auto.offset.reset", "earliest").load().collect()


def test_include_producer_metadata_gives_each_record_its_producer_id_epoch_and_sequence(
    spark: Any, broker: BrokerProcess
) -> None:
    create_topic(broker.bootstrap, "audited", 2)
    produce(broker, "audited", 3000, 2)
    produce(broker, "audited", 1000, 2, first=3000)  # a second producer session
    frame = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "audited")
        .option("includeHeaders", "true")
        .option("includeProducerMetadata", "true")
        .load()
    )
    got = {
        (r["partition"], r["offset"]): (r["producerId"], r["producerEpoch"], r["sequence"])
        for r in frame.collect()
    }
    stored = stored_records(broker.data_dir, "audited", 2)
    assert got == {
        (r.partition, r.offset): (r.producer_id, r.producer_epoch, r.sequence) for r in stored
    }
    assert len({pid for pid, _, _ in got.values()}) == 2
    # The other columns are the same as without producer metadata.
    assert sorted(source_rows(frame), key=lambda r: (r[1], r[2])) == sorted(
        broker_rows(broker, "audited", 2), key=lambda r: (r[1], r[2])
    )


def test_source_schema_is_spark_s_kafka_schema(spark: Any, broker: BrokerProcess) -> None:
    # KafkaRecordToRowConverter.kafkaSchema (with headers: includeHeaders=true).
    spark_s = (
        "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, "
        "timestamp TIMESTAMP, timestampType INT, "
        "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
    )
    from pyspark.sql.types import StructType

    expected = StructType.fromDDL(spark_s)
    frame = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "any")
        .option("includeHeaders", "true")
        .load()
    )
    assert [(f.name, f.dataType) for f in frame.schema.fields] == [
        (f.name, f.dataType) for f in expected.fields
    ]


def test_batch_round_trip_of_100000_records_through_sink_and_source(
    spark: Any, broker: BrokerProcess
) -> None:
    from pyspark.sql.types import StructType

    create_topic(broker.bootstrap, "round-trip", 3)
    rows = [
        (
            None if i % 13 == 0 else b"k-%d" % i,
            None if i % 17 == 0 else b"v-%d-" % i + b"x" * (i % 50),
            "round-trip",
            i % 3,
            [("h", b"%d" % i), ("null", None)] if i % 2 else [],
        )
        for i in range(100_000)
    ]
    schema = StructType.fromDDL(
        "key BINARY, value BINARY, topic STRING, partition INT, "
        "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
    )
    spark.createDataFrame(rows, schema).write.mode("append").format("minikafka").option(
        "kafka.bootstrap.servers", broker.bootstrap
    ).save()
    frame = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "round-trip")
        .option("includeHeaders", "true")
        .load()
    )
    got = source_rows(frame)
    # What the source read is exactly what the broker stored ...
    assert sorted(got, key=lambda r: (r[1], r[2])) == sorted(
        broker_rows(broker, "round-trip", 3), key=lambda r: (r[1], r[2])
    )
    # ... and what the sink was given, once each.
    assert Counter((r[0], r[1], r[3], r[4], r[5]) for r in got) == Counter(
        (t, p, k, v, tuple(h)) for k, v, t, p, h in rows
    )


def produce_transactions(bootstrap: str, topic: str) -> None:
    """Committed c-0..c-9, aborted a-0..a-9, committed d-0..d-9, on one partition."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    for prefix, commit in ((b"c", True), (b"a", False), (b"d", True)):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic, b"%s-%d" % (prefix, i), partition=0)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


@pytest.mark.parametrize("producer_metadata", ["false", "true"])
def test_read_committed_source_skips_aborted_records_and_markers(
    spark: Any, broker: BrokerProcess, producer_metadata: str
) -> None:
    topic = f"txn-read-{producer_metadata}"
    create_topic(broker.bootstrap, topic, 1)
    produce_transactions(broker.bootstrap, topic)

    def values(isolation: str) -> list[bytes]:
        frame = (
            spark.read.format("minikafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic)
            .option("includeProducerMetadata", producer_metadata)
            .option("kafka.isolation.level", isolation)
            .load()
        )
        return [bytes(r["value"]) for r in frame.orderBy("offset").collect()]

    committed = [b"c-%d" % i for i in range(10)] + [b"d-%d" % i for i in range(10)]
    aborted = [b"a-%d" % i for i in range(10)]
    assert values("read_committed") == committed
    assert sorted(values("read_uncommitted")) == sorted(committed + aborted)
    # The broker stored all 30 records and the markers that tell them apart.
    stored = stored_records(broker.data_dir, topic, 1)
    assert sorted(r.value for r in stored) == sorted(committed + aborted)
    assert all(r.transactional for r in stored)
