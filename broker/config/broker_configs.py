"""Broker and group configs as Kafka 4.0 describes and alters them.

The data is broker.config.broker_config_table (every KafkaConfig with its type, default and
whether it is dynamic); this module holds the rules:

- ``describe_broker``: DescribeConfigs of BROKER "<node id>" (ConfigHelper.
  createBrokerConfigEntry): every Kafka broker config, plus anything else set at start-up
  or dynamically (Kafka lists a config's "originals" too); value, source and synonyms from
  the chain dynamic-broker > dynamic-default > static > default (broker.config.synonyms);
  read_only unless dynamic; PASSWORD values hidden. Where minikafka acts on a setting the
  value and the default are minikafka's (broker.config), otherwise Kafka's defaults.
- ``describe_cluster_defaults``: BROKER "" lists only the cluster-wide dynamic configs.
- ``check_dynamic``: what DynamicBrokerConfig.validateConfigs refuses, with its messages
  (INVALID_REQUEST, as ConfigAdminManager wraps them, KAFKA-13609): non-dynamic configs,
  SSL keystore/truststore configs without a listener prefix, values that do not parse as
  the config's type, per-broker configs at the cluster-default level. Names Kafka does not
  know are accepted (custom configs, DynamicConfig.Broker allows them) and described as
  sensitive, with no value, as Kafka does for an unknown type.
- ``apply_operations``: IncrementalAlterConfigs' SET/DELETE/APPEND/SUBTRACT on the stored
  set (ConfigAdminManager.prepareIncrementalConfigs).
GROUP resources are broker.config.group_configs.

Deviations: dynamic values are stored (storage.broker_config_store) and described, but the
broker does not act on them yet: a running broker keeps its start-up settings, and topics
keep inheriting the static ones. Kafka's reconfiguration checks beyond the value's type
(ranges, e.g. log.cleaner.threads at most doubling) are not made. Documentation is
minikafka's own text (Kafka's is not recorded): what the setting does here, or that it is
accepted and not acted on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from broker.config.broker_config_table import (
    BROKER_CONFIGS,
    LISTENER_ONLY_SECURITY_CONFIGS,
    PER_BROKER_CONFIGS,
    ConfigSource,
    ConfigType,
)
from broker.config.model import Config
from broker.config.properties import ACCEPTED_IGNORED, PROPERTIES, Property
from broker.config.synonyms import BrokerValues, default_values, static_values, synonyms_of
from broker.config.topic_configs import TOPIC_CONFIGS, ConfigEntry, InvalidConfigError, parse_value
from protocol.errors import ErrorCode

_KNOWN: dict[str, Property] = {p.name: p for p in (*PROPERTIES, *ACCEPTED_IGNORED)}
_KIND_TYPES = {
    "int": ConfigType.INT,
    "long": ConfigType.LONG,
    "boolean": ConfigType.BOOLEAN,
    "list": ConfigType.LIST,
    # Holds passwords (minikafka.scram.bootstrap.users): described as sensitive, no value.
    "password": ConfigType.PASSWORD,
}
# Broker config -> the topic config it is the default of (ServerTopicConfigSynonyms).
_TOPIC_OF = {name: d.name for d in TOPIC_CONFIGS.values() for name in d.synonyms}


def values(
    config: Config, dynamic_default: Mapping[str, str], dynamic_broker: Mapping[str, str]
) -> BrokerValues:
    return BrokerValues(
        dynamic_broker, dynamic_default, static_values(config), default_values(config)
    )


def _type(name: str) -> ConfigType:
    definition = BROKER_CONFIGS.get(name)
    if definition is not None:
        return definition.type
    prop = _KNOWN.get(name)
    if prop is not None:
        return _KIND_TYPES.get(prop.kind.name, ConfigType.STRING)
    # KafkaConfig.configType of a custom config: unknown, hence treated as sensitive.
    return ConfigType.UNKNOWN


def _doc(name: str) -> str:
    prop = _KNOWN.get(name)
    if prop is not None and not prop.ignored:
        return prop.doc
    topic = _TOPIC_OF.get(name)
    if topic is not None:
        return f"Broker default of the topic config {topic}. {TOPIC_CONFIGS[topic].doc}"
    if name in BROKER_CONFIGS:
        return f"Kafka broker config {name}: accepted and described; minikafka does not act on it."
    return f"Custom config {name}: stored and described only."


def _entry(name: str, layers: BrokerValues, per_broker: bool) -> ConfigEntry:
    type_ = _type(name)
    sensitive = type_ in (ConfigType.PASSWORD, ConfigType.UNKNOWN)
    chain = synonyms_of(name, layers, sensitive)
    if not per_broker:
        # ConfigHelper: the cluster-default resource shows only cluster-default synonyms.
        chain = [s for s in chain if s.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
    own = next((s for s in chain if s.name == name), None)
    definition = BROKER_CONFIGS.get(name)
    return ConfigEntry(
        name=name,
        value=None if sensitive or own is None else own.value,
        source=chain[0].source if chain else ConfigSource.DEFAULT_CONFIG,
        read_only=definition is None or not definition.dynamic,
        type=type_,
        doc=_doc(name),
        synonyms=tuple(chain),
        sensitive=sensitive,
    )


def describe_broker(
    config: Config,
    dynamic_default: Mapping[str, str],
    dynamic_broker: Mapping[str, str],
    node_static: Mapping[str, str] | None = None,
) -> list[ConfigEntry]:
    """DescribeConfigs of this broker's own resource, sorted by name. ``node_static``: the
    start-up settings a simulated cluster's node has of its own (its id and rack), over the
    process's."""
    layers = values(config, dynamic_default, dynamic_broker)
    if node_static:
        layers = BrokerValues(
            layers.dynamic_broker,
            layers.dynamic_default,
            {**layers.static, **node_static},
            layers.defaults,
        )
    names = set(BROKER_CONFIGS) | set(layers.static) | set(dynamic_default) | set(dynamic_broker)
    return [_entry(name, layers, True) for name in sorted(names)]


