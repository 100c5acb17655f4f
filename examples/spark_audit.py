"""A batch audit of a topic: duplicate producer sequences and offset gaps.

    python examples/spark_audit.py BOOTSTRAP TOPIC

An idempotent producer numbers its records per partition; the broker must never store the
same (producer id, epoch, sequence) twice. The sequence restarts at 0 whenever the producer's
epoch changes (KIP-360), so the epoch belongs to the key. Offsets of a partition are
consecutive except where transaction markers (one offset each) or compaction leave holes, so
a gap is worth a look, not necessarily a fault.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def read_for_audit(spark: Any, bootstrap: str, topic: str) -> Any:
    return (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("includeProducerMetadata", "true")
        .load()
    )


def duplicate_sequences(records: Any) -> Any:
    """(topic, partition, producerId, producerEpoch, sequence) stored more than once."""
    from pyspark.sql.functions import col, collect_list, count

    return (
        records.where(col("producerId") >= 0)
        .groupBy("topic", "partition", "producerId", "producerEpoch", "sequence")
        .agg(count("*").alias("copies"), collect_list("offset").alias("offsets"))
        .where(col("copies") > 1)
    )


def offset_gaps(records: Any) -> Any:
    """(topic, partition, after, before): offsets missing between two consecutive records."""
    from pyspark.sql import Window
    from pyspark.sql.functions import col, lead

    by_partition = Window.partitionBy("topic", "partition").orderBy("offset")
    return (
        records.select("topic", "partition", "offset")
        .withColumn("next", lead("offset").over(by_partition))
        .where(col("next") > col("offset") + 1)
        .select("topic", "partition", col("offset").alias("after"), col("next").alias("before"))
    )


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    from minikafka_spark import register

    # Spark starts its Python workers with `python3` from PATH unless told otherwise; outside
    # an activated virtualenv that one lacks pyarrow and this package. A PYSPARK_PYTHON
    # already set (a cluster's) is kept.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.appName("minikafka-audit").getOrCreate()
    register(spark)
    records = read_for_audit(spark, *argv).cache()
    duplicates = duplicate_sequences(records).collect()
    gaps = offset_gaps(records).collect()
    print(f"{records.count()} records, {len(duplicates)} duplicate sequences, {len(gaps)} gaps")
    for row in duplicates:
        print("duplicate:", row.asDict())
    for row in gaps:
        print("gap:", row.asDict())
    spark.stop()
    return 1 if duplicates else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
