"""The data source Spark looks up by name: `spark.read.format("minikafka")`."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from minikafka_spark.columns import source_schema
from minikafka_spark.options import OptionError, sink_options, source_options
from minikafka_spark.reader import KafkaBatchReader, KafkaStreamReader
from minikafka_spark.writer import KafkaBatchWriter, KafkaStreamWriter, validate_input_schema


class KafkaDataSource(DataSource):
    """Reads and writes any Kafka-protocol broker with Spark's Kafka connector's columns and
    options (see README's "Spark pipelines")."""

    @classmethod
    def name(cls) -> str:
        return "minikafka"

    def schema(self) -> StructType:
        lowered = {k.lower(): v.strip().lower() for k, v in self.options.items()}
        return source_schema(
            include_headers=lowered.get("includeheaders") == "true",
            include_producer_metadata=lowered.get("includeproducermetadata") == "true",
        )

    def _refuse_user_schema(self, schema: StructType) -> None:
        # Spark's connector: "Kafka source has a fixed schema and cannot be set with a custom
        # one" (KafkaSourceProvider.sourceSchema).
        if schema != self.schema():
            raise OptionError("Kafka source has a fixed schema and cannot be set with a custom one")

    def reader(self, schema: StructType) -> DataSourceReader:
        self._refuse_user_schema(schema)
        return KafkaBatchReader(source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self._refuse_user_schema(schema)
        return KafkaStreamReader(source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            # Spark's connector refuses Overwrite (KafkaSourceProvider.createRelation,
            # _LEGACY_ERROR_TEMP_3081): a topic cannot be truncated. Its default mode,
            # ErrorIfExists, Spark itself refuses for Python data sources
            # (UNSUPPORTED_DATA_SOURCE_SAVE_MODE) before this is called.
            raise OptionError(
                "Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                "ErrorIfExists (default). Spark takes only Append for a Python data source "
                "such as this one."
            )
        options = sink_options(self.options)
        validate_input_schema(schema, options)
        return KafkaBatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = sink_options(self.options)
        validate_input_schema(schema, options)
        return KafkaStreamWriter(options)
