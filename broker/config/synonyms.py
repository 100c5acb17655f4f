"""Where a broker-level config value comes from: Kafka's synonym chain.

Kafka's ConfigHelper.configSynonyms lists, for a config and the names that stand for the same
setting (DynamicBrokerConfig.brokerConfigSynonyms: log.roll.ms/log.roll.hours, ...), every
place a value is set, strongest first: DYNAMIC_BROKER_CONFIG (this node), then
DYNAMIC_DEFAULT_BROKER_CONFIG (cluster-wide), STATIC_BROKER_CONFIG (server.properties,
environment, --override), DEFAULT_CONFIG; then it drops the entries before the first one
with the config's own name ("dropWhile"), which is why log.retention.ms, unset, has no
synonyms although log.retention.hours has a default. Both the broker resource and the
topic resource (through the broker config behind a topic config) describe synonyms this way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from broker.config.broker_config_table import (
    BROKER_CONFIGS,
    FLUSH_SYNONYMS,
    SYNONYM_GROUPS,
    ConfigSource,
)
from broker.config.model import Config
from broker.config.properties import PROPERTIES


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class BrokerValues:
    """Every layer of broker configuration, each a name -> raw value map."""

    dynamic_broker: Mapping[str, str]
    dynamic_default: Mapping[str, str]
    static: Mapping[str, str]
    defaults: Mapping[str, str]


def broker_synonyms(name: str) -> tuple[str, ...]:
    """DynamicBrokerConfig.brokerConfigSynonyms (without listener-prefixed names)."""
    if name == FLUSH_SYNONYMS[0]:
        return FLUSH_SYNONYMS
    for group in SYNONYM_GROUPS:
        if name in group:
            return group
    return (name,)


def static_values(config: Config) -> dict[str, str]:
    """What was set at start-up (Kafka's staticBrokerConfigs)."""
    values = dict(config.explicit)
    # KafkaConfig.populateSynonyms: node.id and broker.id stand for each other.
    if "node.id" in values:
        values.setdefault("broker.id", values["node.id"])
    return values


def default_values(config: Config) -> dict[str, str]:
    """Kafka's defaults (staticDefaultConfigs), except where minikafka has its own default:
    that is the value it acts on (group.initial.rebalance.delay.ms, node.id, listeners...)."""
    values = {n: d.default for n, d in BROKER_CONFIGS.items() if d.default is not None}
    for prop in PROPERTIES:
        if prop.default is not None:
            values[prop.name] = prop.default
    if "node.id" not in dict(config.explicit):
        # Kafka cannot start without node.id; minikafka defaults it, and broker.id with it.
        values["broker.id"] = values["node.id"]
    return values


def synonyms_of(
    name: str, values: BrokerValues, sensitive: bool = False, names: tuple[str, ...] = ()
) -> list[Synonym]:
    """ConfigHelper.configSynonyms for ``name`` (values hidden when sensitive)."""
    chain: list[Synonym] = []
    layers = (
        (ConfigSource.DYNAMIC_BROKER_CONFIG, values.dynamic_broker),
        (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, values.dynamic_default),
        (ConfigSource.STATIC_BROKER_CONFIG, values.static),
        (ConfigSource.DEFAULT_CONFIG, values.defaults),
    )
    for source, layer in layers:
        for synonym in names or broker_synonyms(name):
            if synonym in layer:
                chain.append(Synonym(synonym, None if sensitive else layer[synonym], source))
    while chain and chain[0].name != name:
        chain.pop(0)
    return chain
