"""broker.config.group_configs: Kafka 4.0's GroupConfig checks, operations and descriptions."""

from __future__ import annotations

import pytest

from broker.config.broker_config_table import ConfigSource
from broker.config.group_configs import apply_operations, check, defaults, describe
from broker.config.loader import load_config
from broker.config.model import Config
from broker.config.topic_configs import InvalidConfigError
from protocol.errors import ErrorCode


def config(*overrides: str) -> Config:
    loaded, _warnings, _sources = load_config(None, {}, list(overrides))
    return loaded


def refusal(overrides: dict[str, str], *settings: str) -> tuple[int, str]:
    with pytest.raises(InvalidConfigError) as caught:
        check(config(*settings), "g", overrides)
    return caught.value.code, caught.value.message


def test_defaults_come_from_the_broker() -> None:
    assert defaults(config("group.consumer.session.timeout.ms=50000")) == {
        "consumer.session.timeout.ms": "50000",
        "consumer.heartbeat.interval.ms": "5000",
        "share.session.timeout.ms": "45000",
        "share.heartbeat.interval.ms": "5000",
        "share.record.lock.duration.ms": "30000",
        "share.auto.offset.reset": "latest",
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"share.record.lock.duration.ms": "999"},
            "Invalid value 999 for configuration share.record.lock.duration.ms: "
            "Value must be at least 1000",
        ),
        (
            {"share.record.lock.duration.ms": "14999"},
            "share.record.lock.duration.ms must be greater than or equal to "
            "group.share.min.record.lock.duration.ms",
        ),
        (
            {"share.session.timeout.ms": "60001"},
            "share.session.timeout.ms must be less than or equal to "
            "group.share.max.session.timeout.ms",
        ),
        (
            {"consumer.heartbeat.interval.ms": "15001", "consumer.session.timeout.ms": "45000"},
            "consumer.heartbeat.interval.ms must be less than or equal to "
            "group.consumer.max.heartbeat.interval.ms",
        ),
    ],
)
def test_values_are_checked_against_the_broker_bounds(
    overrides: dict[str, str], message: str
) -> None:
    assert refusal(overrides) == (ErrorCode.INVALID_CONFIG, message)


def test_session_must_exceed_heartbeat() -> None:
    assert refusal(
        {"consumer.session.timeout.ms": "5000", "consumer.heartbeat.interval.ms": "5000"},
        "group.consumer.min.session.timeout.ms=1000",
    ) == (
        ErrorCode.INVALID_CONFIG,
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
    )


@pytest.mark.parametrize("value", ["earliest", "LATEST", "by_duration:PT1H", "by_duration:P1DT2M"])
def test_share_auto_offset_reset_accepts_kafkas_strategies(value: str) -> None:
    check(config(), "g", {"share.auto.offset.reset": value})


@pytest.mark.parametrize("value", ["newest", "by_duration:1h", "by_duration:-PT1H"])
def test_share_auto_offset_reset_refuses_others(value: str) -> None:
    code, message = refusal({"share.auto.offset.reset": value})
    assert code == ErrorCode.INVALID_CONFIG
    assert "The value must be either 'earliest', 'latest' or of the format" in message


def test_operations_set_and_delete_only() -> None:
    current = {"consumer.session.timeout.ms": "50000"}
    assert apply_operations(
        current,
        [("consumer.session.timeout.ms", 1, None), ("consumer.heartbeat.interval.ms", 0, "6000")],
    ) == {"consumer.heartbeat.interval.ms": "6000"}
    with pytest.raises(InvalidConfigError) as caught:
        apply_operations(current, [("consumer.session.timeout.ms", 3, "1")])
    assert caught.value.message == (
        "Can't SUBTRACT to key consumer.session.timeout.ms because its type is not LIST."
    )


def test_described_values_name_their_source() -> None:
    entries = {e.name: e for e in describe(config(), {"consumer.session.timeout.ms": "50000"})}
    session = entries["consumer.session.timeout.ms"]
    assert (session.value, session.source) == ("50000", ConfigSource.GROUP_CONFIG)
    assert [(s.name, s.value, s.source) for s in session.synonyms] == [
        ("consumer.session.timeout.ms", "50000", ConfigSource.GROUP_CONFIG)
    ]
    heartbeat = entries["consumer.heartbeat.interval.ms"]
    assert (heartbeat.value, heartbeat.source) == ("5000", ConfigSource.DEFAULT_CONFIG)
