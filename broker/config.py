"""Broker configuration: Kafka's property names, from a file, the environment and flags.

Sources, later ones winning (the same layering Kafka users know from
``kafka-server-start.sh server.properties --override k=v`` and the apache/kafka image):

1. a Java-properties file (``server.properties``);
2. ``KAFKA_<PROPERTY>`` environment variables, mapped as the apache/kafka Docker image
   maps them (``.`` -> ``_``, ``_`` -> ``__``, ``-`` -> ``___``, upper-cased);
3. ``--override key=value`` flags.

Every supported property is described once, in ``PROPERTIES``; defaults, ``--help`` and
validation all come from that table. The rest of Kafka's broker configs
(broker.broker_config_table) are accepted and not acted on, but checked as Kafka's ConfigDef
checks them (broker.kafka_config_checks; the start-up log names them); unknown properties are
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

import difflib
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.broker_config_table import BROKER_CONFIGS
from broker.security import scram_bootstrap
from broker.security import settings as security_settings
from broker.security.scram_bootstrap import BootstrapUser
from broker.security.settings import PLAINTEXT, AuthorizerSettings, ListenerSecurity

__all__ = [
    "ACCEPTED_IGNORED",
    "PROPERTIES",
    "Config",
    "ConfigError",
    "Listener",
    "Property",
    "closest_property",
    "env_var_to_property",
    "is_known_property",
    "load_config",
    "make_config",
    "parse_properties",
    "properties_help",
]


class ConfigError(Exception):
    """An invalid configuration; ``property`` is None for errors not tied to one property."""

    def __init__(self, property: str | None, message: str) -> None:
        self.property = property
        self.message = message
        super().__init__(
            f"invalid value for {property}: {message}" if property is not None else message
        )


@dataclass(frozen=True)
class Listener:
    """One socket the broker serves.

    ``host`` is the bind address: ``""`` means all interfaces (asyncio's
    ``create_server`` treats ``""`` that way). ``port`` 0 binds an ephemeral port;
    ``advertised_port`` 0 means "advertise whatever port was bound".
    """

    name: str
    host: str
    port: int
    advertised_host: str
    advertised_port: int
    security: ListenerSecurity = PLAINTEXT

    @property
    def protocol(self) -> str:
        return self.security.protocol


@dataclass(frozen=True)
class Config:
    listeners: tuple[Listener, ...]
    log_dir: str
    node_id: int
    num_partitions: int
    auto_create_topics_enable: bool
    default_replication_factor: int
    segment_bytes: int
    message_max_bytes: int
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int
    socket_request_max_bytes: int
    # Connection limits and request queueing (Kafka's SocketServer, ConnectionQuotas).
    max_connections: int
    max_connections_per_ip: int
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...]
    connections_max_idle_ms: int
    queued_max_requests: int
    queued_max_request_bytes: int
    index_interval_bytes: int
    producer_id_expiration_ms: int
    producer_id_expiration_check_interval_ms: int
    transaction_max_timeout_ms: int
    transactional_id_expiration_ms: int
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int
    transaction_remove_expired_transaction_cleanup_interval_ms: int
    # Derived from log.retention.{ms,minutes,hours} / log.roll.{ms,hours} as Kafka does.
    retention_ms: int
    retention_bytes: int
    retention_check_interval_ms: int
    segment_ms: int
    flush_messages: int
    flush_ms: int
    flush_scheduler_interval_ms: int
    snapshot_interval_ms: int
    file_delete_delay_ms: int
    group_initial_rebalance_delay_ms: int
    group_coordinator_append_linger_ms: int
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int
    # KIP-848 consumer groups (broker.groups.consumer_manager).
    group_consumer_session_timeout_ms: int
    group_consumer_heartbeat_interval_ms: int
    group_consumer_max_size: int
    group_consumer_assignors: str
    group_consumer_migration_policy: str
    # offsets.retention.minutes in ms (or minikafka.offsets.retention.ms when set).
    offsets_retention_ms: int
    offsets_retention_check_interval_ms: int
    max_incremental_fetch_session_cache_slots: int
    log_level: str
    record_validation: str
    # Worker processes for Produce's batch checks (broker.validation_pool); -1 = from the
    # cores, 0 = none (validated in the broker process, as embedded brokers do by default).
    validation_workers: int
    validation_worker_min_records: int
    validation_workers_eager: bool
    event_loop: str
    scram_bootstrap_users: tuple[BootstrapUser, ...]
    cluster_id: str | None
    authorizer: AuthorizerSettings
    # Fault-injection control plane (broker.control_http): bind host (None = off) and port.
    control_host: str | None
    control_port: int
    control_allow_remote: bool
    # Where the configuration came from, for the start-up log line.
    source_summary: str
    # Properties set explicitly (canonical name, raw value), e.g. for DescribeConfigs.
    explicit: tuple[tuple[str, str], ...]


# ---------------------------------------------------------------------------------------
# Value kinds and validators


@dataclass(frozen=True)
class Kind:
    """How a raw string becomes a value; ``parse`` raises ValueError with a reason."""

    name: str
    parse: Callable[[str], Any]


_INT_RE = re.compile(r"[+-]?[0-9]+")


def _java_integer(bits: int) -> Callable[[str], int]:
    """Kafka's INT (Integer.parseInt) or LONG (Long.parseLong) on the trimmed value."""
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def parse(raw: str) -> int:
        text = raw.strip()
        if not _INT_RE.fullmatch(text):
            raise ValueError(f"{raw!r} is not an integer")
        value = int(text)
        if not low <= value <= high:
            raise ValueError(f"{text} does not fit in a {bits}-bit integer")
        return value

    return parse


