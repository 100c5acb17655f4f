"""The topic config table (broker.config.topic_configs): validation, defaults, sources, effects."""

from __future__ import annotations

import pytest

from broker.config.broker_config_table import ConfigSource
from broker.config.broker_configs import describe_broker
from broker.config.loader import make_config
from broker.config.topic_configs import (
    TOPIC_CONFIGS,
    InvalidConfigError,
    describe_topic,
    incremental,
    settings,
    validate,
)
from protocol.errors import ErrorCode
from storage.log_config import LogConfig


def test_every_default_passes_its_own_validation() -> None:
    for definition in TOPIC_CONFIGS.values():
        definition.parse(definition.default)


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
        (
            {"retention.ms": "abc"},
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        (
            {"retention.ms": "-2"},
            "Invalid value -2 for configuration retention.ms: Value must be at least -1",
        ),
        (
            {"max.message.bytes": "99999999999"},
            "Invalid value 99999999999 for configuration max.message.bytes: Not a number of "
            "type INT",
        ),
        ({"cleanup.policy": "forever"}, "String must be one of: compact, delete"),
        ({"message.timestamp.type": "logappendtime"}, "String must be one of: CreateTime"),
        ({"preallocate": "yes"}, "Expected value to be either true or false"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "Value must be no more than 1"),
        ({"remote.storage.enable": "true"}, "Tiered Storage functionality is disabled"),
        ({"segment.ms": None}, "Null value not supported for topic configs: segment.ms"),
        (
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
            "min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
    ],
)
def test_invalid_configs_are_refused_with_kafkas_wording(
    configs: dict[str, str | None], message: str
) -> None:
    with pytest.raises(InvalidConfigError) as info:
        validate(configs)
    assert info.value.code == ErrorCode.INVALID_CONFIG
    assert message in info.value.message


def test_valid_values_parse_to_their_types() -> None:
    parsed = validate(
        {
            "retention.ms": " 1000 ",
            "cleanup.policy": "compact, delete",
            "preallocate": "TRUE",
            "min.cleanable.dirty.ratio": "0.25",
            "message.timestamp.type": "LogAppendTime",
        }
    )
    assert parsed == {
        "retention.ms": 1000,
        "cleanup.policy": ["compact", "delete"],
        "preallocate": True,
        "min.cleanable.dirty.ratio": 0.25,
        "message.timestamp.type": "LogAppendTime",
    }


def test_topic_defaults_follow_the_broker_configuration() -> None:
    config = make_config({"log.retention.hours": "24", "message.max.bytes": "5000"})
    entries = {e.name: e for e in describe_topic(config, {})}
    assert len(entries) == len(TOPIC_CONFIGS)
    retention = entries["retention.ms"]
    # Kafka's chain of log.retention.ms is cut before its first own-name entry: with only
    # log.retention.hours set, it is empty and the source DEFAULT_CONFIG (ConfigHelper).
    assert (retention.value, retention.source) == ("86400000", ConfigSource.DEFAULT_CONFIG)
    assert retention.synonyms == ()
    explicit = {e.name: e for e in describe_topic(make_config({"log.retention.ms": "5000"}), {})}
    assert [(s.name, s.value, s.source) for s in explicit["retention.ms"].synonyms] == [
        ("log.retention.ms", "5000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
    ]
    assert entries["max.message.bytes"].value == "5000"
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source) == ("delete", ConfigSource.DEFAULT_CONFIG)


