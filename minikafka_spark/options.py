"""The options of the data source, named and checked as Spark's Kafka connector does.

Spark's KafkaSourceProvider (validateGeneralOptions, validateBatchOptions,
validateStreamOptions, kafkaParamsForDriver/Executor) decides which options exist and which
combinations are refused; the messages below follow its wording so that a job moved between
`format("kafka")` and `format("minikafka")` fails, or runs, the same way.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

# Kafka client settings Spark refuses because it manages them itself
# (KafkaSourceProvider.validateGeneralOptions and validateSinkOptions).
_SOURCE_FORBIDDEN = {
    "auto.offset.reset": "Set source option 'startingOffsets' to 'earliest' or 'latest' to "
    "specify where to start.",
    "key.deserializer": "Source will always deserialize keys as byte arrays.",
    "value.deserializer": "Source will always deserialize values as byte arrays.",
    "enable.auto.commit": "Spark Kafka source manages offsets itself.",
    "interceptor.classes": "Interceptors are not supported by the Kafka source.",
}
_SINK_FORBIDDEN = {
    "key.serializer": "Kafka sink will always serialize keys as byte arrays.",
    "value.serializer": "Kafka sink will always serialize values as byte arrays.",
}
_STRATEGIES = ("subscribe", "subscribepattern", "assign")
_DEFAULT_POLL_TIMEOUT_MS = 120_000


class OptionError(ValueError):
    """An option or combination of options Spark's Kafka connector refuses."""


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    # Spark's options are case-insensitive (CaseInsensitiveMap); Kafka's own settings, after
    # the "kafka." prefix, keep their case.
    return {key.lower(): value for key, value in options.items()}


def kafka_params(options: Mapping[str, str]) -> dict[str, str]:
    """The `kafka.`-prefixed options, prefix removed: they go to the Kafka client as they are."""
    return {
        key[len("kafka.") :]: value
        for key, value in options.items()
        if key.lower().startswith("kafka.")
    }


def _bool(lowered: Mapping[str, str], name: str, default: bool) -> bool:
    raw = lowered.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise OptionError(f"'{name}' must be true or false, got '{raw}'")


def _positive_int(lowered: Mapping[str, str], name: str) -> int | None:
    raw = lowered.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise OptionError(
            f"Invalid value '{raw}' for option '{name}', must be a positive integer"
        ) from exc
    if value <= 0:
        raise OptionError(f"Invalid value '{raw}' for option '{name}', must be a positive integer")
    return value


def _min_partitions(lowered: Mapping[str, str]) -> int | None:
    # KafkaSourceProvider.validateGeneralOptions: an integer (`toInt`), and positive.
    raw = lowered.get("minpartitions")
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise OptionError(f'For input string: "{raw}" (minPartitions)') from exc
    if value <= 0:
        raise OptionError("minPartitions must be positive")
    return value


@dataclass(frozen=True)
class Subscription:
    """Which partitions a source reads: Spark's ConsumerStrategy (Assign, Subscribe,
    SubscribePattern)."""

    kind: str  # "assign" | "subscribe" | "subscribepattern"
    topics: tuple[str, ...] = ()
    pattern: str = ""
    assigned: tuple[tuple[str, int], ...] = ()

    def matches(self, topic: str) -> bool:
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribepattern":
            # Java's Pattern.matcher(topic).matches(): the whole name must match.
            return re.fullmatch(self.pattern, topic) is not None
        return any(t == topic for t, _ in self.assigned)


def _subscription(lowered: Mapping[str, str]) -> Subscription:
    chosen = [name for name in _STRATEGIES if name in lowered]
    if not chosen:
        raise OptionError(
            "One of the following options must be specified for Kafka source: "
            "subscribe, subscribePattern, assign. See the docs for more details."
        )
    if len(chosen) > 1:
        # KafkaSourceProvider.validateGeneralOptions's words, its lower-case option keys too.
        raise OptionError(
            "Only one of the following options can be specified for Kafka source: "
            "subscribe, subscribepattern, assign. See the docs for more details."
        )
    kind = chosen[0]
    raw = lowered[kind]
    if kind == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise OptionError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{raw}'"
            )
        return Subscription(kind, topics=topics)
    if kind == "subscribepattern":
        if not raw.strip():
            raise OptionError(
                "Pattern to subscribe is empty as specified value for option "
                f"'subscribePattern' is '{raw}'"
            )
        try:
            re.compile(raw)
        except re.error as exc:
            raise OptionError(f"Invalid pattern for 'subscribePattern': {exc}") from exc
        return Subscription(kind, pattern=raw.strip())
    from minikafka_spark.offsets import parse_assign

    return Subscription(kind, assigned=tuple(parse_assign(raw)))


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscription: Subscription
    starting: str | None  # raw startingOffsets
    ending: str | None  # raw endingOffsets
    starting_by_timestamp: str | None
    ending_by_timestamp: str | None
    starting_timestamp: str | None
    ending_timestamp: str | None
    starting_timestamp_strategy: str  # "error" | "latest"
    fail_on_data_loss: bool
    include_headers: bool
    include_producer_metadata: bool
    max_offsets_per_trigger: int | None
    min_partitions: int | None  # split ranges into about this many tasks (Spark's)
    poll_timeout_ms: int
    group_id_prefix: str
    client_params: dict[str, str] = field(default_factory=dict)

    @property
    def read_committed(self) -> bool:
        return self.client_params.get("isolation.level", "read_uncommitted") == "read_committed"

    def consumer_config(self, role: str) -> dict[str, str | int | bool]:
        """Settings of a confluent-kafka consumer that only assigns partitions: offsets are
        Spark's to keep, so nothing is committed (KafkaSourceProvider.kafkaParamsForExecutor
        sets enable.auto.commit=false and auto.offset.reset=none)."""
        config: dict[str, str | int | bool] = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.client_params.get(
                "group.id", f"{self.group_id_prefix}-{uuid.uuid4()}-{role}"
            ),
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            # librdkafka's "error" is Java's "none": an offset out of range is reported, never
            # silently reset, so data loss is detected (KafkaDataConsumer.fetchRecord).
            "auto.offset.reset": "error",
            # A task reads one partition from start to end: larger fetches mean fewer round
            # trips (librdkafka's defaults suit many partitions per consumer).
            "max.partition.fetch.bytes": 8 * 1024 * 1024,
            "fetch.max.bytes": 64 * 1024 * 1024,
        }
        config.update(self.client_params)
        return config