def describe_cluster_defaults(
    config: Config, dynamic_default: Mapping[str, str]
) -> list[ConfigEntry]:
    """DescribeConfigs of the empty broker resource: the cluster-wide dynamic configs."""
    layers = values(config, dynamic_default, {})
    return [_entry(name, layers, False) for name in sorted(dynamic_default)]


def _scala_set(names: Iterable[str]) -> str:
    return f"Set({', '.join(names)})"


def check_dynamic(props: Mapping[str, str], per_broker: bool) -> None:
    """Refuse what DynamicBrokerConfig.validateConfigs refuses (INVALID_REQUEST)."""

    def refuse(names: list[str], message: str) -> None:
        if names:
            raise InvalidConfigError(f"{message}: {_scala_set(names)}", ErrorCode.INVALID_REQUEST)

    static = [
        n
        for n in props
        if (n in BROKER_CONFIGS and not BROKER_CONFIGS[n].dynamic)
        # minikafka's own settings (log.level, minikafka.*) are start-up settings too.
        or (n in _KNOWN and n not in BROKER_CONFIGS)
    ]
    refuse(static, "Cannot update these configs dynamically")
    refuse(
        [n for n in props if n in LISTENER_ONLY_SECURITY_CONFIGS],
        "These security configs can be dynamically updated only per-listener using the "
        "listener prefix",
    )
    for name, raw in props.items():
        definition = BROKER_CONFIGS.get(name)
        if definition is not None:
            try:
                parse_value(name, definition.type, raw)
            except InvalidConfigError as exc:
                raise InvalidConfigError(exc.message, ErrorCode.INVALID_REQUEST) from None
    if not per_broker:
        refuse(
            [n for n in props if n in PER_BROKER_CONFIGS],
            "Cannot update these configs at default cluster level, broker id must be specified",
        )


def apply_operations(
    current: Mapping[str, str], operations: Iterable[tuple[str, int, str | None]]
) -> dict[str, str]:
    """IncrementalAlterConfigs ops (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT) on a broker's
    stored dynamic configs; APPEND/SUBTRACT only on LIST configs, starting from the default."""
    result = dict(current)
    for name, op, value in operations:
        if op == 0:
            result[name] = value or ""
        elif op == 1:
            result.pop(name, None)
        elif op in (2, 3):
            verb = "append" if op == 2 else "subtract"
            definition = BROKER_CONFIGS.get(name)
            if definition is None:
                raise InvalidConfigError(f"Unknown config name: {name}")
            if definition.type != ConfigType.LIST:
                raise InvalidConfigError(
                    f"Config value {verb} is not allowed for config key: {name}",
                    ErrorCode.INVALID_REQUEST,
                )
            old = result.get(name, definition.default or "")
            items = [i for i in old.split(",") if i]
            change = [i for i in (value or "").split(",") if i]
            if op == 2:
                items += [i for i in change if i not in items]
            else:
                items = [i for i in items if i not in change]
            result[name] = ",".join(items)
        else:
            raise InvalidConfigError(f"Unknown operations type {op}", ErrorCode.INVALID_REQUEST)
    return result
