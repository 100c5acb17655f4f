"""Where the data source behaves as Spark's own Kafka connector does, with real Spark against a
real broker: a read with nothing to read, the headers column Spark's functions build, save
modes, the subscription options, and minPartitions."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.minikafka_spark.kafka_helpers import batch_read, create_topic, stored_records
from tests.support.broker_process import BrokerProcess
from tests.support.produce import stored_values
from tests.support.real_clients import Sent, produce_confluent


def produce_values(broker: BrokerProcess, topic: str, partition: int, n: int) -> None:
    now = int(time.time() * 1000)
    records = [Sent(partition, b"k%d" % i, b"v%d-%d" % (partition, i), (), now) for i in range(n)]
    produce_confluent(broker.bootstrap, topic, "none", records)


def read(spark: Any, broker: BrokerProcess, topic: str, **options: str) -> Any:
    return batch_read(spark, "minikafka", broker.bootstrap, topic, **options)


def test_batch_read_with_nothing_to_read_returns_no_rows(spark: Any, broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "nothing", 2)
    assert stored_values(broker.data_dir, "nothing", 0) == []
    assert read(spark, broker, "nothing").collect() == []

    # Records, all older than startingTimestamp: strategy latest starts at the end.
    create_topic(broker.bootstrap, "all-older", 1)
    produce_values(broker, "all-older", 0, 5)
    assert len(stored_values(broker.data_dir, "all-older", 0)) == 5
    future = str(int(time.time() * 1000) + 3_600_000)
    frame = read(
        spark,
        broker,
        "all-older",
        startingTimestamp=future,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert frame.collect() == []
    assert frame.count() == 0


def test_sink_takes_the_headers_column_spark_s_functions_build(
    spark: Any, broker: BrokerProcess
) -> None:
    from pyspark.sql import functions as F

    create_topic(broker.bootstrap, "built-headers", 1)
    frame = spark.range(3).select(
        F.col("id").cast("string").alias("value"),
        # F.struct of literals: non-nullable key and value fields.
        F.array(
            F.struct(F.lit("h1").alias("key"), F.lit("x").cast("binary").alias("value")),
            F.struct(
                F.lit("h2").alias("key"),
                F.coalesce(F.col("id").cast("string").cast("binary"), F.lit(b"")).alias("value"),
            ),
        ).alias("headers"),
    )
    assert not frame.schema["headers"].dataType.elementType["key"].nullable
    frame.coalesce(1).write.mode("append").format("minikafka").option(
        "kafka.bootstrap.servers", broker.bootstrap
    ).option("topic", "built-headers").save()

    assert sorted(stored_values(broker.data_dir, "built-headers")) == [b"0", b"1", b"2"]
    stored = {r.value: r.headers for r in stored_records(broker.data_dir, "built-headers", 1)}
    assert stored == {b"%d" % i: (("h1", b"x"), ("h2", b"%d" % i)) for i in range(3)}
    back = read(spark, broker, "built-headers", includeHeaders="true").collect()
    assert {
        bytes(r["value"]): tuple((h["key"], bytes(h["value"])) for h in r["headers"]) for r in back
    } == stored


def test_save_modes_are_spark_s_overwrite_refused_append_taken(
    spark: Any, broker: BrokerProcess
) -> None:
    create_topic(broker.bootstrap, "modes", 1)
    frame = spark.createDataFrame([("a",), ("b",)], "value string")

    def writer(mode: str | None) -> Any:
        write = frame.write.format("minikafka")
        if mode is not None:
            write = write.mode(mode)
        return write.option("kafka.bootstrap.servers", broker.bootstrap).option("topic", "modes")

    # Spark's connector: "Save mode Overwrite not allowed for Kafka" (a topic is not
    # truncated); Ignore is refused too, by Spark itself for any Python data source.
    with pytest.raises(Exception, match="Save mode Overwrite not allowed for Kafka"):
        writer("overwrite").save()
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        writer("ignore").save()
    # The default mode, ErrorIfExists, Spark refuses for Python data sources before the
    # source is asked (its own connector takes it).
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        writer(None).save()
    assert stored_values(broker.data_dir, "modes") == []

    writer("append").save()
    assert sorted(stored_values(broker.data_dir, "modes")) == [b"a", b"b"]


def test_only_one_subscription_strategy_can_be_given(spark: Any, broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "one-strategy", 1)
    produce_values(broker, "one-strategy", 0, 3)
    both = read(spark, broker, "one-strategy", assign='{"one-strategy":[0]}')
    # KafkaSourceProvider.validateGeneralOptions's message, word for word.
    with pytest.raises(
        Exception,
        match=r"Only one of the following options can be specified for Kafka source: "
        r"subscribe, subscribepattern, assign\. See the docs for more details\.",
    ):
        both.collect()
    assert len(read(spark, broker, "one-strategy").collect()) == 3


def test_min_partitions_splits_large_ranges_as_spark_s_offset_range_calculator(
    spark: Any, broker: BrokerProcess
) -> None:
    from pyspark.sql import functions as F

    create_topic(broker.bootstrap, "skewed", 2)
    produce_values(broker, "skewed", 0, 300)
    produce_values(broker, "skewed", 1, 10)
    assert len(stored_values(broker.data_dir, "skewed", 0)) == 300
    assert len(stored_values(broker.data_dir, "skewed", 1)) == 10

    frame = read(spark, broker, "skewed", minPartitions="4").withColumn(
        "task", F.spark_partition_id()
    )
    tasks = {
        (r["partition"], r["first"], r["last"], r["rows"])
        for r in frame.groupBy("task", "partition")
        .agg(
            F.min("offset").alias("first"),
            F.max("offset").alias("last"),
            F.count("*").alias("rows"),
        )
        .collect()
    }
    # 310 offsets in 4 tasks: partition 1's share rounds to one task and stays whole; the 3
    # tasks left go to partition 0, cut into equal pieces.
    assert tasks == {(0, 0, 99, 100), (0, 100, 199, 100), (0, 200, 299, 100), (1, 0, 9, 10)}
    values = sorted(bytes(r["value"]) for r in frame.collect())
    assert values == sorted(
        stored_values(broker.data_dir, "skewed", 0) + stored_values(broker.data_dir, "skewed", 1)
    )
    # No more tasks than ranges when minPartitions does not ask for more.
    assert read(spark, broker, "skewed", minPartitions="2").rdd.getNumPartitions() == 2
    with pytest.raises(Exception, match="minPartitions must be positive"):
        read(spark, broker, "skewed", minPartitions="0").collect()
