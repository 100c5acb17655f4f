"""Broker configuration: Kafka's property names, from a file, the environment and flags.

Sources, later ones winning (the same layering Kafka users know from
``kafka-server-start.sh server.properties --override k=v`` and the apache/kafka image):

1. a Java-properties file (``server.properties``);
2. ``KAFKA_<PROPERTY>`` environment variables, mapped as the apache/kafka Docker image
   maps them (``.`` -> ``_``, ``_`` -> ``__``, ``-`` -> ``___``, upper-cased);
3. ``--override key=value`` flags.

Every supported property is described once, in ``PROPERTIES``; defaults, ``--help`` and
validation all come from that table. The rest of Kafka's broker configs
(broker.config.broker_config_table) are accepted and not acted on, but checked as Kafka's ConfigDef
checks them (broker.config.kafka_checks; the start-up log names them); unknown properties are
warned about, never fatal (Kafka logs "was supplied but isn't a known config" and carries
on); invalid values stop
start-up with a ``ConfigError`` naming the property, as Kafka's ``ConfigException`` does.

Deviations from Apache Kafka:
- ``listeners`` defaults to loopback (``PLAINTEXT://127.0.0.1:9092``), not all interfaces.
- Listener security (SSL, SASL_PLAINTEXT, SASL_SSL) is read by broker.security.settings,
  with its deviations; only one log directory is supported.
- KRaft/controller properties are accepted so that a stock KRaft ``server.properties``
  loads unchanged, but there is no controller: a listener named in
  ``controller.listener.names`` is not served.
- The properties file is read as UTF-8 (Java's ``Properties.load`` reads ISO-8859-1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from broker.config.broker_config_table import BROKER_CONFIGS
from broker.config.listeners import build_listeners, console_listener, control_listener
from broker.config.model import Config, ConfigError
from broker.config.properties import (
    ACCEPTED_IGNORED,
    ALIASES,
    AUTHORIZER_PROPERTIES,
    BY_NAME,
    LISTENER_PREFIX,
    PROPERTIES,
)
from broker.config.sources import env_properties, parse_overrides, read_file
from broker.security import settings as security_settings


def load_config(
    argv_file: str | None,
    env: Mapping[str, str],
    overrides: Iterable[str],
    *,
    origins: Mapping[str, str] | None = None,
) -> tuple[Config, list[str], dict[str, str]]:
    """Build the configuration from a properties file, environment and overrides.

    Returns the config, warnings to log, and for each explicitly set property (canonical
    name) the source that set it last: ``"file"``, ``"env"`` or ``"override"``.
    ``origins`` names where an override came from when it was not ``--override`` (the
    Python API's keyword arguments), for messages.
    Raises ConfigError on an invalid value or an unreadable file.
    """
    layers: list[tuple[str, str, dict[str, tuple[str, str]]]] = []
    if argv_file is not None:
        layers.append(("file", f"file {argv_file}", read_file(argv_file)))
    layers.append(("env", "environment", env_properties(env)))
    given = parse_overrides(overrides)
    if origins:
        given = {k: (v, origins.get(k, origin)) for k, (v, origin) in given.items()}
    layers.append(("override", "--override", given))

    warnings: list[str] = []
    merged: dict[str, tuple[str, str]] = {}  # canonical name -> (raw value, origin)
    spelled: dict[str, str] = {}  # canonical name -> the spelling the user wrote
    sources: dict[str, str] = {}
    summary: list[str] = []
    for source, label, props in layers:
        seen: dict[str, str] = {}  # canonical name -> key, within this source
        for key in _order_canonical_last(props):
            value, origin = props[key]
            name = ALIASES.get(key, key)
            # Every Kafka broker config is accepted (and described as set by DescribeConfigs);
            # minikafka acts only on those in PROPERTIES.
            if not is_known_property(name):
                warnings.append(f"unknown property {key!r} (from {origin}) is ignored")
                continue
            if name in seen and props[seen[name]][0].strip() != value.strip():
                warnings.append(
                    f"{label} sets both {key} and {seen[name]}; using {key}={value.strip()}"
                )
            seen[name] = key
            merged[name] = (value, origin)
            spelled[name] = key
            sources[name] = source
        if seen:
            summary.append(f"{label} ({len(seen)} set)")

    values: dict[str, Any] = {}
    for prop in PROPERTIES:
        raw, origin = merged.get(prop.name, (prop.default, "default"))
        if raw is None:
            values[prop.name] = None
            continue
        try:
            value = prop.kind.parse(raw)
            if prop.validator is not None and value is not None:
                prop.validator(value)
        except ValueError as exc:
            raise ConfigError(spelled.get(prop.name, prop.name), f"{exc} (from {origin})") from None
        values[prop.name] = value

    # Imported here: it uses broker.config.topic_configs, which imports this module.
    from broker.config import kafka_checks as kafka_config_checks

    kafka_config_checks.check(merged, spelled)
    raw_values = {name: value for name, (value, _) in merged.items()}
    listeners = build_listeners(values, raw_values)
    warnings.extend(
        security_settings.unsecured_oauthbearer_warning(listener.name)
        for listener in listeners
        if listener.security.sasl is not None
        and security_settings.OAUTHBEARER in listener.security.sasl.mechanisms
    )
    try:
        security_settings.check_unsupported(raw_values)
        authorizer = security_settings.authorizer(raw_values)
    except security_settings.SettingError as exc:
        raise ConfigError(exc.prop, exc.message) from None
    _check_socket_server(values)
    _check_cluster(values)
    if values["default.replication.factor"] > values["minikafka.cluster.size"]:
        warnings.append(
            f"default.replication.factor={values['default.replication.factor']}: "
            f"minikafka.cluster.size={values['minikafka.cluster.size']}: topics get at most "
            "that many replicas"
        )

    attrs = {p.attr: values[p.name] for p in PROPERTIES if p.attr is not None}
    attrs.update(_derived_times(values))
    attrs["control_host"], attrs["control_port"] = control_listener(
        values["minikafka.control.listener"], values["minikafka.control.allow.remote"]
    )
    attrs["console_host"], attrs["console_port"] = console_listener(
        values["minikafka.console.listener"], values["minikafka.console.allow.remote"]
    )
    config = Config(
        listeners=listeners,
        authorizer=authorizer,
        source_summary=", ".join(summary) or "defaults",
        explicit=tuple(sorted((name, raw) for name, (raw, _) in merged.items())),
        **attrs,
    )
    return config, warnings, sources


_NEVER = 2**63 - 1
# Kafka's failed.authentication.delay.ms default: connections.max.idle.ms must exceed it.
_FAILED_AUTHENTICATION_DELAY_MS = 100


def _check_socket_server(values: Mapping[str, Any]) -> None:
    """KafkaConfig.validateValues' checks on the socket server settings."""
    queued = values["queued.max.request.bytes"]
    if 0 < queued < values["socket.request.max.bytes"]:
        raise ConfigError(
            "queued.max.request.bytes",
            "must be larger or equal to socket.request.max.bytes",
        )
    if values["max.connections.per.ip"] == 0 and not values["max.connections.per.ip.overrides"]:
        raise ConfigError(
            "max.connections.per.ip",
            "can be set to zero only if max.connections.per.ip.overrides property is set",
        )
    idle = values["connections.max.idle.ms"]
    if 0 <= idle <= _FAILED_AUTHENTICATION_DELAY_MS:
        raise ConfigError(
            "connections.max.idle.ms",
            f"failed.authentication.delay.ms={_FAILED_AUTHENTICATION_DELAY_MS} should always "
            f"be less than connections.max.idle.ms={idle}",
        )


def _check_cluster(values: Mapping[str, Any]) -> None:
    racks = values["minikafka.cluster.racks"]
    size = values["minikafka.cluster.size"]
    if racks and len(racks.split(",")) != size:
        raise ConfigError(
            "minikafka.cluster.racks",
            f"names {len(racks.split(','))} rack(s) for minikafka.cluster.size={size} nodes: "
            "give one rack per node",
        )
    if racks and any(not r.strip() for r in racks.split(",")):
        raise ConfigError("minikafka.cluster.racks", "a rack name is empty")


def _derived_times(values: Mapping[str, Any]) -> dict[str, int]:
    """Kafka's precedence: *.ms beats *.minutes beats *.hours."""
    if values["log.retention.ms"] is not None:
        retention_ms = values["log.retention.ms"]
    elif values["log.retention.minutes"] is not None:
        retention_ms = values["log.retention.minutes"] * 60_000
    else:
        retention_ms = values["log.retention.hours"] * 3_600_000
    if retention_ms < 0:
        retention_ms = -1
    segment_ms = values["log.roll.ms"]
    if segment_ms is None:
        segment_ms = values["log.roll.hours"] * 3_600_000
    flush_ms = values["log.flush.interval.ms"]
    scheduler = values["log.flush.scheduler.interval.ms"]
    # Kafka only checks flush.ms every log.flush.scheduler.interval.ms (default: never), so
    # flush.ms alone does nothing there. Deviation: setting flush.ms here is enough; it is
    # checked every second unless the scheduler interval says otherwise.
    if scheduler is None:
        scheduler = 1000 if flush_ms is not None else _NEVER
    offsets_retention_ms = values["minikafka.offsets.retention.ms"]
    if offsets_retention_ms is None:
        # GroupCoordinatorConfig.offsetsRetentionMs: minutes * 60 * 1000.
        offsets_retention_ms = values["offsets.retention.minutes"] * 60_000
    return {
        "retention_ms": retention_ms,
        "offsets_retention_ms": offsets_retention_ms,
        "segment_ms": segment_ms,
        "flush_ms": _NEVER if flush_ms is None else flush_ms,
        "flush_scheduler_interval_ms": scheduler,
    }


def _order_canonical_last(props: Mapping[str, object]) -> list[str]:
    # Within one source the canonical name beats its alias (Kafka prefers log.dirs over
    # log.dir), whatever order they were written in.
    return sorted(props, key=lambda k: k in BY_NAME)


def make_config(
    properties: Mapping[str, str] | None = None, origins: Mapping[str, str] | None = None
) -> Config:
    """A Config from defaults plus ``properties`` (Kafka names), e.g. for tests; ``origins``
    says where each came from, for messages (default ``--override``)."""
    overrides = [f"{k}={v}" for k, v in (properties or {}).items()]
    return load_config(None, {}, overrides, origins=origins)[0]


def is_known_property(name: str) -> bool:
    """A property the broker reads, or one of Kafka's it accepts (a known spelling)."""
    name = ALIASES.get(name, name)
    return (
        name in BY_NAME
        or name in BROKER_CONFIGS
        or name in AUTHORIZER_PROPERTIES
        or name.startswith(LISTENER_PREFIX)
    )


def closest_property(name: str) -> str | None:
    """The known property name nearest to a misspelt one, if one is near enough."""
    import difflib  # only for a name that is no property: a start that is about to fail

    names = [*BY_NAME, *ALIASES, *BROKER_CONFIGS, *AUTHORIZER_PROPERTIES]
    found = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
    return found[0] if found else None


def properties_help() -> str:
    """The property reference printed by ``minikafka --help``."""
    lines = ["supported properties (name = default):"]
    for prop in PROPERTIES:
        default = "(none)" if prop.default is None else prop.default or '""'
        alias = f"  [alias: {', '.join(prop.aliases)}]" if prop.aliases else ""
        lines.append(f"  {prop.name} = {default}  ({prop.kind.name}){alias}")
        lines.append(f"      {prop.doc}")
    lines.append("")
    lines.append("accepted for compatibility with Kafka configurations, and ignored:")
    for prop in ACCEPTED_IGNORED:
        lines.append(f"  {prop.name:<50} {prop.doc}")
    return "\n".join(lines)
