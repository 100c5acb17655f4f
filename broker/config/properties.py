"""The property table: every property minikafka acts on, once, with its kind, default,
documentation and the ``Config`` attribute it sets; and the KRaft properties accepted but
ignored. Defaults, ``--help`` and validation all come from here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.config.kinds import (
    BOOLEAN,
    DOUBLE,
    INT,
    LIST,
    LOG_DIR,
    LOG_LEVEL,
    LONG,
    OPTIONAL_STRING,
    STRING,
    Kind,
    at_least,
    check_assignors,
    choice,
    parse_ip_overrides,
    scram_users,
)


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


def _ratio(value: Any) -> None:
    """Kafka's Range.between(0, 1) and its messages."""
    if value < 0:
        raise ValueError("Value must be at least 0")
    if value > 1:
        raise ValueError("Value must be no more than 1")


# A cluster in one process: beyond 16 nodes the ports and connections get silly.
MAX_CLUSTER_SIZE = 16


def _cluster_size(value: Any) -> None:
    if not 1 <= value <= MAX_CLUSTER_SIZE:
        raise ValueError(f"must be between 1 and {MAX_CLUSTER_SIZE}")


# share.version levels served: 1 = KIP-932 share groups (Kafka's ShareVersion.SV_1).
MAX_SHARE_VERSION = 1


def _share_version(value: Any) -> None:
    if not 0 <= value <= MAX_SHARE_VERSION:
        raise ValueError(f"must be between 0 and {MAX_SHARE_VERSION}")


# streams.version levels served: 1 = KIP-1071 streams groups (Kafka's StreamsVersion.SV_1).
MAX_STREAMS_VERSION = 1


def _streams_version(value: Any) -> None:
    if not 0 <= value <= MAX_STREAMS_VERSION:
        raise ValueError(f"must be between 0 and {MAX_STREAMS_VERSION}")


def _delivery_count_limit(value: Any) -> None:
    # ShareGroupConfig: atLeast(2), atMost(10).
    if not 2 <= value <= 10:
        raise ValueError("must be between 2 and 10")


