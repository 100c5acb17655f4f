"""Kafka's topic-level configs: one table of names, types, defaults, validation and docs.

Every topic config Kafka 4.0 knows (LogConfig) is accepted, validated as Kafka validates it
(type, range, allowed values) and stored, so an AdminClient setup written for Kafka works
unchanged. Those marked ``applied`` change what this broker does:

- retention.ms, retention.bytes, segment.bytes, segment.ms, index.interval.bytes,
  flush.messages, flush.ms, file.delete.delay.ms: the partition's ``LogConfig``
  (storage.log_config);
- max.message.bytes: the largest batch Produce accepts (MESSAGE_TOO_LARGE above it);
- message.timestamp.type=LogAppendTime: the broker stamps each batch's max_timestamp with
  its own clock and sets the timestamp-type attribute (KAFKA_NOTES §4);
- message.timestamp.before.max.ms / after.max.ms (broker: log.message.timestamp.*.max.ms):
  CreateTime record timestamps outside [now - before, now + after] get INVALID_TIMESTAMP
  with one record error each, as Kafka's LogValidator.validateTimestamp;
- cleanup.policy: ``compact`` hands the log to the log cleaner and rejects records without
  a key (INVALID_RECORD, as Kafka's LogValidator); a policy without ``delete`` disables
  retention and DeleteRecords (POLICY_VIOLATION), as in Kafka;
- delete.retention.ms, min.cleanable.dirty.ratio, min.compaction.lag.ms,
  max.compaction.lag.ms, segment.index.bytes: the log cleaner's (storage.log_cleaner);

The rest are stored and described but change nothing (compression.type: the broker keeps
the producer's codec; min.insync.replicas: one replica, always in sync, and Kafka caps
min.insync.replicas at the replication factor (Partition.effectiveMinIsr, KAFKA-15583), so
acks=all never fails with NOT_ENOUGH_REPLICAS on one broker (a simulated cluster acts on it,
broker.cluster.replication); tiered-storage settings have
nothing to act on; segment.index.bytes does not cap index files). remote.storage.enable=true
is refused, as Kafka refuses it when tiered storage is disabled on the broker.

Defaults follow the broker's configuration where the broker has the synonym
(log.retention.ms/minutes/hours, log.segment.bytes, log.roll.ms/hours, message.max.bytes,
log.message.timestamp.*.max.ms, log.index.interval.bytes, log.flush.interval.*), else
Kafka's default. DescribeConfigs
sources and synonyms follow Kafka's ConfigHelper: a topic override is
DYNAMIC_TOPIC_CONFIG, an explicitly set broker synonym STATIC_BROKER_CONFIG, otherwise
DEFAULT_CONFIG.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from broker.config.broker_config_table import ConfigSource, ConfigType
from broker.config.model import Config
from broker.config.synonyms import BrokerValues, Synonym, default_values, static_values, synonyms_of
from protocol.errors import ErrorCode
from storage.log_config import LogConfig

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class InvalidConfigError(Exception):
    """A config Kafka would refuse; ``code`` is the error answered (INVALID_CONFIG mostly)."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_CONFIG) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class TopicConfigDef:
    name: str
    type: ConfigType
    default: str
    doc: str
    # Broker properties this topic config inherits its default from, strongest first.
    synonyms: tuple[str, ...]
    # Kafka's validator: returns the reason a parsed value is invalid, or None.
    check: Callable[[Any], str | None] | None = None
    # Whether setting it changes what this broker does (see the module docstring).
    applied: bool = False

    def parse(self, raw: str) -> Any:
        """The value as Kafka's ConfigDef parses it; raises InvalidConfigError."""
        value = _parse(self.type, raw)
        if isinstance(value, str) and value.startswith("\0"):
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration {self.name}: {value[1:]}"
            )
        if self.check is not None:
            reason = self.check(value)
            if reason is not None:
                raise InvalidConfigError(
                    f"Invalid value {raw} for configuration {self.name}: {reason}"
                )
        return value


