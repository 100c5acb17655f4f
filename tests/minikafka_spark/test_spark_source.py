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
        headers = tuple(
            (h["key"], None if h["value"] is None else bytes(h["value"])) for h in row["headers"]
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
