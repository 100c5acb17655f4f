"""A streaming Spark pipeline: read a topic, transform, write exactly once to another topic.

    python examples/spark_pipeline.py BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC CHECKPOINT_DIR

Runs until the input has been read (Trigger.AvailableNow); run it again and it continues
from its checkpoint. With `exactlyOnce=true` each micro-batch's records are committed in Kafka
transactions, so a consumer with isolation.level=read_committed sees every input record once
in the output, whatever failed and was retried (needs a broker with transactions).
"""

from __future__ import annotations

import os
import sys
from typing import Any


def build_pipeline(
    spark: Any, bootstrap: str, source: str, sink: str, checkpoint: str, exactly_once: bool = True
) -> Any:
    from pyspark.sql.functions import col, upper

    records = (
        spark.readStream.format("minikafka")  # format("kafka") with Spark's own connector
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "10000")
        .option("includeHeaders", "true")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    transformed = records.select(
        "key", upper(col("value").cast("string")).alias("value"), "headers"
    )
    return (
        transformed.writeStream.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("exactlyOnce", str(exactly_once).lower())
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
    )


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    from minikafka_spark import register

    bootstrap, source, sink, checkpoint = argv
    # Spark starts its Python workers with `python3` from PATH unless told otherwise; outside
    # an activated virtualenv that one lacks pyarrow and this package. A PYSPARK_PYTHON
    # already set (a cluster's) is kept.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.appName("minikafka-pipeline").getOrCreate()
    register(spark)
    query = build_pipeline(spark, bootstrap, source, sink, checkpoint).start()
    query.awaitTermination()
    progress = query.lastProgress
    end = progress["sources"][0]["endOffset"] if progress else "(nothing new)"
    print(f"{source} -> {sink}: input read up to {end}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