def _parse(type_: ConfigType, raw: str) -> Any:
    # Errors come back as "\0reason" so that TopicConfigDef.parse words them as Kafka does.
    text = raw.strip()
    if type_ in (ConfigType.SHORT, ConfigType.INT, ConfigType.LONG):
        limit = {ConfigType.SHORT: 2**15 - 1, ConfigType.INT: INT_MAX}.get(type_, LONG_MAX)
        try:
            value = int(text, 10)
        except ValueError:
            return f"\0Not a number of type {type_.name}"
        if not -limit - 1 <= value <= limit:
            return f"\0Not a number of type {type_.name}"
        return value
    if type_ == ConfigType.DOUBLE:
        try:
            return float(text)
        except ValueError:
            return "\0Not a number of type DOUBLE"
    if type_ == ConfigType.BOOLEAN:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        return "\0Expected value to be either true or false"
    if type_ == ConfigType.LIST:
        return [item.strip() for item in text.split(",")] if text else []
    return text


def parse_value(name: str, type_: ConfigType, raw: str) -> Any:
    """``raw`` parsed as Kafka's ConfigDef parses a value of that type; raises
    InvalidConfigError worded as ConfigException ("Invalid value x for configuration y: ...")."""
    value = _parse(type_, raw)
    if isinstance(value, str) and value.startswith("\0"):
        raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: {value[1:]}")
    return value


def _at_least(minimum: int | float) -> Callable[[Any], str | None]:
    return lambda v: None if v >= minimum else f"Value must be at least {minimum}"


def _between(low: int | float, high: int | float) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value < low:
            return f"Value must be at least {low}"
        if value > high:
            return f"Value must be no more than {high}"
        return None

    return check


def _one_of(*options: str) -> Callable[[Any], str | None]:
    # Kafka 4.0's ValidList accepts an empty list (only 4.1's KIP-1161 refuses it), so a
    # SUBTRACT that empties cleanup.policy is accepted and described as "".
    def check(value: Any) -> str | None:
        items = value if isinstance(value, list) else [value]
        bad = [item for item in items if item not in options]
        return f"String must be one of: {', '.join(options)}" if bad else None

    return check


def _gzip_level(value: Any) -> str | None:
    return None if value == -1 or 1 <= value <= 9 else "Value must be -1 or between 1 and 9"


def _throttled_replicas(value: Any) -> str | None:
    # "*" or "partition:broker,..." (Kafka's ThrottledReplicaListValidator).
    if value == ["*"] or all(
        len(p := item.split(":")) == 2 and p[0].isdigit() and p[1].isdigit() for item in value
    ):
        return None
    return "must be the literal '*' or a list of replicas in the format [PartitionId]:[BrokerId]"


def _no_remote_storage(value: Any) -> str | None:
    return (
        "Tiered Storage functionality is disabled in the broker; remote.storage.enable "
        "cannot be true"
        if value
        else None
    )