def test_an_override_wins_and_leads_the_synonyms() -> None:
    entries = {e.name: e for e in describe_topic(make_config(), {"segment.bytes": "2048"})}
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source, segment.read_only) == (
        "2048",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        False,
    )
    assert [(s.name, s.source) for s in segment.synonyms] == [
        ("segment.bytes", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.segment.bytes", ConfigSource.DEFAULT_CONFIG),
    ]


def test_broker_description_marks_what_was_set_and_what_is_dynamic() -> None:
    config = make_config({"num.partitions": "3", "log.cleaner.threads": "2"})
    entries = {e.name: e for e in describe_broker(config, {}, {})}
    assert entries["num.partitions"].value == "3"
    assert entries["num.partitions"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["num.partitions"].read_only
    # A Kafka config minikafka does not act on is still accepted as set.
    assert entries["log.cleaner.threads"].value == "2"
    assert entries["log.cleaner.threads"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert not entries["log.cleaner.threads"].read_only
    assert entries["log.segment.bytes"].source == ConfigSource.DEFAULT_CONFIG
    assert not entries["log.segment.bytes"].read_only
    assert entries["log.cleanup.policy"].value == "delete"
    assert entries["ssl.key.password"].sensitive and entries["ssl.key.password"].value is None


def test_settings_turn_overrides_into_what_the_broker_acts_on() -> None:
    base = LogConfig()
    got = settings(
        make_config(),
        base,
        {
            "retention.ms": "1000",
            "retention.bytes": "4096",
            "segment.bytes": "1024",
            "segment.ms": "60000",
            "max.message.bytes": "300",
            "message.timestamp.type": "LogAppendTime",
        },
    )
    assert got.max_message_bytes == 300
    assert got.log_append_time and got.delete and not got.compact
    log_config = got.log_config
    assert (log_config.retention_ms, log_config.retention_bytes) == (1000, 4096)
    assert (log_config.segment_bytes, log_config.segment_ms) == (1024, 60000)


def test_compact_only_topics_are_never_deleted_by_retention() -> None:
    got = settings(make_config(), LogConfig(), {"cleanup.policy": "compact", "retention.ms": "1"})
    assert got.compact and not got.delete
    assert (got.log_config.retention_ms, got.log_config.retention_bytes) == (-1, -1)
    both = settings(make_config(), LogConfig(), {"cleanup.policy": "compact,delete"})
    assert both.compact and both.delete


def test_incremental_operations() -> None:
    current = {"retention.ms": "1000", "segment.ms": "5000"}
    ops = [
        ("retention.ms", 0, "2000"),
        ("segment.ms", 1, None),
        ("cleanup.policy", 2, "compact"),
    ]
    assert incremental(current, ops) == {
        "retention.ms": "2000",
        "cleanup.policy": "delete,compact",
    }
    assert incremental({"cleanup.policy": "delete,compact"}, [("cleanup.policy", 3, "delete")]) == {
        "cleanup.policy": "compact"
    }


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (("retention.ms", 2, "5"), "Config value append is not allowed for config key"),
        (("retention.ms", 9, "5"), "Unknown operations type 9"),
    ],
)
def test_incremental_refusals_are_invalid_request(op: tuple[str, int, str], message: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        incremental({}, [op])
    assert info.value.code == ErrorCode.INVALID_REQUEST
    assert message in info.value.message


def test_file_delete_delay_ms_follows_the_broker_and_a_topic_override() -> None:
    # Kafka's broker property log.segment.delete.delay.ms is the topic config's synonym.
    broker = make_config({"log.segment.delete.delay.ms": "2500"})
    assert broker.file_delete_delay_ms == 2500
    assert make_config({"file.delete.delay.ms": "7"}).file_delete_delay_ms == 7
    assert make_config().file_delete_delay_ms == 60000
    inherited = settings(broker, LogConfig(), {})
    assert inherited.log_config.file_delete_delay_ms == 2500
    own = settings(broker, LogConfig(), {"file.delete.delay.ms": "0"})
    assert own.log_config.file_delete_delay_ms == 0
    entry = {e.name: e for e in describe_topic(broker, {})}["file.delete.delay.ms"]
    assert (entry.value, entry.source) == ("2500", ConfigSource.STATIC_BROKER_CONFIG)
    assert TOPIC_CONFIGS["file.delete.delay.ms"].applied