_parse_int = _java_integer(32)
_parse_long = _java_integer(64)


def _parse_bool(raw: str) -> bool:
    # Kafka's BOOLEAN type accepts exactly true/false, case-insensitively.
    text = raw.strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise ValueError(f"{raw!r} is not a boolean (expected true or false)")


def _parse_string(raw: str) -> str:
    return raw.strip()


def _parse_optional(raw: str) -> str | None:
    text = raw.strip()
    return text or None


def _choice(*options: str) -> Kind:
    canonical = {o.lower(): o for o in options}

    def parse(raw: str) -> str:
        text = raw.strip().lower()
        if text not in canonical:
            raise ValueError(f"{raw.strip()!r} is not one of {', '.join(options)}")
        return canonical[text]

    return Kind("one of " + "|".join(options), parse)


_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def consumer_assignors(raw: str) -> tuple[str, ...]:
    """group.consumer.assignors as assignor names (Kafka takes names or class names)."""
    names = []
    for item in raw.split(","):
        name = _ASSIGNOR_CLASSES.get(item.strip(), item.strip())
        if not name:
            continue
        if name not in ("uniform", "range"):
            raise ValueError(f"{item.strip()!r} is not a known assignor (uniform, range)")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("at least one assignor is required")
    return tuple(names)


def _check_assignors(raw: str) -> None:
    consumer_assignors(raw)


def _at_least(minimum: int) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if value < minimum:
            raise ValueError(f"{value} is below the minimum of {minimum}")

    return check


def _log_level(raw: str) -> str:
    text = raw.strip().upper()
    if text == "WARN":  # log4j spelling, as Kafka users write it
        text = "WARNING"
    if text not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ValueError(f"{raw.strip()!r} is not one of DEBUG, INFO, WARNING, ERROR")
    return text


def _log_dirs(raw: str) -> str:
    dirs = [d.strip() for d in raw.split(",") if d.strip()]
    if not dirs:
        raise ValueError("a log directory is required")
    if len(dirs) > 1:
        raise ValueError(
            f"minikafka supports a single log directory, got {len(dirs)}: {', '.join(dirs)}"
        )
    return dirs[0]


def _scram_users(raw: str) -> tuple[BootstrapUser, ...]:
    return tuple(scram_bootstrap.parse(raw))


def _parse_ip_overrides(raw: str) -> tuple[tuple[str, int], ...]:
    """Kafka's getMap: 'host:count' pairs, comma-separated (the count after the last ':')."""
    pairs: list[tuple[str, int]] = []
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host.strip():
            raise ValueError(f"{item!r} is not host:count")
        pairs.append((host.strip(), _parse_int(count)))
    return tuple(pairs)


INT = Kind("int", _parse_int)
LONG = Kind("long", _parse_long)
BOOLEAN = Kind("boolean", _parse_bool)
STRING = Kind("string", _parse_string)
OPTIONAL_STRING = Kind("string", _parse_optional)
LIST = Kind("list", _parse_string)  # comma-separated; parsed where it is used
LOG_LEVEL = Kind("one of DEBUG|INFO|WARNING|ERROR", _log_level)
LOG_DIR = Kind("path", _log_dirs)


# ---------------------------------------------------------------------------------------
# The table


@dataclass(frozen=True)
class Property:
    name: str
    kind: Kind
    default: str | None  # the raw default, parsed like user input; None = unset
    doc: str
    # Config attribute that receives the parsed value; None when the value is consumed by
    # a derived attribute (listeners) or the property is accepted and ignored.
    attr: str | None = None
    validator: Callable[[Any], None] | None = None
    aliases: tuple[str, ...] = ()
    ignored: bool = False