_C = ConfigType
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    d.name: d
    for d in (
        TopicConfigDef(
            "cleanup.policy",
            _C.LIST,
            "delete",
            "delete: old segments are removed by retention. compact: the log cleaner keeps the "
            "latest record of each key, and records without a key are rejected.",
            ("log.cleanup.policy",),
            _one_of("compact", "delete"),
            applied=True,
        ),
        TopicConfigDef(
            "compression.type",
            _C.STRING,
            "producer",
            "Final compression of the topic's data. minikafka stores batches as the producer "
            "compressed them whatever this says.",
            ("compression.type",),
            _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        ),
        TopicConfigDef(
            "compression.gzip.level",
            _C.INT,
            "-1",
            "Compression level for gzip (stored only).",
            ("compression.gzip.level",),
            _gzip_level,
        ),
        TopicConfigDef(
            "compression.lz4.level",
            _C.INT,
            "9",
            "Compression level for lz4 (stored only).",
            ("compression.lz4.level",),
            _between(1, 17),
        ),
        TopicConfigDef(
            "compression.zstd.level",
            _C.INT,
            "3",
            "Compression level for zstd (stored only).",
            ("compression.zstd.level",),
            _between(-131072, 22),
        ),
        TopicConfigDef(
            "delete.retention.ms",
            _C.LONG,
            "86400000",
            "How long delete tombstones are kept on compacted topics, counted from the "
            "cleaning that first reached them.",
            ("log.cleaner.delete.retention.ms",),
            _at_least(0),
            applied=True,
        ),
        TopicConfigDef(
            "file.delete.delay.ms",
            _C.LONG,
            "60000",
            "How long the files of a segment deleted by retention or DeleteRecords stay, "
            "renamed *.deleted, before they are removed.",
            ("log.segment.delete.delay.ms",),
            _at_least(0),
            applied=True,
        ),
        TopicConfigDef(
            "flush.messages",
            _C.LONG,
            str(LONG_MAX),
            "fsync the partition once this many messages are unflushed.",
            ("log.flush.interval.messages",),
            _at_least(1),
            applied=True,
        ),
        TopicConfigDef(
            "flush.ms",
            _C.LONG,
            str(LONG_MAX),
            "fsync the partition when its oldest unflushed message is this old.",
            ("log.flush.interval.ms",),
            _at_least(0),
            applied=True,
        ),
        TopicConfigDef(
            "follower.replication.throttled.replicas",
            _C.LIST,
            "",
            "Replicas throttled on the follower side (stored only: no replication).",
            # Not in Kafka's ServerTopicConfigSynonyms: no broker-level synonym.
            (),
            _throttled_replicas,
        ),
        TopicConfigDef(
            "index.interval.bytes",
            _C.INT,
            "4096",
            "Bytes of log between two offset-index entries (applies to new segments).",
            ("log.index.interval.bytes",),
            _at_least(0),
            applied=True,
        ),
        TopicConfigDef(
            "leader.replication.throttled.replicas",
            _C.LIST,
            "",
            "Replicas throttled on the leader side (stored only: no replication).",
            # Not in Kafka's ServerTopicConfigSynonyms: no broker-level synonym.
            (),
            _throttled_replicas,
        ),
        TopicConfigDef(
            "local.retention.bytes",
            _C.LONG,
            "-2",
            "Local retention with tiered storage (stored only).",
            ("log.local.retention.bytes",),
            _at_least(-2),
        ),
        TopicConfigDef(
            "local.retention.ms",
            _C.LONG,
            "-2",
            "Local retention with tiered storage (stored only).",
            ("log.local.retention.ms",),
            _at_least(-2),
        ),
        TopicConfigDef(
            "max.compaction.lag.ms",
            _C.LONG,
            str(LONG_MAX),
            "Longest time a record stays uncompacted.",
            ("log.cleaner.max.compaction.lag.ms",),
            _at_least(1),
            applied=True,
        ),
        TopicConfigDef(
            "max.message.bytes",
            _C.INT,
            "1048588",
            "Largest record batch accepted from a producer (MESSAGE_TOO_LARGE above it).",
            ("message.max.bytes",),
            _at_least(0),
            applied=True,
        ),
        TopicConfigDef(
            "message.timestamp.after.max.ms",
            _C.LONG,
            "3600000",
            "How far ahead of the broker clock a CreateTime record timestamp may be: a batch "
            "with a later one gets INVALID_TIMESTAMP. Ignored on LogAppendTime topics.",
            ("log.message.timestamp.after.max.ms",),
            _at_least(0),
            applied=True,
        ),
        TopicConfigDef(
            "message.timestamp.before.max.ms",
            _C.LONG,
            str(LONG_MAX),
            "How far behind the broker clock a CreateTime record timestamp may be: a batch "
            "with an older one gets INVALID_TIMESTAMP. Ignored on LogAppendTime topics.",
            ("log.message.timestamp.before.max.ms",),
            _at_least(0),
            applied=True,
        ),
        TopicConfigDef(
            "message.timestamp.type",
            _C.STRING,
            "CreateTime",
            "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with "
            "the broker's clock when it is appended.",
            ("log.message.timestamp.type",),
            _one_of("CreateTime", "LogAppendTime"),
            applied=True,
        ),
        TopicConfigDef(
            "min.cleanable.dirty.ratio",
            _C.DOUBLE,
            "0.5",
            "Dirty ratio that makes a compacted log eligible for cleaning.",
            ("log.cleaner.min.cleanable.ratio",),
            _between(0, 1),
            applied=True,
        ),
        TopicConfigDef(
            "min.compaction.lag.ms",
            _C.LONG,
            "0",
            "Shortest time a record stays uncompacted.",
            ("log.cleaner.min.compaction.lag.ms",),
            _at_least(0),
            applied=True,
        ),
        TopicConfigDef(
            "min.insync.replicas",
            _C.INT,
            "1",
            "Replicas that must acknowledge an acks=all write (capped at the replication "
            "factor; a single broker has one replica, always in sync).",
            ("min.insync.replicas",),
            _at_least(1),
        ),
        TopicConfigDef(
            "preallocate",
            _C.BOOLEAN,
            "false",
            "Preallocate segment files (stored only).",
            ("log.preallocate",),
        ),
        TopicConfigDef(
            "remote.log.copy.disable",
            _C.BOOLEAN,
            "false",
            "Tiered storage: stop copying to remote storage (stored only).",
            (),
        ),
        TopicConfigDef(
            "remote.log.delete.on.disable",
            _C.BOOLEAN,
            "false",
            "Tiered storage: delete remote data when disabled (stored only).",
            (),
        ),
        TopicConfigDef(
            "remote.storage.enable",
            _C.BOOLEAN,
            "false",
            "Tiered storage; not available on minikafka.",
            (),
            _no_remote_storage,
        ),
        TopicConfigDef(
            "retention.bytes",
            _C.LONG,
            "-1",
            "Largest size of a partition before its oldest segments are deleted; -1 = no limit.",
            ("log.retention.bytes",),
            applied=True,
        ),
        TopicConfigDef(
            "retention.ms",
            _C.LONG,
            "604800000",
            "Age after which whole segments are deleted; -1 = keep forever.",
            ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
            _at_least(-1),
            applied=True,
        ),
        TopicConfigDef(
            "segment.bytes",
            _C.INT,
            "1073741824",
            "Size at which the active segment is rolled.",
            ("log.segment.bytes",),
            _at_least(14),
            applied=True,
        ),
        TopicConfigDef(
            "segment.index.bytes",
            _C.INT,
            "10485760",
            "Size of the offset index file: indexes grow as needed, and the log cleaner "
            "merges segments while their indexes fit it.",
            ("log.index.size.max.bytes",),
            _at_least(4),
            applied=True,
        ),
        TopicConfigDef(
            "segment.jitter.ms",
            _C.LONG,
            "0",
            "Random jitter subtracted from segment.ms (stored only).",
            ("log.roll.jitter.ms", "log.roll.jitter.hours"),
            _at_least(0),
        ),
        TopicConfigDef(
            "segment.ms",
            _C.LONG,
            "604800000",
            "Age of the active segment's first batch after which it is rolled.",
            ("log.roll.ms", "log.roll.hours"),
            _at_least(1),
            applied=True,
        ),
        TopicConfigDef(
            "unclean.leader.election.enable",
            _C.BOOLEAN,
            "false",
            "Elect an out-of-sync replica as leader (stored only: one replica).",
            ("unclean.leader.election.enable",),
        ),
    )
}


