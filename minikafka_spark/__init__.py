"""A PySpark data source (Spark 4's Python Data Source API) for any Kafka-protocol broker.

    from minikafka_spark import register
    register(spark)        # then spark.read.format("minikafka"), spark.readStream..., df.write...

Columns and options are those of Spark's Kafka connector (spark-sql-kafka-0-10); the sink adds
`exactlyOnce=true` (transactions). See README's "Spark pipelines". pyspark is imported only
when the data source is used, so the option and offset modules work without it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["KafkaDataSource", "register"]


def register(spark: Any) -> None:
    """Make `format("minikafka")` known to a session. Spark refuses to register a Python data
    source as "kafka" (DATA_SOURCE_ALREADY_EXISTS: it is a built-in short name even without
    the spark-sql-kafka jar), so jobs name this one "minikafka"."""
    from minikafka_spark.source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)


def __getattr__(name: str) -> Any:
    if name == "KafkaDataSource":
        from minikafka_spark.source import KafkaDataSource

        return KafkaDataSource
    raise AttributeError(name)