DEFAULT_PROTOCOL_MAP = (
    "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,"
    "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)


def _replication_factor(value: int) -> None:
    """As Kafka's ConfigDef checks the internal topics' replication factors (SHORT, atLeast(1))."""
    if not -32768 <= value <= 32767:
        raise ValueError("Not a number of type SHORT")
    if value < 1:
        raise ValueError("Value must be at least 1")


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
        validator=at_least(0),
        aliases=("broker.id",),
    ),
    Property(
        "num.partitions",
        INT,
        "1",
        "Partition count of auto-created topics.",
        attr="num_partitions",
        validator=at_least(1),
    ),
    Property(
        "offsets.topic.num.partitions",
        INT,
        "50",
        "Partition count of __consumer_offsets (read when it is created; partitionFor uses it).",
        attr="offsets_topic_num_partitions",
        validator=at_least(1),
    ),
    Property(
        "transaction.state.log.num.partitions",
        INT,
        "50",
        "Partition count of __transaction_state (read when it is created; partitionFor uses it).",
        attr="transaction_state_log_num_partitions",
        validator=at_least(1),
    ),
    Property(
        "offsets.topic.replication.factor",
        INT,
        "3",
        "Replication factor of __consumer_offsets in a simulated cluster (minikafka.cluster.size"
        " > 1), capped at the cluster's size; one broker stores one replica.",
        attr="offsets_topic_replication_factor",
        validator=_replication_factor,
    ),
    Property(
        "transaction.state.log.replication.factor",
        INT,
        "3",
        "Replication factor of __transaction_state in a simulated cluster, capped at its size;"
        " one broker stores one replica.",
        attr="transaction_state_log_replication_factor",
        validator=_replication_factor,
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
        validator=at_least(1),
    ),
    Property(
        "log.segment.bytes",
        INT,
        "1073741824",
        "Size at which a log segment file is rolled.",
        attr="segment_bytes",
        # 14 is Kafka's minimum (the size of the smallest legacy record).
        validator=at_least(14),
        aliases=("segment.bytes",),
    ),
    Property(
        "message.max.bytes",
        INT,
        "1048588",
        "Largest record batch accepted from a producer.",
        attr="message_max_bytes",
        validator=at_least(0),
    ),
    Property(
        "log.message.timestamp.before.max.ms",
        LONG,
        str(2**63 - 1),
        "How far behind the broker clock a CreateTime record timestamp may be "
        "(INVALID_TIMESTAMP beyond it); Kafka's default accepts any past timestamp.",
        attr="message_timestamp_before_max_ms",
        validator=at_least(0),
    ),
    Property(
        "log.message.timestamp.after.max.ms",
        LONG,
        "3600000",
        "How far ahead of the broker clock a CreateTime record timestamp may be "
        "(INVALID_TIMESTAMP beyond it; KIP-937, Kafka 4.0's default is one hour).",
        attr="message_timestamp_after_max_ms",
        validator=at_least(0),
    ),
    Property(
        "socket.request.max.bytes",
        INT,
        "104857600",
        "Largest request frame; a larger one closes the connection.",
        attr="socket_request_max_bytes",
        validator=at_least(1),
    ),
    Property(
        "max.connections",
        INT,
        "2147483647",
        "Connections served at once; a new one waits (unread) until another closes.",
        attr="max_connections",
        validator=at_least(0),
    ),
    Property(
        "max.connections.per.ip",
        INT,
        "2147483647",
        "Connections allowed from one address; a new one beyond it is closed at once.",
        attr="max_connections_per_ip",
        validator=at_least(0),
    ),
    Property(
        "max.connections.per.ip.overrides",
        Kind("list of host:count", parse_ip_overrides),
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
        validator=at_least(1),
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
        validator=at_least(0),
    ),
    Property(
        "producer.id.expiration.ms",
        INT,
        "86400000",
        "Idle time after which an idempotent producer's state is forgotten.",
        attr="producer_id_expiration_ms",
        validator=at_least(1),
    ),
    Property(
        "producer.id.expiration.check.interval.ms",
        INT,
        "600000",
        "How often expired producer ids are looked for.",
        attr="producer_id_expiration_check_interval_ms",
        validator=at_least(1),
    ),
    Property(
        "transaction.max.timeout.ms",
        INT,
        "900000",
        "Largest transaction.timeout.ms a transactional producer may ask for in "
        "InitProducerId (above it: INVALID_TRANSACTION_TIMEOUT).",
        attr="transaction_max_timeout_ms",
        validator=at_least(1),
    ),
    Property(
        "transactional.id.expiration.ms",
        INT,
        "604800000",
        "Idle time after which a transactional id with no open transaction is forgotten.",
        attr="transactional_id_expiration_ms",
        validator=at_least(1),
    ),
    Property(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        INT,
        "10000",
        "How often transactions open longer than their timeout are looked for and aborted.",
        attr="transaction_abort_timed_out_transaction_cleanup_interval_ms",
        validator=at_least(1),
    ),
    Property(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        INT,
        "3600000",
        "How often expired transactional ids are looked for.",
        attr="transaction_remove_expired_transaction_cleanup_interval_ms",
        validator=at_least(1),
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
        validator=at_least(-1),
        aliases=("retention.ms",),
    ),
    Property(
        "log.retention.bytes",
        LONG,
        "-1",
        "Retention by size per partition; oldest segments deleted beyond it; -1 = no limit.",
        attr="retention_bytes",
        validator=at_least(-1),
        aliases=("retention.bytes",),
    ),
    Property(
        "log.cleaner.enable",
        BOOLEAN,
        "true",
        "Run the log cleaner, which compacts topics with cleanup.policy compact.",
        attr="cleaner_enable",
    ),
    Property(
        "log.cleaner.threads",
        INT,
        "1",
        "Cleaner threads; each cleans one log at a time.",
        attr="cleaner_threads",
        validator=at_least(0),
    ),
    Property(
        "log.cleaner.backoff.ms",
        LONG,
        "15000",
        "How long a cleaner thread sleeps when no log needs cleaning.",
        attr="cleaner_backoff_ms",
        validator=at_least(0),
    ),
    Property(
        "log.cleaner.dedupe.buffer.size",
        LONG,
        "134217728",
        "Memory of the cleaners' key -> offset maps (24 bytes a key), shared among the threads.",
        attr="cleaner_dedupe_buffer_size",
    ),
    Property(
        "log.cleaner.io.buffer.load.factor",
        DOUBLE,
        "0.9",
        "How full a cleaner's key map is filled before a pass stops there.",
        attr="cleaner_io_buffer_load_factor",
    ),
    Property(
        "log.cleaner.io.max.bytes.per.second",
        DOUBLE,
        "1.7976931348623157E308",
        "Cleaner reads plus writes per second, over all cleaner threads.",
        attr="cleaner_io_max_bytes_per_second",
    ),
    Property(
        "log.cleaner.delete.retention.ms",
        LONG,
        "86400000",
        "Default delete.retention.ms of compacted topics.",
        attr="cleaner_delete_retention_ms",
        validator=at_least(0),
    ),
    Property(
        "log.cleaner.min.cleanable.ratio",
        DOUBLE,
        "0.5",
        "Default min.cleanable.dirty.ratio of compacted topics.",
        attr="cleaner_min_cleanable_ratio",
        validator=_ratio,
    ),
    Property(
        "log.cleaner.min.compaction.lag.ms",
        LONG,
        "0",
        "Default min.compaction.lag.ms of compacted topics.",
        attr="cleaner_min_compaction_lag_ms",
        validator=at_least(0),
    ),
    Property(
        "log.cleaner.max.compaction.lag.ms",
        LONG,
        "9223372036854775807",
        "Default max.compaction.lag.ms of compacted topics.",
        attr="cleaner_max_compaction_lag_ms",
        validator=at_least(1),
    ),
    Property(
        "log.retention.check.interval.ms",
        LONG,
        "300000",
        "How often segments are checked for deletion by retention.",
        attr="retention_check_interval_ms",
        validator=at_least(1),
    ),
    Property(
        "log.roll.hours",
        INT,
        "168",
        "Roll a segment this old (used when log.roll.ms is unset).",
        validator=at_least(1),
    ),
    Property(
        "log.roll.ms",
        LONG,
        None,
        "Roll a segment whose first batch is older than this, on the next append.",
        validator=at_least(1),
        aliases=("segment.ms",),
    ),
    Property(
        "log.flush.interval.messages",
        LONG,
        str(2**63 - 1),
        "fsync a partition once this many messages are unflushed (default: never, "
        "leave it to the page cache, as Kafka).",
        attr="flush_messages",
        validator=at_least(1),
        aliases=("flush.messages",),
    ),
    Property(
        "log.flush.interval.ms",
        LONG,
        None,
        "fsync a partition whose oldest unflushed message is this old (default: never).",
        validator=at_least(0),
        aliases=("flush.ms",),
    ),
    Property(
        "log.flush.scheduler.interval.ms",
        LONG,
        None,
        "How often log.flush.interval.ms is checked (default: every second when it is set).",
        validator=at_least(1),
    ),
    Property(
        "log.segment.delete.delay.ms",
        LONG,
        "60000",
        "How long the files of a segment deleted by retention or DeleteRecords, or of a "
        "deleted topic, stay (renamed *.deleted / *-delete) before they are removed, so "
        "fetch responses being sent from them complete.",
        attr="file_delete_delay_ms",
        validator=at_least(0),
        aliases=("file.delete.delay.ms",),
    ),
    Property(
        "group.initial.rebalance.delay.ms",
        INT,
        "100",
        "How long the first rebalance of an empty group waits for more members (Kafka's "
        "default is 3000; a low default keeps tests fast).",
        attr="group_initial_rebalance_delay_ms",
        validator=at_least(0),
    ),
    Property(
        "group.coordinator.append.linger.ms",
        INT,
        "5",
        "How long the group coordinator holds its writes (offset commits, group records) "
        "to write them together; its answers wait as long, as Kafka's. 0 = no wait.",
        attr="group_coordinator_append_linger_ms",
        validator=at_least(0),
    ),
    Property(
        "group.min.session.timeout.ms",
        INT,
        "6000",
        "Smallest session.timeout.ms a consumer may ask for in JoinGroup.",
        attr="group_min_session_timeout_ms",
        validator=at_least(0),
    ),
    Property(
        "group.max.session.timeout.ms",
        INT,
        "1800000",
        "Largest session.timeout.ms a consumer may ask for in JoinGroup.",
        attr="group_max_session_timeout_ms",
        validator=at_least(0),
    ),
    Property(
        "group.consumer.session.timeout.ms",
        INT,
        "45000",
        "KIP-848 consumer groups: a member not heard from for this long is fenced.",
        attr="group_consumer_session_timeout_ms",
        validator=at_least(1),
    ),
    Property(
        "group.consumer.heartbeat.interval.ms",
        INT,
        "5000",
        "KIP-848 consumer groups: the heartbeat interval told to members.",
        attr="group_consumer_heartbeat_interval_ms",
        validator=at_least(1),
    ),
    Property(
        "group.consumer.max.size",
        INT,
        "2147483647",
        "KIP-848 consumer groups: the most members a group takes (GROUP_MAX_SIZE_REACHED).",
        attr="group_consumer_max_size",
        validator=at_least(1),
    ),
    Property(
        "group.consumer.assignors",
        LIST,
        "uniform,range",
        "KIP-848 consumer groups: the server-side assignors (uniform, range, or Kafka's class "
        "names for them); the first is the default.",
        attr="group_consumer_assignors",
        validator=check_assignors,
    ),
    Property(
        "group.consumer.migration.policy",
        choice("disabled", "upgrade", "downgrade", "bidirectional"),
        "bidirectional",
        "Online migration between classic and KIP-848 consumer groups: bidirectional, "
        "upgrade (a classic group becomes a consumer group when a consumer-protocol member "
        "joins), downgrade (back when the last one leaves) or disabled.",
        attr="group_consumer_migration_policy",
    ),
    Property(
        "minikafka.share.version",
        INT,
        "0",
        "minikafka: the finalized share.version feature (what kafka-storage format --feature "
        "share.version=1 sets on Kafka). 1 = KIP-932 share groups: ShareGroupHeartbeat, "
        "ShareGroupDescribe, ShareFetch and ShareAcknowledge are served and advertised; 0 = "
        "none of them, as Kafka 4.0.",
        attr="share_version",
        validator=_share_version,
    ),
    Property(
        "minikafka.streams.version",
        INT,
        "0",
        "minikafka: the finalized streams.version feature (Kafka 4.4.0 finalizes 1). 1 = "
        "KIP-1071 streams groups: StreamsGroupHeartbeat and StreamsGroupDescribe are served "
        "and advertised; 0 = neither, as Kafka 4.0.",
        attr="streams_version",
        validator=_streams_version,
    ),
    Property(
        "group.streams.session.timeout.ms",
        INT,
        "45000",
        "Streams groups: a member silent this long is removed from its group.",
        attr="group_streams_session_timeout_ms",
    ),
    Property(
        "group.streams.heartbeat.interval.ms",
        INT,
        "5000",
        "Streams groups: the heartbeat interval told to members.",
        attr="group_streams_heartbeat_interval_ms",
    ),
    Property(
        "group.streams.initial.rebalance.delay.ms",
        INT,
        "3000",
        "Streams groups: how long after a group's creation its first tasks are assigned.",
        attr="group_streams_initial_rebalance_delay_ms",
    ),
    Property(
        "group.share.session.timeout.ms",
        INT,
        "45000",
        "Share groups: a member not heard from for this long is fenced.",
        attr="group_share_session_timeout_ms",
        validator=at_least(1),
    ),
    Property(
        "group.share.heartbeat.interval.ms",
        INT,
        "5000",
        "Share groups: the heartbeat interval told to members.",
        attr="group_share_heartbeat_interval_ms",
        validator=at_least(1),
    ),
    Property(
        "group.share.max.size",
        INT,
        "200",
        "Share groups: the most members a group takes (GROUP_MAX_SIZE_REACHED).",
        attr="group_share_max_size",
        validator=at_least(1),
    ),
    Property(
        "group.share.record.lock.duration.ms",
        INT,
        "30000",
        "Share groups: how long a member holds the records a ShareFetch acquired for it.",
        attr="group_share_record_lock_duration_ms",
        validator=at_least(1000),
    ),
    Property(
        "group.share.delivery.count.limit",
        INT,
        "5",
        "Share groups: deliveries of a record before it is archived.",
        attr="group_share_delivery_count_limit",
        validator=_delivery_count_limit,
    ),
    Property(
        "group.share.partition.max.record.locks",
        INT,
        "200",
        "Share groups: the most records in flight (acquired or waiting) per share-partition.",
        attr="group_share_partition_max_record_locks",
        validator=at_least(100),
    ),
    Property(
        "offsets.retention.minutes",
        INT,
        "10080",
        "Committed offsets expire this long after the group became Empty (or, for a group "
        "that never had members, after their commit; a Stable consumer group keeps the "
        "offsets of the topics it subscribes to); an Empty group is deleted with its last "
        "offset (Kafka's default: 7 days).",
        validator=at_least(1),
    ),
    Property(
        "offsets.retention.check.interval.ms",
        LONG,
        "600000",
        "How often expired offsets and Empty groups without offsets are removed.",
        attr="offsets_retention_check_interval_ms",
        validator=at_least(1),
    ),
    Property(
        "minikafka.offsets.retention.ms",
        LONG,
        None,
        "minikafka: offsets retention in ms, replacing offsets.retention.minutes when set "
        "(Kafka's minimum of one minute is too long for tests).",
        validator=at_least(1),
    ),
    Property(
        "max.incremental.fetch.session.cache.slots",
        INT,
        "1000",
        "Incremental fetch sessions (KIP-227) kept at most, split over 8 shards as in Kafka.",
        attr="max_incremental_fetch_session_cache_slots",
        validator=at_least(0),
    ),
    Property(
        "minikafka.producer.snapshot.interval.ms",
        LONG,
        "60000",
        "minikafka: how often changed producer state is snapshotted (also on roll/shutdown).",
        attr="snapshot_interval_ms",
        validator=at_least(1),
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
        choice("header", "records"),
        "records",
        "minikafka: check batch header and CRC only ('header') or each record too.",
        attr="record_validation",
    ),
    Property(
        "minikafka.cluster.size",
        INT,
        "1",
        "minikafka: nodes simulated in this process (1-16); node k has id node.id+k and serves "
        "every listener at its port + k. 1 = a single broker, as without the setting.",
        attr="cluster_size",
        validator=_cluster_size,
    ),
    Property(
        "min.insync.replicas",
        INT,
        "1",
        "Replicas that must have an acks=all write; the topics' default. A simulated "
        "cluster acts on it (capped at the replication factor, as Kafka's effectiveMinIsr); "
        "a single broker's one replica always satisfies it.",
        attr="min_insync_replicas",
        validator=at_least(1),
    ),
    Property(
        "replica.lag.time.max.ms",
        LONG,
        "30000",
        "A follower of a simulated cluster that has not caught up with its leader for this "
        "long leaves the ISR (Partition.maybeShrinkIsr).",
        attr="replica_lag_time_max_ms",
        validator=at_least(1),
    ),
    Property(
        "auto.leader.rebalance.enable",
        BOOLEAN,
        "true",
        "A simulated cluster's controller moves each partition's leadership back to its "
        "preferred replica (the first) once that is alive and in the ISR, every "
        "leader.imbalance.check.interval.seconds (KRaft's maybeBalancePartitionLeaders).",
        attr="auto_leader_rebalance_enable",
    ),
    Property(
        "leader.imbalance.check.interval.seconds",
        LONG,
        "300",
        "How often a simulated cluster's controller looks for leaders to move back to their "
        "preferred replica (auto.leader.rebalance.enable).",
        attr="leader_imbalance_check_interval_seconds",
        validator=at_least(1),
    ),
    Property(
        "minikafka.cluster.racks",
        LIST,
        "",
        "minikafka: broker.rack of each simulated node, comma-separated, one per node "
        "(empty = no racks).",
        attr="cluster_racks",
    ),
    Property(
        "minikafka.validation.workers",
        INT,
        "-1",
        "minikafka: worker processes that check and rewrite Produce batches, so every core "
        "works; -1 = one per core besides the event loop's (at least one), 0 = none.",
        attr="validation_workers",
        validator=at_least(-1),
    ),
    Property(
        "minikafka.validation.worker.min.records",
        INT,
        "256",
        "minikafka: a Produce request goes to a validation worker from this many records "
        "(or a compressed batch); smaller ones are cheaper to check on the event loop.",
        attr="validation_worker_min_records",
        validator=at_least(1),
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
        Kind("password", scram_users),
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
        "minikafka.console.listener",
        OPTIONAL_STRING,
        None,
        "minikafka: [http://]host:port of the web console, /metrics (Prometheus), /health and "
        "/ready (off when unset; port 0 = ephemeral). Loopback only unless "
        "minikafka.console.allow.remote=true.",
    ),
    Property(
        "minikafka.console.allow.remote",
        BOOLEAN,
        "false",
        "minikafka: let the console bind and answer non-loopback addresses.",
        attr="console_allow_remote",
    ),
    Property(
        "minikafka.event.loop",
        choice("asyncio", "uvloop"),
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
    _ignored("transaction.state.log.min.isr", "One replica on one broker."),
    _ignored("share.coordinator.state.topic.replication.factor", "One replica."),
    _ignored("share.coordinator.state.topic.min.isr", "One replica."),
    _ignored("num.network.threads", "asyncio: one event loop."),
    _ignored("num.io.threads", "asyncio: one event loop."),
    _ignored("num.recovery.threads.per.data.dir", "Recovery runs in one thread."),
    _ignored("socket.send.buffer.bytes", "Operating-system defaults are used."),
    _ignored("socket.receive.buffer.bytes", "Operating-system defaults are used."),
)

BY_NAME: dict[str, Property] = {p.name: p for p in (*PROPERTIES, *ACCEPTED_IGNORED)}
# StandardAuthorizer's own properties (not in KafkaConfig's table), read by
# broker.security.settings.authorizer.
AUTHORIZER_PROPERTIES = frozenset({"super.users", "allow.everyone.if.no.acl.found"})
# Kafka accepts any config under a listener prefix (listener.name.<name>.<config>, and for
# SASL listener.name.<name>.<mechanism>.<config>); broker.security.settings reads them.
LISTENER_PREFIX = "listener.name."
ALIASES: dict[str, str] = {a: p.name for p in PROPERTIES for a in p.aliases}