# -- validation ----------------------------------------------------------------------------


def validate(configs: Mapping[str, str | None]) -> dict[str, Any]:
    """Check topic overrides as Kafka's LogConfig.validate; returns the parsed values.

    Raises InvalidConfigError with Kafka's wording ("Unknown topic config name: x",
    "Invalid value x for configuration y: reason").
    """
    parsed: dict[str, Any] = {}
    for name, raw in configs.items():
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        if raw is None:
            raise InvalidConfigError(f"Null value not supported for topic configs: {name}")
        parsed[name] = definition.parse(raw)
    low = parsed.get("min.compaction.lag.ms")
    high = parsed.get("max.compaction.lag.ms")
    if low is not None and high is not None and low > high:
        raise InvalidConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({low}) > "
            f"max.compaction.lag.ms ({high})"
        )
    return parsed


# -- broker defaults -----------------------------------------------------------------------

# The effective broker value behind each applied topic config, as Config computes it (with
# Kafka's ms > minutes > hours precedence already resolved).
_BROKER_VALUE: dict[str, Callable[[Config], float]] = {
    "retention.ms": lambda c: c.retention_ms,
    "retention.bytes": lambda c: c.retention_bytes,
    "segment.bytes": lambda c: c.segment_bytes,
    "segment.ms": lambda c: c.segment_ms,
    "max.message.bytes": lambda c: c.message_max_bytes,
    "message.timestamp.before.max.ms": lambda c: c.message_timestamp_before_max_ms,
    "message.timestamp.after.max.ms": lambda c: c.message_timestamp_after_max_ms,
    "index.interval.bytes": lambda c: c.index_interval_bytes,
    "flush.messages": lambda c: c.flush_messages,
    "flush.ms": lambda c: c.flush_ms,
    "file.delete.delay.ms": lambda c: c.file_delete_delay_ms,
    "delete.retention.ms": lambda c: c.cleaner_delete_retention_ms,
    "min.cleanable.dirty.ratio": lambda c: c.cleaner_min_cleanable_ratio,
    "min.compaction.lag.ms": lambda c: c.cleaner_min_compaction_lag_ms,
    "max.compaction.lag.ms": lambda c: c.cleaner_max_compaction_lag_ms,
    "min.insync.replicas": lambda c: c.min_insync_replicas,
}


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One config as DescribeConfigs and CreateTopics v5+ report it."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    type: ConfigType
    doc: str
    synonyms: tuple[Synonym, ...]
    # PASSWORD (and unknown) types: Kafka sends no value (KafkaConfig.maybeSensitive).
    sensitive: bool = False


