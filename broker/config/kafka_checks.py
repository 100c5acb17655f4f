"""Kafka's checks on the broker configs minikafka accepts without acting on them, and which
properties set at start-up change nothing here.

broker.config parses and checks the properties it uses (``PROPERTIES``). Every other Kafka
broker config is accepted so that Kafka's configurations load unchanged; Kafka's ConfigDef
still refuses a value of the wrong type or outside its range or choices
(``compression.type=brotli``: "Invalid value brotli for configuration compression.type:
String must be one of: ..."), and so does minikafka, at start-up:

- the type, for every config of Kafka 4.0's KafkaConfig (broker.config.broker_config_table);
- the range or choices of a topic config's broker synonym, which Kafka's ServerLogConfigs
  declares with the topic config's validator (broker.config.topic_configs);
- the validators of the broker-only configs below, from Kafka 4.0's ServerConfigs,
  SocketServerConfigs, ReplicationConfigs, GroupCoordinatorConfig, TransactionLogConfigs,
  CleanerConfig and KRaftConfigs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from broker.config.broker_config_table import BROKER_CONFIGS, ConfigType
from broker.config.model import ConfigError
from broker.config.properties import ACCEPTED_IGNORED, PROPERTIES
from broker.config.topic_configs import TOPIC_CONFIGS, InvalidConfigError, parse_value

__all__ = ["check", "without_effect"]

Check = Callable[[Any], str | None]


def _at_least(minimum: int) -> Check:
    return lambda v: None if v >= minimum else f"Value must be at least {minimum}"


def _one_of(*options: str) -> Check:
    def check(value: Any) -> str | None:
        items = value if isinstance(value, list) else [value]
        bad = [item for item in items if item not in options]
        return f"String must be one of: {', '.join(options)}" if bad else None

    return check


_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# Broker-only configs' validators (Kafka 4.0 ConfigDef), for those minikafka does not use.
_BROKER_CHECKS: dict[str, Check] = {
    # ServerConfigs
    "background.threads": _at_least(1),
    "num.io.threads": _at_least(1),
    "num.network.threads": _at_least(1),
    "num.recovery.threads.per.data.dir": _at_least(1),
    "num.replica.alter.log.dirs.threads": _at_least(1),
    "log.flush.offset.checkpoint.interval.ms": _at_least(0),
    "log.flush.start.offset.checkpoint.interval.ms": _at_least(0),
    "log.cleaner.threads": _at_least(0),
    "log.cleaner.backoff.ms": _at_least(0),
    "log.initial.task.delay.ms": _at_least(0),
    "replica.fetch.max.bytes": _at_least(0),
    "replica.fetch.response.max.bytes": _at_least(0),
    "leader.imbalance.check.interval.seconds": _at_least(1),
    "delete.records.purgatory.purge.interval.requests": _at_least(1),
    # Internal topics: there are none here, but Kafka checks them whatever they serve.
    "offsets.topic.replication.factor": _at_least(1),
    "offsets.topic.num.partitions": _at_least(1),
    "offsets.topic.segment.bytes": _at_least(1),
    "offsets.load.buffer.size": _at_least(1),
    "offsets.commit.timeout.ms": _at_least(1),
    "transaction.state.log.replication.factor": _at_least(1),
    "transaction.state.log.num.partitions": _at_least(1),
    "transaction.state.log.min.isr": _at_least(1),
    "transaction.state.log.segment.bytes": _at_least(1),
    "transaction.state.log.load.buffer.size": _at_least(1),
    "group.max.size": _at_least(1),
    # KRaftConfigs, SocketServerConfigs
    "process.roles": _one_of("broker", "controller"),
    "security.inter.broker.protocol": _one_of(*_SECURITY_PROTOCOLS),
}

# A topic config's broker synonyms are checked with the topic config's validator, as
# ServerLogConfigs declares them.
_SYNONYM_CHECKS: dict[str, Check] = {
    broker_name: definition.check
    for definition in TOPIC_CONFIGS.values()
    if definition.check is not None
    for broker_name in definition.synonyms
}

_USED = {p.name for p in PROPERTIES} | {a for p in PROPERTIES for a in p.aliases}
# Read by broker.security.settings (listener security, SASL, TLS, the authorizer).
_SECURITY = frozenset(
    {
        "allow.everyone.if.no.acl.found",
        "authorizer.class.name",
        "connections.max.reauth.ms",
        "principal.builder.class",
        "sasl.enabled.mechanisms",
        "sasl.server.callback.handler.class",
        "sasl.server.max.receive.size",
        "ssl.client.auth",
        "ssl.enabled.protocols",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.location",
        "ssl.principal.mapping.rules",
        "ssl.truststore.certificates",
        "ssl.truststore.location",
        "super.users",
    }
)
_IGNORED = {p.name for p in ACCEPTED_IGNORED}


def check(merged: Mapping[str, tuple[str, str]], spelled: Mapping[str, str]) -> None:
    """Raise ConfigError for a value Kafka's ConfigDef refuses; ``merged`` is canonical
    name -> (raw value, origin), ``spelled`` the name as the user wrote it."""
    for name, (raw, origin) in merged.items():
        if name in _USED:
            continue  # broker.config's own parsing and checks
        definition = BROKER_CONFIGS.get(name)
        if definition is None or definition.type in (ConfigType.PASSWORD, ConfigType.CLASS):
            continue
        key = spelled.get(name, name)
        try:
            value = parse_value(name, definition.type, raw)
        except InvalidConfigError as exc:
            reason = exc.message.split(f"configuration {name}: ", 1)[-1]
            raise ConfigError(key, f"{raw.strip()!r}: {reason} (from {origin})") from None
        rule = _BROKER_CHECKS.get(name) or _SYNONYM_CHECKS.get(name)
        if rule is None:
            continue
        if definition.type == ConfigType.LIST and not isinstance(value, list):
            value = [value]
        problem = rule(value)
        if problem is not None:
            raise ConfigError(key, f"{raw.strip()!r}: {problem} (from {origin})")


def without_effect(names: Iterable[str]) -> list[str]:
    """The names among those set that this broker accepts and does not act on."""
    return sorted(
        name
        for name in names
        if name not in _USED
        and name not in _SECURITY
        and not name.startswith("listener.name.")
        and (name in BROKER_CONFIGS or name in _IGNORED)
    )
