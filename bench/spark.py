"""`make spark-bench`: Spark session start-up and the PySpark data source's batch rates.

    python -m bench.spark [--records N] [--partitions P]

Starts a broker and a local[2] Spark session, warms both directions up with 1,000 records,
then writes N records of 1 KiB with
`df.write.format("minikafka")` (idempotent producer), then reads them back with
`spark.read.format("minikafka")` into Spark's noop sink, which materialises every column.
Writes bench/results/spark.md and prints it. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from bench.process import BenchBroker

RESULTS = Path(__file__).parent / "results"
RECORD_BYTES = 1024


def main() -> int:
    parser = argparse.ArgumentParser(prog="make spark-bench")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    os.environ["PYTHONPATH"] = str(root)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"

    started = time.perf_counter()
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import col, concat, lit, lpad

    from minikafka_spark import register

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    startup = time.perf_counter() - started
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)

    with BenchBroker() as broker:
        bootstrap = f"127.0.0.1:{broker.port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("bench-spark", args.partitions, 1)])["bench-spark"].result(30)
        rows = (
            spark.range(args.records, numPartitions=args.partitions)
            .select(
                col("id").cast("string").alias("key"),
                lpad(concat(lit("v"), col("id").cast("string")), RECORD_BYTES, "x")
                .cast("binary")
                .alias("value"),
            )
            .cache()
        )
        rows.count()  # generated before the clock starts
        # Warm-up: Python workers and code paths started once, as in a long-running job.
        rows.limit(1000).write.mode("append").format("minikafka").option(
            "kafka.bootstrap.servers", bootstrap
        ).option("topic", "bench-warm-up").save()
        spark.read.format("minikafka").option("kafka.bootstrap.servers", bootstrap).option(
            "subscribe", "bench-warm-up"
        ).load().write.format("noop").mode("overwrite").save()
        began = time.perf_counter()
        rows.write.mode("append").format("minikafka").option(
            "kafka.bootstrap.servers", bootstrap
        ).option("topic", "bench-spark").save()
        write_s = time.perf_counter() - began

        began = time.perf_counter()
        spark.read.format("minikafka").option("kafka.bootstrap.servers", bootstrap).option(
            "subscribe", "bench-spark"
        ).load().write.format("noop").mode("overwrite").save()
        read_s = time.perf_counter() - began
    spark.stop()

    lines = [
        "# PySpark data source (minikafka_spark), local[2] on this machine",
        "",
        f"- Spark session start-up: {startup:.1f} s",
        f"- batch write, {args.records} x 1 KiB records: {args.records / write_s:,.0f} records/s "
        f"({args.records * RECORD_BYTES / write_s / 1e6:.1f} MB/s)",
        f"- batch read, {args.records} x 1 KiB records: {args.records / read_s:,.0f} records/s "
        f"({args.records * RECORD_BYTES / read_s / 1e6:.1f} MB/s)",
        f"- {args.partitions} partitions, so {args.partitions} Spark tasks each way",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "spark.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