def topic_default(config: Config, definition: TopicConfigDef) -> tuple[str, list[Synonym]]:
    """The value a topic without an override gets, and the broker synonyms behind it.

    Synonyms as Kafka's ConfigHelper.createTopicConfigEntry: the chain of the broker config
    behind it (ServerTopicConfigSynonyms), which Kafka cuts before the first entry with that
    config's own name. So retention.ms shows no synonym unless log.retention.ms itself is
    set, even when log.retention.hours is: odd, but it is what clients see from Kafka.
    Dynamic broker configs do not reach topics here (see broker.config.broker_configs).
    """
    synonyms: list[Synonym] = []
    if definition.synonyms:
        values = BrokerValues({}, {}, static_values(config), default_values(config))
        synonyms = synonyms_of(definition.synonyms[0], values, names=definition.synonyms)
    getter = _BROKER_VALUE.get(definition.name)
    value = str(getter(config)) if getter is not None else definition.default
    return value, synonyms


def describe_topic(config: Config, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every topic config with its effective value, sorted by name."""
    entries: list[ConfigEntry] = []
    for name in sorted(TOPIC_CONFIGS):
        definition = TOPIC_CONFIGS[name]
        value, synonyms = topic_default(config, definition)
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        if name in overrides:
            value = overrides[name]
            source = ConfigSource.DYNAMIC_TOPIC_CONFIG
            synonyms.insert(0, Synonym(name, value, source))
        entries.append(
            ConfigEntry(
                name, value, source, False, definition.type, definition.doc, tuple(synonyms)
            )
        )
    return entries


# -- what the broker acts on ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """The effective settings of one topic that the broker and its partitions act on."""

    max_message_bytes: int
    log_append_time: bool
    compact: bool
    # cleanup.policy includes delete: retention runs and DeleteRecords is allowed.
    delete: bool
    min_insync_replicas: int
    # LogValidator.validateTimestamp's bounds on CreateTime record timestamps (KIP-937).
    timestamp_before_max_ms: int
    timestamp_after_max_ms: int
    log_config: LogConfig


def settings(config: Config, base: LogConfig, overrides: Mapping[str, str]) -> TopicSettings:
    """Broker defaults (``config``, ``base``) with a topic's overrides applied.

    ``overrides`` must have passed ``validate``.
    """
    parsed = validate(overrides)

    def get(name: str) -> Any:
        if name in parsed:
            return parsed[name]
        definition = TOPIC_CONFIGS[name]
        return definition.parse(topic_default(config, definition)[0])

    policy: list[str] = get("cleanup.policy")
    delete = "delete" in policy
    log_config = replace(
        base,
        segment_bytes=get("segment.bytes"),
        segment_ms=get("segment.ms"),
        index_interval_bytes=get("index.interval.bytes"),
        # Kafka's LogCleanerManager/UnifiedLog delete by retention only when the policy
        # includes "delete": a compact-only topic keeps its old segments.
        retention_ms=get("retention.ms") if delete else -1,
        retention_bytes=get("retention.bytes") if delete else -1,
        flush_messages=get("flush.messages"),
        flush_ms=get("flush.ms"),
        file_delete_delay_ms=get("file.delete.delay.ms"),
        compact="compact" in policy,
        delete=delete,
        min_cleanable_ratio=get("min.cleanable.dirty.ratio"),
        min_compaction_lag_ms=get("min.compaction.lag.ms"),
        max_compaction_lag_ms=get("max.compaction.lag.ms"),
        delete_retention_ms=get("delete.retention.ms"),
        segment_index_bytes=get("segment.index.bytes"),
    )
    return TopicSettings(
        max_message_bytes=get("max.message.bytes"),
        log_append_time=get("message.timestamp.type") == "LogAppendTime",
        compact="compact" in policy,
        delete=delete,
        min_insync_replicas=get("min.insync.replicas"),
        timestamp_before_max_ms=get("message.timestamp.before.max.ms"),
        timestamp_after_max_ms=get("message.timestamp.after.max.ms"),
        log_config=log_config,
    )


def incremental(
    current: Mapping[str, str], operations: Iterable[tuple[str, int, str | None]]
) -> dict[str, str | None]:
    """Apply IncrementalAlterConfigs operations (name, op, value) to a topic's overrides.

    Ops as Kafka's AlterConfigOp.OpType: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (lists only).
    Returns the new overrides; a None value means "set to null" (refused by ``validate``).
    Raises InvalidConfigError with INVALID_REQUEST or INVALID_CONFIG as Kafka answers.
    """
    result: dict[str, str | None] = dict(current)
    for name, op, value in operations:
        definition = TOPIC_CONFIGS.get(name)
        if op == 0:
            result[name] = value
        elif op == 1:
            result.pop(name, None)
        elif op in (2, 3):
            if definition is None:
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            if definition.type != ConfigType.LIST:
                verb = "append" if op == 2 else "subtract"
                raise InvalidConfigError(
                    f"Config value {verb} is not allowed for config key: {name}",
                    ErrorCode.INVALID_REQUEST,
                )
            old = result.get(name)
            items = (old if old is not None else definition.default).split(",")
            items = [i for i in items if i]
            change = [i for i in (value or "").split(",") if i]
            if op == 2:
                items += [i for i in change if i not in items]
            else:
                items = [i for i in items if i not in change]
            result[name] = ",".join(items)
        else:
            raise InvalidConfigError(f"Unknown operations type {op}", ErrorCode.INVALID_REQUEST)
    return result