DEFAULT_PROTOCOL_MAP = (
    "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,"
    "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)

PROPERTIES: tuple[Property, ...] = (
    Property(
        "listeners",
        LIST,
        "PLAINTEXT://127.0.0.1:9092",
        "NAME://host:port,... to serve; empty host = all interfaces, port 0 = ephemeral.",
    ),
    Property(
        "advertised.listeners",
        LIST,
        None,
        "NAME://host:port,... told to clients (default: bind address, 127.0.0.1 if wildcard).",
    ),
    Property(
        "listener.security.protocol.map",
        LIST,
        DEFAULT_PROTOCOL_MAP,
        "Comma-separated NAME:PROTOCOL pairs (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).",
    ),
    Property(
        "controller.listener.names",
        LIST,
        "",
        "KRaft controller listeners: accepted for compatibility and NOT served.",
    ),
    Property(
        "log.dirs",
        LOG_DIR,
        "/tmp/kafka-logs",
        "Directory holding topic data and broker state (exactly one directory).",
        attr="log_dir",
        aliases=("log.dir",),
    ),
    Property(
        "node.id",
        INT,
        "1",
        "Id of this broker, reported in Metadata.",
        attr="node_id",
        validator=_at_least(0),
        aliases=("broker.id",),
    ),
    Property(
        "num.partitions",
        INT,
        "1",
        "Partition count of auto-created topics.",
        attr="num_partitions",
        validator=_at_least(1),
    ),
    Property(
        "auto.create.topics.enable",
        BOOLEAN,
        "true",
        "Create a missing topic when a client asks for it in Metadata (as Kafka, not on Produce).",
        attr="auto_create_topics_enable",
    ),
    Property(
        "default.replication.factor",
        INT,
        "1",
        "Replication factor of auto-created topics; a single broker stores one replica.",
        attr="default_replication_factor",
        validator=_at_least(1),
    ),
    Property(
        "log.segment.bytes",
        INT,
        "1073741824",
        "Size at which a log segment file is rolled.",
        attr="segment_bytes",
        # 14 is Kafka's minimum (the size of the smallest legacy record).
        validator=_at_least(14),
        aliases=("segment.bytes",),
    ),
    Property(
        "message.max.bytes",
        INT,
        "1048588",
        "Largest record batch accepted from a producer.",
        attr="message_max_bytes",
        validator=_at_least(0),
    ),
    Property(
        "log.message.timestamp.before.max.ms",
        LONG,
        str(2**63 - 1),
        "How far behind the broker clock a CreateTime record timestamp may be "
        "(INVALID_TIMESTAMP beyond it); Kafka's default accepts any past timestamp.",
        attr="message_timestamp_before_max_ms",
        validator=_at_least(0),
    ),
    Property(
        "log.message.timestamp.after.max.ms",
        LONG,
        "3600000",
        "How far ahead of the broker clock a CreateTime record timestamp may be "
        "(INVALID_TIMESTAMP beyond it; KIP-937, Kafka 4.0's default is one hour).",
        attr="message_timestamp_after_max_ms",
        validator=_at_least(0),
    ),
    Property(
        "socket.request.max.bytes",
        INT,
        "104857600",
        "Largest request frame; a larger one closes the connection.",
        attr="socket_request_max_bytes",
        validator=_at_least(1),
    ),
    Property(
        "max.connections",
        INT,
        "2147483647",
        "Connections served at once; a new one waits (unread) until another closes.",
        attr="max_connections",
        validator=_at_least(0),
    ),
    Property(
        "max.connections.per.ip",
        INT,
        "2147483647",
        "Connections allowed from one address; a new one beyond it is closed at once.",
        attr="max_connections_per_ip",
        validator=_at_least(0),
    ),
    Property(
        "max.connections.per.ip.overrides",
        Kind("list of host:count", _parse_ip_overrides),
        "",
        "Per-address (or host name) exceptions to max.connections.per.ip, e.g. "
        "'hostName:100,127.0.0.1:200'.",
        attr="max_connections_per_ip_overrides",
    ),
    Property(
        "connections.max.idle.ms",
        LONG,
        "600000",
        "Close a connection with no bytes read or written for this long; -1 = never.",
        attr="connections_max_idle_ms",
    ),
    Property(
        "queued.max.requests",
        INT,
        "500",
        "Requests read and not yet started, over all connections, before reading stops.",
        attr="queued_max_requests",
        validator=_at_least(1),
    ),
    Property(
        "queued.max.request.bytes",
        LONG,
        "-1",
        "Bytes of requests held (read, not yet answered) before no more are read; -1 = no limit.",
        attr="queued_max_request_bytes",
    ),
    Property(
        "log.index.interval.bytes",
        INT,
        "4096",
        "Bytes of log between two entries of the sparse offset index.",
        attr="index_interval_bytes",
        validator=_at_least(0),
    ),
    Property(
        "producer.id.expiration.ms",
        INT,
        "86400000",
        "Idle time after which an idempotent producer's state is forgotten.",
        attr="producer_id_expiration_ms",
        validator=_at_least(1),
    ),
    Property(
        "producer.id.expiration.check.interval.ms",
        INT,
        "600000",
        "How often expired producer ids are looked for.",
        attr="producer_id_expiration_check_interval_ms",
        validator=_at_least(1),
    ),
    Property(
        "transaction.max.timeout.ms",
        INT,
        "900000",
        "Largest transaction.timeout.ms a transactional producer may ask for in "
        "InitProducerId (above it: INVALID_TRANSACTION_TIMEOUT).",
        attr="transaction_max_timeout_ms",
        validator=_at_least(1),
    ),
    Property(
        "transactional.id.expiration.ms",
        INT,
        "604800000",
        "Idle time after which a transactional id with no open transaction is forgotten.",
        attr="transactional_id_expiration_ms",
        validator=_at_least(1),
    ),
    Property(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        INT,
        "10000",
        "How often transactions open longer than their timeout are looked for and aborted.",
        attr="transaction_abort_timed_out_transaction_cleanup_interval_ms",
        validator=_at_least(1),
    ),
    Property(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        INT,
        "3600000",
        "How often expired transactional ids are looked for.",
        attr="transaction_remove_expired_transaction_cleanup_interval_ms",
        validator=_at_least(1),
    ),
    Property(
        "log.retention.hours",
        INT,
        "168",
        "Retention by time in hours (used when log.retention.minutes/ms are unset).",
    ),
    Property(
        "log.retention.minutes",
        INT,
        None,
        "Retention by time in minutes (used when log.retention.ms is unset).",
    ),
    Property(
        "log.retention.ms",
        LONG,
        None,
        "Retention by time; whole segments older than this are deleted; -1 = forever.",
        validator=_at_least(-1),
        aliases=("retention.ms",),
    ),
    Property(
        "log.retention.bytes",
        LONG,
        "-1",
        "Retention by size per partition; oldest segments deleted beyond it; -1 = no limit.",
        attr="retention_bytes",
        validator=_at_least(-1),
        aliases=("retention.bytes",),
    ),
    Property(
        "log.retention.check.interval.ms",
        LONG,
        "300000",
        "How often segments are checked for deletion by retention.",
        attr="retention_check_interval_ms",
        validator=_at_least(1),
    ),
    Property(
        "log.roll.hours",
        INT,
        "168",
        "Roll a segment this old (used when log.roll.ms is unset).",
        validator=_at_least(1),
    ),
    Property(
        "log.roll.ms",
        LONG,
        None,
        "Roll a segment whose first batch is older than this, on the next append.",
        validator=_at_least(1),
        aliases=("segment.ms",),
    ),
    Property(
        "log.flush.interval.messages",
        LONG,
        str(2**63 - 1),
        "fsync a partition once this many messages are unflushed (default: never, "
        "leave it to the page cache, as Kafka).",
        attr="flush_messages",
        validator=_at_least(1),
        aliases=("flush.messages",),
    ),
    Property(
        "log.flush.interval.ms",
        LONG,
        None,
        "fsync a partition whose oldest unflushed message is this old (default: never).",
        validator=_at_least(0),
        aliases=("flush.ms",),
    ),
    Property(
        "log.flush.scheduler.interval.ms",
        LONG,
        None,
        "How often log.flush.interval.ms is checked (default: every second when it is set).",
        validator=_at_least(1),
    ),
    Property(
        "log.segment.delete.delay.ms",
        LONG,
        "60000",
        "How long the files of a segment deleted by retention or DeleteRecords, or of a "
        "deleted topic, stay (renamed *.deleted / *-delete) before they are removed, so "
        "fetch responses being sent from them complete.",
        attr="file_delete_delay_ms",
        validator=_at_least(0),
        aliases=("file.delete.delay.ms",),
    ),
    Property(
        "group.initial.rebalance.delay.ms",
        INT,
        "100",
        "How long the first rebalance of an empty group waits for more members (Kafka's "
        "default is 3000; a low default keeps tests fast).",
        attr="group_initial_rebalance_delay_ms",
        validator=_at_least(0),
    ),
    Property(
        "group.coordinator.append.linger.ms",
        INT,
        "5",
        "How long the group coordinator holds its writes (offset commits, group records) "
        "to write them together; its answers wait as long, as Kafka's. 0 = no wait.",
        attr="group_coordinator_append_linger_ms",
        validator=_at_least(0),
    ),
    Property(
        "group.min.session.timeout.ms",
        INT,
        "6000",
        "Smallest session.timeout.ms a consumer may ask for in JoinGroup.",
        attr="group_min_session_timeout_ms",
        validator=_at_least(0),
    ),
    Property(
        "group.max.session.timeout.ms",
        INT,
        "1800000",
        "Largest session.timeout.ms a consumer may ask for in JoinGroup.",
        attr="group_max_session_timeout_ms",
        validator=_at_least(0),
    ),
    Property(
        "group.consumer.session.timeout.ms",
        INT,
        "45000",
        "KIP-848 consumer groups: a member not heard from for this long is fenced.",
        attr="group_consumer_session_timeout_ms",
        validator=_at_least(1),
    ),
    Property(
        "group.consumer.heartbeat.interval.ms",
        INT,
        "5000",
        "KIP-848 consumer groups: the heartbeat interval told to members.",
        attr="group_consumer_heartbeat_interval_ms",
        validator=_at_least(1),
    ),
    Property(
        "group.consumer.max.size",
        INT,
        "2147483647",
        "KIP-848 consumer groups: the most members a group takes (GROUP_MAX_SIZE_REACHED).",
        attr="group_consumer_max_size",
        validator=_at_least(1),
    ),
    Property(
        "group.consumer.assignors",
        LIST,
        "uniform,range",
        "KIP-848 consumer groups: the server-side assignors (uniform, range, or Kafka's class "
        "names for them); the first is the default.",
        attr="group_consumer_assignors",
        validator=_check_assignors,
    ),
    Property(
        "group.consumer.migration.policy",
        _choice("disabled", "upgrade", "downgrade", "bidirectional"),
        "bidirectional",
        "Online migration between classic and KIP-848 consumer groups: bidirectional, "
        "upgrade (a classic group becomes a consumer group when a consumer-protocol member "
        "joins), downgrade (back when the last one leaves) or disabled.",
        attr="group_consumer_migration_policy",
    ),
    Property(
        "offsets.retention.minutes",
        INT,
        "10080",
        "Committed offsets expire this long after the group became Empty (or, for a group "
        "that never had members, after their commit; a Stable consumer group keeps the "
        "offsets of the topics it subscribes to); an Empty group is deleted with its last "
        "offset (Kafka's default: 7 days).",
        validator=_at_least(1),
    ),
    Property(
        "offsets.retention.check.interval.ms",
        LONG,
        "600000",
        "How often expired offsets and Empty groups without offsets are removed.",
        attr="offsets_retention_check_interval_ms",
        validator=_at_least(1),
    ),
    Property(
        "minikafka.offsets.retention.ms",
        LONG,
        None,
        "minikafka: offsets retention in ms, replacing offsets.retention.minutes when set "
        "(Kafka's minimum of one minute is too long for tests).",
        validator=_at_least(1),
    ),
    Property(
        "max.incremental.fetch.session.cache.slots",
        INT,
        "1000",
        "Incremental fetch sessions (KIP-227) kept at most, split over 8 shards as in Kafka.",
        attr="max_incremental_fetch_session_cache_slots",
        validator=_at_least(0),
    ),
    Property(
        "minikafka.producer.snapshot.interval.ms",
        LONG,
        "60000",
        "minikafka: how often changed producer state is snapshotted (also on roll/shutdown).",
        attr="snapshot_interval_ms",
        validator=_at_least(1),
    ),
    Property(
        "cluster.id",
        OPTIONAL_STRING,
        None,
        "Expected cluster id; must match the one stored in the log directory.",
        attr="cluster_id",
    ),
    Property(
        "log.level",
        LOG_LEVEL,
        "INFO",
        "minikafka: logging level (case-insensitive; WARN means WARNING).",
        attr="log_level",
    ),
    Property(
        "minikafka.record.validation",
        _choice("header", "records"),
        "records",
        "minikafka: check batch header and CRC only ('header') or each record too.",
        attr="record_validation",
    ),
    Property(
        "minikafka.validation.workers",
        INT,
        "-1",
        "minikafka: worker processes that check and rewrite Produce batches, so every core "
        "works; -1 = one per core besides the event loop's (at least one), 0 = none.",
        attr="validation_workers",
        validator=_at_least(-1),
    ),
    Property(
        "minikafka.validation.worker.min.records",
        INT,
        "256",
        "minikafka: a Produce request goes to a validation worker from this many records "
        "(or a compressed batch); smaller ones are cheaper to check on the event loop.",
        attr="validation_worker_min_records",
        validator=_at_least(1),
    ),
    Property(
        "minikafka.validation.workers.eager",
        BOOLEAN,
        "false",
        "minikafka: start the validation workers with the broker and wait until they are "
        "ready before serving (benchmarks, tests); by default the first big batch starts them.",
        attr="validation_workers_eager",
    ),
    Property(
        "minikafka.scram.bootstrap.users",
        Kind("password", _scram_users),
        "",
        "minikafka: SCRAM users for a new data directory, as kafka-storage format "
        "--add-scram: 'SCRAM-SHA-256=[name=alice,password=alice-secret];...'.",
        attr="scram_bootstrap_users",
    ),
    Property(
        "minikafka.control.listener",
        OPTIONAL_STRING,
        None,
        "minikafka: host:port of the HTTP fault-injection control plane (off when unset; "
        "port 0 = ephemeral). Loopback only unless minikafka.control.allow.remote=true.",
    ),
    Property(
        "minikafka.control.allow.remote",
        BOOLEAN,
        "false",
        "minikafka: let the control plane bind and answer non-loopback addresses.",
        attr="control_allow_remote",
    ),
    Property(
        "minikafka.event.loop",
        _choice("asyncio", "uvloop"),
        "asyncio",
        "minikafka: event loop; uvloop (pip install 'minikafka[uvloop]') is optional.",
        attr="event_loop",
    ),
)


def _ignored(name: str, doc: str) -> Property:
    return Property(name, STRING, None, doc, ignored=True)


# Set by Kafka's stock KRaft server.properties and by the apache/kafka Docker quickstart.
# Accepting them keeps those configurations loading without warnings; none changes what a
# single, controller-less broker does.
ACCEPTED_IGNORED: tuple[Property, ...] = (
    _ignored("process.roles", "KRaft roles; minikafka is always a broker."),
    _ignored("controller.quorum.voters", "KRaft controller quorum; there is none."),
    _ignored("controller.quorum.bootstrap.servers", "KRaft controller quorum; there is none."),
    _ignored("inter.broker.listener.name", "No other brokers to talk to."),
    _ignored("security.inter.broker.protocol", "No other brokers to talk to."),
    _ignored("offsets.topic.replication.factor", "One replica on one broker."),
    _ignored("offsets.topic.num.partitions", "No internal offsets topic."),
    _ignored("transaction.state.log.replication.factor", "One replica on one broker."),
    _ignored("transaction.state.log.min.isr", "One replica on one broker."),
    _ignored("transaction.state.log.num.partitions", "No transaction log topic."),
    _ignored("share.coordinator.state.topic.replication.factor", "One replica."),
    _ignored("share.coordinator.state.topic.min.isr", "One replica."),
    _ignored("min.insync.replicas", "One replica on one broker."),
    _ignored("num.network.threads", "asyncio: one event loop."),
    _ignored("num.io.threads", "asyncio: one event loop."),
    _ignored("num.recovery.threads.per.data.dir", "Recovery runs in one thread."),
    _ignored("socket.send.buffer.bytes", "Operating-system defaults are used."),
    _ignored("socket.receive.buffer.bytes", "Operating-system defaults are used."),
)

_BY_NAME: dict[str, Property] = {p.name: p for p in (*PROPERTIES, *ACCEPTED_IGNORED)}
# StandardAuthorizer's own properties (not in KafkaConfig's table), read by
# broker.security.settings.authorizer.
_AUTHORIZER_PROPERTIES = frozenset({"super.users", "allow.everyone.if.no.acl.found"})
# Kafka accepts any config under a listener prefix (listener.name.<name>.<config>, and for
# SASL listener.name.<name>.<mechanism>.<config>); broker.security.settings reads them.
_LISTENER_PREFIX = "listener.name."
_ALIASES: dict[str, str] = {a: p.name for p in PROPERTIES for a in p.aliases}


# ---------------------------------------------------------------------------------------
# Sources


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text as ``java.util.Properties.load`` does.

    Handles ``=``, ``:`` and whitespace separators, ``#``/``!`` comments, backslash
    line continuation and escapes (``\\t``, ``\\n``, ``\\uXXXX``, ``\\x`` -> ``x``).
    A repeated key keeps its last value, as in Java.
    """
    result: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        # An odd number of trailing backslashes joins the next line, minus its indent.
        while _ends_with_continuation(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if _ends_with_continuation(line):  # continuation at end of file
            line = line[:-1]
        key, value = _split_key_value(line)
        result[_unescape(key)] = _unescape(value)
    return result


def _ends_with_continuation(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    pos = 0
    while pos < len(line):
        ch = line[pos]
        if ch == "\\":
            pos += 2
            continue
        if ch in "=: \t\f":
            break
        pos += 1
    key = line[:pos]
    rest = line[pos:].lstrip(" \t\f")
    if rest and rest[0] in "=:":
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


# Variables the apache/kafka image reads for the JVM or its scripts, not as properties.
_NON_PROPERTY_ENV = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HOME",
        "KAFKA_HEAP_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_JMX_OPTS",
        "KAFKA_JMX_HOSTNAME",
        "KAFKA_JMX_PORT",
        "KAFKA_DEBUG",
        "KAFKA_LOG_DIR",  # kafka-run-class.sh: where the JVM's own log files go
    }
)
_PLAUSIBLE_KEY = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")


def env_var_to_property(var: str) -> str | None:
    """Map ``KAFKA_LOG_DIRS`` to ``log.dirs``; None if the variable is not a property.

    The apache/kafka image turns ``___`` into ``-``, ``__`` into ``_`` and ``_`` into
    ``.``, in that order, and lower-cases the result.
    """
    if not var.startswith("KAFKA_") or var.upper() in _NON_PROPERTY_ENV:
        return None
    body = var[len("KAFKA_") :].replace("___", "-").replace("__", "\0").replace("_", ".")
    name = body.replace("\0", "_").lower()
    return name if _PLAUSIBLE_KEY.fullmatch(name) else None


def _env_properties(env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Property name -> (value, variable that set it)."""
    found: dict[str, tuple[str, str]] = {}
    # The apache/kafka image formats storage with CLUSTER_ID; KAFKA_CLUSTER_ID wins.
    if env.get("CLUSTER_ID"):
        found["cluster.id"] = (env["CLUSTER_ID"], "environment CLUSTER_ID")
    for var in sorted(env):
        name = env_var_to_property(var)
        if name is not None:
            found[name] = (env[var], f"environment {var}")
    return found


def _parse_overrides(overrides: Iterable[str]) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(None, f"--override expects key=value, got {item!r}")
        found[key.strip()] = (value, "--override")
    return found


def _read_file(path: str) -> dict[str, tuple[str, str]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(None, f"cannot read properties file {path}: {exc}") from exc
    return {k: (v, f"file {path}") for k, v in parse_properties(text).items()}


# ---------------------------------------------------------------------------------------
# Listeners


@dataclass(frozen=True)
class _Endpoint:
    name: str
    host: str
    port: int


_ENDPOINT_RE = re.compile(r"([A-Za-z0-9_-]+)://(?:\[([^\]]*)\]|([^\[\]/:]*)):([0-9]+)")
_HOST_RE = re.compile(r"[A-Za-z0-9._%-]*")


def _parse_endpoints(prop: str, raw: str) -> list[_Endpoint]:
    endpoints: list[_Endpoint] = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        match = _ENDPOINT_RE.fullmatch(item)
        if match is None:
            hint = ""
            if item.count(":") > 2 and "[" not in item:
                hint = " (an IPv6 address needs brackets, e.g. PLAINTEXT://[::1]:9092)"
            raise ConfigError(prop, f"{item!r} is not NAME://host:port{hint}")
        name, v6_host, host, port_text = match.groups()
        if v6_host is not None:
            try:
                ipaddress.IPv6Address(v6_host)
            except ValueError as exc:
                raise ConfigError(prop, f"{item!r}: bad IPv6 address: {exc}") from None
            host = v6_host
        elif not _HOST_RE.fullmatch(host):
            raise ConfigError(prop, f"{item!r}: bad host {host!r}")
        port = int(port_text)
        if port > 65535:
            raise ConfigError(prop, f"{item!r}: port {port} is out of range 0-65535")
        # Kafka normalises listener names to upper case (ListenerName.normalised).
        name = name.upper()
        if any(e.name == name for e in endpoints):
            raise ConfigError(prop, f"listener name {name} is used more than once")
        endpoints.append(_Endpoint(name, host, port))
    return endpoints


_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _parse_protocol_map(raw: str) -> dict[str, str]:
    prop = "listener.security.protocol.map"
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise ConfigError(prop, f"{item!r} is not NAME:PROTOCOL")
        if protocol not in _PROTOCOLS:
            raise ConfigError(
                prop, f"{item!r}: unknown security protocol (one of {', '.join(_PROTOCOLS)})"
            )
        mapping[name] = protocol
    return mapping


def _advertisable(bind_host: str) -> str:
    # Clients cannot connect to a wildcard address. Kafka advertises the canonical host
    # name there; a loopback address is the predictable choice for a local broker.
    if bind_host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if bind_host == "::":
        return "::1"
    return bind_host


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost (what the control plane may bind without opting in)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _control_listener(raw: str | None, allow_remote: bool) -> tuple[str | None, int]:
    # Fault injection can crash the broker and drop answers: anyone who can reach it can break
    # every client, so it binds loopback unless explicitly opened.
    name = "minikafka.control.listener"
    if raw is None:
        return None, 0
    host, sep, port_text = raw.rpartition(":")
    if not sep or not _INT_RE.fullmatch(port_text) or not 0 <= int(port_text) <= 65535:
        raise ConfigError(name, f"{raw!r} is not host:port")
    host = host.strip("[]")
    if not host:
        raise ConfigError(name, f"{raw!r} names no host (use 127.0.0.1:{port_text})")
    if not allow_remote and not is_loopback(host):
        raise ConfigError(
            name,
            f"{host} is not a loopback address; the control plane can crash the broker, so "
            "set minikafka.control.allow.remote=true to serve it there",
        )
    return host, int(port_text)


def _build_listeners(values: Mapping[str, Any], raw: Mapping[str, str]) -> tuple[Listener, ...]:
    listeners = _parse_endpoints("listeners", values["listeners"])
    advertised_raw = values["advertised.listeners"]
    advertised = _parse_endpoints("advertised.listeners", advertised_raw or "")
    protocols = _parse_protocol_map(values["listener.security.protocol.map"])
    controllers = {
        n.strip().upper() for n in values["controller.listener.names"].split(",") if n.strip()
    }
    if not listeners:
        raise ConfigError("listeners", "at least one listener is required")
    names = {e.name for e in listeners}
    for adv in advertised:
        if adv.name not in names:
            raise ConfigError(
                "advertised.listeners", f"listener {adv.name} is not defined in listeners"
            )
        if adv.host in ("0.0.0.0", "::"):
            raise ConfigError(
                "advertised.listeners",
                f"{adv.name} advertises the non-routable address {adv.host}",
            )
    served = [e for e in listeners if e.name not in controllers]
    if not served:
        raise ConfigError("listeners", "every listener is a controller listener; nothing to serve")
    ports = [e.port for e in served if e.port != 0]
    if len(ports) != len(set(ports)):
        raise ConfigError("listeners", "two listeners use the same port")
    adv_by_name = {a.name: a for a in advertised}
    result: list[Listener] = []
    for ep in served:
        protocol = protocols.get(ep.name)
        if protocol is None:
            raise ConfigError(
                "listeners",
                f"no security protocol for listener {ep.name} in listener.security.protocol.map",
            )
        try:
            security = security_settings.listener_security(ep.name, protocol, raw)
        except security_settings.SettingError as exc:
            raise ConfigError(exc.prop, exc.message) from None
        public = adv_by_name.get(ep.name)
        if public is None:
            result.append(
                Listener(ep.name, ep.host, ep.port, _advertisable(ep.host), ep.port, security)
            )
        else:
            host = public.host or _advertisable(ep.host)
            result.append(Listener(ep.name, ep.host, ep.port, host, public.port, security))
    return tuple(result)


# ---------------------------------------------------------------------------------------
# Loading


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
        layers.append(("file", f"file {argv_file}", _read_file(argv_file)))
    layers.append(("env", "environment", _env_properties(env)))
    given = _parse_overrides(overrides)
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
            name = _ALIASES.get(key, key)
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

    # Imported here: it uses broker.topic_configs, which imports this module.
    from broker import kafka_config_checks

    kafka_config_checks.check(merged, spelled)
    raw_values = {name: value for name, (value, _) in merged.items()}
    listeners = _build_listeners(values, raw_values)
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
    if values["default.replication.factor"] > 1:
        warnings.append(
            f"default.replication.factor={values['default.replication.factor']}: "
            "minikafka is a single broker and keeps one replica of each partition"
        )

    attrs = {p.attr: values[p.name] for p in PROPERTIES if p.attr is not None}
    attrs.update(_derived_times(values))
    attrs["control_host"], attrs["control_port"] = _control_listener(
        values["minikafka.control.listener"], values["minikafka.control.allow.remote"]
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
    return sorted(props, key=lambda k: k in _BY_NAME)


def make_config(
    properties: Mapping[str, str] | None = None, origins: Mapping[str, str] | None = None
) -> Config:
    """A Config from defaults plus ``properties`` (Kafka names), e.g. for tests; ``origins``
    says where each came from, for messages (default ``--override``)."""
    overrides = [f"{k}={v}" for k, v in (properties or {}).items()]
    return load_config(None, {}, overrides, origins=origins)[0]


def is_known_property(name: str) -> bool:
    """A property the broker reads, or one of Kafka's it accepts (a known spelling)."""
    name = _ALIASES.get(name, name)
    return (
        name in _BY_NAME
        or name in BROKER_CONFIGS
        or name in _AUTHORIZER_PROPERTIES
        or name.startswith(_LISTENER_PREFIX)
    )


def closest_property(name: str) -> str | None:
    """The known property name nearest to a misspelt one, if one is near enough."""
    names = [*_BY_NAME, *_ALIASES, *BROKER_CONFIGS, *_AUTHORIZER_PROPERTIES]
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
