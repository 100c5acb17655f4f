"""Group configs as Kafka 4.0 checks, stores and describes them (GROUP resources, type 32).

Kafka 4.0's GroupConfig defines six per-group settings; their defaults come from the broker
(GroupCoordinatorConfig.extractGroupConfigMap) except share.auto.offset.reset:

- ``check``: ControllerConfigurationValidator for GROUP (GroupConfigManager.validate): an
  empty group name -> INVALID_REQUEST "Default group resources are not allowed."; a name
  GroupConfig does not define -> INVALID_CONFIG "Unknown group config name: x"; then the
  group's whole set, over the broker's values, parsed as ConfigDef does (not an int, below
  the definition's minimum: ConfigException's "Invalid value ... for configuration ...") and
  checked against the broker's bounds (group.consumer.min/max.session.timeout.ms,
  group.consumer.min/max.heartbeat.interval.ms, the share.* equivalents) and
  session > heartbeat, with GroupConfig.validateValues' messages, all INVALID_CONFIG.
- ``apply_operations``: ConfigurationControlManager.incrementalAlterConfigResource: SET,
  DELETE; APPEND/SUBTRACT -> INVALID_CONFIG "Can't APPEND to key x because its type is not
  LIST." (no group config is a LIST).
- ``describe``: ConfigHelper.createGroupConfigEntry: every group config with its value;
  source GROUP_CONFIG for a stored override, else DEFAULT_CONFIG; one synonym (the value
  itself, same source); read_only false.
KIP-848 consumer groups act on consumer.session.timeout.ms and consumer.heartbeat.interval.ms
per group (broker.coordinator.groups.consumer_manager, as GroupMetadataManager's
consumerGroupSessionTimeoutMs/HeartbeatIntervalMs); share groups (minikafka.share.version
>= 1) on the share.* ones, and then on a seventh, Kafka 4.1+'s share.isolation.level.

A group needs not exist to have configs, as in Kafka (no existence check for GROUP).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from broker.config.broker_config_table import ConfigSource, ConfigType
from broker.config.broker_configs import values
from broker.config.model import Config
from broker.config.synonyms import Synonym, synonyms_of
from broker.config.topic_configs import ConfigEntry, InvalidConfigError, parse_value
from protocol.errors import ErrorCode

SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
SHARE_SESSION_TIMEOUT = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK = "share.record.lock.duration.ms"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    type: ConfigType
    # The broker config its default comes from, or None for ``fixed``.
    broker_default: str | None
    fixed: str
    minimum: int | None
    doc: str


_DEFS = (
    GroupConfigDef(
        SESSION_TIMEOUT,
        ConfigType.INT,
        "group.consumer.session.timeout.ms",
        "",
        1,
        "The timeout to detect client failures when using the consumer group protocol: "
        "a member not heard from within it is fenced. Acted on per group.",
    ),
    GroupConfigDef(
        HEARTBEAT_INTERVAL,
        ConfigType.INT,
        "group.consumer.heartbeat.interval.ms",
        "",
        1,
        "The heartbeat interval given to the members of a consumer group. Acted on per group.",
    ),
    GroupConfigDef(
        SHARE_SESSION_TIMEOUT,
        ConfigType.INT,
        "group.share.session.timeout.ms",
        "",
        1,
        "Share groups' session timeout: stored and described (no share groups here).",
    ),
    GroupConfigDef(
        SHARE_HEARTBEAT_INTERVAL,
        ConfigType.INT,
        "group.share.heartbeat.interval.ms",
        "",
        1,
        "Share groups' heartbeat interval: stored and described (no share groups here).",
    ),
    GroupConfigDef(
        SHARE_RECORD_LOCK,
        ConfigType.INT,
        "group.share.record.lock.duration.ms",
        "",
        1000,
        "Share groups' record lock duration: stored and described (no share groups here).",
    ),
    GroupConfigDef(
        SHARE_AUTO_OFFSET_RESET,
        ConfigType.STRING,
        None,
        "latest",
        None,
        "Where a share group starts: stored and described (no share groups here).",
    ),
)
# Kafka 4.1+'s GroupConfig adds share.isolation.level (default read_uncommitted): a group
# config only where share groups are served (minikafka.share.version >= 1, playing Kafka
# 4.4.0), so Kafka 4.0's six stay as they were otherwise.
_ISOLATION = GroupConfigDef(
    SHARE_ISOLATION_LEVEL,
    ConfigType.STRING,
    None,
    "read_uncommitted",
    None,
    "Controls how to read records written transactionally: read_committed delivers only "
    "committed records, below the last stable offset; read_uncommitted all of them.",
)
GROUP_CONFIGS: dict[str, GroupConfigDef] = {d.name: d for d in (*_DEFS, _ISOLATION)}


def _defs(config: Config) -> tuple[GroupConfigDef, ...]:
    return (*_DEFS, _ISOLATION) if config.share_version >= 1 else _DEFS


# GroupConfig.validateValues: (config, broker minimum, broker maximum), in Kafka's order.
_BOUNDS = tuple(
    (name, f"group.{kind}.min.{setting}", f"group.{kind}.max.{setting}")
    for name, kind, setting in (
        (HEARTBEAT_INTERVAL, "consumer", "heartbeat.interval.ms"),
        (SESSION_TIMEOUT, "consumer", "session.timeout.ms"),
        (SHARE_HEARTBEAT_INTERVAL, "share", "heartbeat.interval.ms"),
        (SHARE_SESSION_TIMEOUT, "share", "session.timeout.ms"),
        (SHARE_RECORD_LOCK, "share", "record.lock.duration.ms"),
    )
)

# java.time.Duration.parse's text (PnDTnHnMn.nS), case-insensitive.
_DURATION = re.compile(
    r"[-+]?P(?:[-+]?\d+D)?(?:T(?=[-+]?\d)(?:[-+]?\d+H)?(?:[-+]?\d+M)?(?:[-+]?\d+(?:[.,]\d{0,9})?S)?)?",
    re.IGNORECASE,
)


def _broker_value(config: Config, name: str) -> str:
    chain = synonyms_of(name, values(config, {}, {}))
    value = chain[0].value if chain else None
    return value if value is not None else ""


def defaults(config: Config) -> dict[str, str]:
    """Every group config's value for a group without overrides."""
    return {
        d.name: d.fixed if d.broker_default is None else _broker_value(config, d.broker_default)
        for d in _defs(config)
    }