def source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    lowered = _lower(options)
    params = kafka_params(options)
    for key, why in _SOURCE_FORBIDDEN.items():
        if key in {k.lower() for k in params}:
            raise OptionError(f"Kafka option '{key}' is not supported as {why}")
    servers = params.pop("bootstrap.servers", None)
    if not servers:
        raise OptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
        )
    subscription = _subscription(lowered)
    starting = lowered.get("startingoffsets")
    ending = lowered.get("endingoffsets")
    if streaming:
        for name in ("endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp"):
            if name in lowered:
                raise OptionError(f"Ending offset not valid in streaming queries ({name})")
    else:
        if starting is not None and starting.strip().lower() == "latest":
            raise OptionError("starting offset can't be latest for batch queries on Kafka")
        if ending is not None and ending.strip().lower() == "earliest":
            raise OptionError("ending offset can't be earliest for batch queries on Kafka")
    strategy = lowered.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(
            f"startingOffsetsByTimestampStrategy must be 'error' or 'latest', got '{strategy}'"
        )
    isolation = params.get("isolation.level", "read_uncommitted")
    if isolation not in ("read_uncommitted", "read_committed"):
        raise OptionError(
            f"kafka.isolation.level must be read_uncommitted or read_committed, got '{isolation}'"
        )
    prefix = lowered.get("groupidprefix") or (
        "spark-kafka-source" if streaming else "spark-kafka-relation"
    )
    return SourceOptions(
        bootstrap_servers=servers,
        subscription=subscription,
        starting=starting,
        ending=ending,
        starting_by_timestamp=lowered.get("startingoffsetsbytimestamp"),
        ending_by_timestamp=lowered.get("endingoffsetsbytimestamp"),
        starting_timestamp=lowered.get("startingtimestamp"),
        ending_timestamp=lowered.get("endingtimestamp"),
        starting_timestamp_strategy=strategy,
        fail_on_data_loss=_bool(lowered, "failOnDataLoss", True),
        include_headers=_bool(lowered, "includeHeaders", False),
        include_producer_metadata=_bool(lowered, "includeProducerMetadata", False),
        max_offsets_per_trigger=_positive_int(lowered, "maxOffsetsPerTrigger"),
        min_partitions=_min_partitions(lowered),
        poll_timeout_ms=_positive_int(lowered, "kafkaConsumer.pollTimeoutMs")
        or _DEFAULT_POLL_TIMEOUT_MS,
        group_id_prefix=prefix,
        client_params=params,
    )


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None
    exactly_once: bool
    transactional_id_prefix: str
    client_params: dict[str, str] = field(default_factory=dict)

    def producer_config(self) -> dict[str, str | int | bool]:
        # Idempotence by default (Kafka 3.0+ producers' default, KIP-679): a retried send
        # never duplicates a record inside one producer session.
        config: dict[str, str | int | bool] = {
            "bootstrap.servers": self.bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
        }
        config.update(self.client_params)
        return config


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    lowered = _lower(options)
    params = kafka_params(options)
    for key, why in _SINK_FORBIDDEN.items():
        if key in {k.lower() for k in params}:
            raise OptionError(f"Kafka option '{key}' is not supported as {why}")
    servers = params.pop("bootstrap.servers", None)
    if not servers:
        raise OptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer"
        )
    exactly_once = _bool(lowered, "exactlyOnce", False)
    if exactly_once and "transactional.id" in params:
        # One transactional id per task is derived below; a single fixed id would make every
        # task fence the others.
        raise OptionError(
            "kafka.transactional.id cannot be set with exactlyOnce=true; set "
            "transactionalIdPrefix instead"
        )
    return SinkOptions(
        bootstrap_servers=servers,
        topic=options.get("topic") or lowered.get("topic"),
        exactly_once=exactly_once,
        transactional_id_prefix=lowered.get("transactionalidprefix", "minikafka-spark"),
        client_params=params,
    )
