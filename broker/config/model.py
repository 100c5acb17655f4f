"""What a loaded configuration is: ``Config``, its ``Listener``s, and ``ConfigError``."""

from __future__ import annotations

from dataclasses import dataclass

from broker.security.scram_bootstrap import BootstrapUser
from broker.security.settings import PLAINTEXT, AuthorizerSettings, ListenerSecurity


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
    # Which node of a simulated cluster (broker.cluster) serves it: 0 = the first, and the
    # only one of a single broker.
    node_index: int = 0

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
    # KIP-848 consumer groups (broker.coordinator.groups.consumer_manager).
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
    # Worker processes for Produce's batch checks (broker.produce.validation_pool); -1 = from the
    # cores, 0 = none (validated in the broker process, as embedded brokers do by default).
    validation_workers: int
    validation_worker_min_records: int
    validation_workers_eager: bool
    event_loop: str
    scram_bootstrap_users: tuple[BootstrapUser, ...]
    cluster_id: str | None
    authorizer: AuthorizerSettings
    # Fault-injection control plane (broker.toolkit.control_http): bind host (None = off) and port.
    control_host: str | None
    control_port: int
    control_allow_remote: bool
    # Web console and metrics (broker.console): bind host (None = off) and port.
    console_host: str | None
    console_port: int
    console_allow_remote: bool
    # Where the configuration came from, for the start-up log line.
    source_summary: str
    # Properties set explicitly (canonical name, raw value), e.g. for DescribeConfigs.
    explicit: tuple[tuple[str, str], ...]
    # A simulated cluster in this process (broker.cluster): node count and each node's rack
    # (the raw comma-separated list; checked against the count at load).
    cluster_size: int = 1
    cluster_racks: str = ""
    # min.insync.replicas (the topics' default) and replica.lag.time.max.ms: acted on by a
    # simulated cluster's replication (broker.cluster.replication).
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30000
    # The controller's automatic preferred-leader elections in a simulated cluster.
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    # KIP-932 share groups (broker.coordinator.share): the finalized share.version (0 = off)
    # and the group.share.* settings.
    share_version: int = 0
    group_share_session_timeout_ms: int = 45000
    group_share_heartbeat_interval_ms: int = 5000
    group_share_max_size: int = 200
    group_share_record_lock_duration_ms: int = 30000
    group_share_delivery_count_limit: int = 5
    # KIP-1071 streams groups (broker.coordinator.streams): the finalized streams.version
    # (0 = off) and the group.streams.* settings.
    streams_version: int = 0
    group_streams_session_timeout_ms: int = 45000
    group_streams_heartbeat_interval_ms: int = 5000
    group_streams_initial_rebalance_delay_ms: int = 3000
    group_share_partition_max_record_locks: int = 200
    # The log cleaner (broker.lifecycle.log_cleaner_threads), log.cleaner.*; the last four
    # are the broker defaults of the topic configs delete.retention.ms,
    # min.cleanable.dirty.ratio, min.compaction.lag.ms and max.compaction.lag.ms.
    cleaner_enable: bool = True
    # __consumer_offsets (broker.coordinator.offsets_topic): its partition count.
    offsets_topic_num_partitions: int = 50
    # __transaction_state (broker.coordinator.txn_state_topic): its partition count.
    transaction_state_log_num_partitions: int = 50
    # The internal topics' replication factors in a simulated cluster (capped at its size).
    offsets_topic_replication_factor: int = 3
    transaction_state_log_replication_factor: int = 3
    cleaner_threads: int = 1
    cleaner_backoff_ms: int = 15000
    cleaner_dedupe_buffer_size: int = 134217728
    cleaner_io_buffer_load_factor: float = 0.9
    cleaner_io_max_bytes_per_second: float = 1.7976931348623157e308
    cleaner_delete_retention_ms: int = 86400000
    cleaner_min_cleanable_ratio: float = 0.5
    cleaner_min_compaction_lag_ms: int = 0
    cleaner_max_compaction_lag_ms: int = 2**63 - 1