def _auto_offset_reset_error(value: str) -> str | None:
    """ShareGroupAutoOffsetResetStrategy.fromString's refusal, worded as its Validator."""
    text = value.strip().lower()
    if text in ("earliest", "latest"):
        return None
    prefix = "by_duration:"
    if text.startswith(prefix):
        duration = value.strip()[len(prefix) :]
        if _DURATION.fullmatch(duration) and not duration.startswith("-"):
            return None
    return (
        f"Invalid value `{value}` for configuration {SHARE_AUTO_OFFSET_RESET}. The value must be "
        "either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
    )


def check(config: Config, group: str, overrides: Mapping[str, str]) -> None:
    """Refuse what Kafka 4.0's controller refuses for this group's new set of overrides."""
    if group == "":
        raise InvalidConfigError(
            "Default group resources are not allowed.", ErrorCode.INVALID_REQUEST
        )
    known = {d.name for d in _defs(config)}
    for name in overrides:
        if name not in known:
            raise InvalidConfigError(f"Unknown group config name: {name}")
    combined = {**defaults(config), **overrides}
    parsed: dict[str, int] = {}
    for definition in _defs(config):
        raw = combined[definition.name]
        if definition.name == SHARE_ISOLATION_LEVEL:
            if raw not in ISOLATION_LEVELS:
                # ConfigDef's ValidString.in(...) refusal.
                raise InvalidConfigError(
                    f"Invalid value {raw} for configuration {definition.name}: "
                    f"String must be one of: {', '.join(ISOLATION_LEVELS)}"
                )
            continue
        if definition.type is ConfigType.STRING:
            reason = _auto_offset_reset_error(raw)
            if reason is not None:
                raise InvalidConfigError(
                    f"Invalid value {raw} for configuration {definition.name}: {reason}"
                )
            continue
        value = int(parse_value(definition.name, definition.type, raw))
        if definition.minimum is not None and value < definition.minimum:
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration {definition.name}: "
                f"Value must be at least {definition.minimum}"
            )
        parsed[definition.name] = value
    for name, low, high in _BOUNDS:
        if parsed[name] < int(_broker_value(config, low)):
            raise InvalidConfigError(f"{name} must be greater than or equal to {low}")
        if parsed[name] > int(_broker_value(config, high)):
            raise InvalidConfigError(f"{name} must be less than or equal to {high}")
    for session, heartbeat in (
        (SESSION_TIMEOUT, HEARTBEAT_INTERVAL),
        (SHARE_SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL),
    ):
        if parsed[session] <= parsed[heartbeat]:
            raise InvalidConfigError(f"{session} must be greater than {heartbeat}")


def apply_operations(
    current: Mapping[str, str], operations: Iterable[tuple[str, int, str | None]]
) -> dict[str, str]:
    """IncrementalAlterConfigs ops (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT) on a group's
    stored overrides."""
    result = dict(current)
    for name, op, value in operations:
        if op == 0:
            result[name] = value or ""
        elif op == 1:
            result.pop(name, None)
        elif op in (2, 3):
            verb = "APPEND" if op == 2 else "SUBTRACT"
            raise InvalidConfigError(f"Can't {verb} to key {name} because its type is not LIST.")
        else:
            raise InvalidConfigError(f"Unknown operations type {op}", ErrorCode.INVALID_REQUEST)
    return result


def describe(config: Config, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """DescribeConfigs of a GROUP resource (ConfigHelper.createGroupConfigEntry)."""
    base = defaults(config)
    entries = []
    for definition in _defs(config):
        name = definition.name
        source = ConfigSource.GROUP_CONFIG if name in overrides else ConfigSource.DEFAULT_CONFIG
        value = overrides.get(name, base[name])
        if definition.type is ConfigType.INT:
            value = str(int(value.strip()))  # ConfigDef.convertToString of the parsed int
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=source,
                read_only=False,
                type=definition.type,
                doc=definition.doc,
                synonyms=(Synonym(name, value, source),),
            )
        )
    return entries
