"""The single owner of mutable broker state: config, the store, producer ids, connections."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from broker.cluster.replication import Replication
from broker.cluster.state import OFFSETS_TOPIC, TRANSACTION_TOPIC, Cluster
from broker.config import topic_configs
from broker.config.topic_configs import TopicSettings
from broker.coordinator.share.coordinator import ShareCoordinator, ShareSettings
from broker.coordinator.streams.coordinator import StreamsCoordinator, StreamsSettings
from broker.core.metrics import BrokerMetrics
from broker.fetch.purgatory import FetchPurgatory
from broker.fetch.sessions import FetchSessionCache
from broker.limits.connection_quotas import ConnectionQuotas
from broker.limits.frame_buffers import FrameBuffers
from broker.limits.request_budget import RequestBudget
from broker.produce.validation_pool import ValidationPool, default_count
from broker.runtime.flusher import Flusher
from broker.runtime.log_limiter import LogLimiter
from storage.broker_config_store import BrokerConfigStore
from storage.client_quota_store import ClientQuotaStore
from storage.group_config_store import GroupConfigStore
from storage.partition_log import PartitionLog
from storage.producer_ids import ProducerIdAllocator
from storage.scram_credential_store import ScramCredentialStore
from storage.share_group_store import ShareGroupStore
from storage.share_state_store import ShareStateStore
from storage.store import Store, TopicInfo
from storage.topic_config_store import TopicConfigStore

if TYPE_CHECKING:
    from broker.config.model import Config, Listener
    from broker.coordinator.groups import GroupCoordinator
    from broker.coordinator.offsets_topic import OffsetsTopic
    from broker.coordinator.transactions import TransactionCoordinator
    from broker.coordinator.txn_state_topic import TxnStateTopic
    from broker.security.authorizer import StandardAuthorizer

log = logging.getLogger(__name__)


class ClientConnection(Protocol):
    """A client connection as the state holds it; broker.net.connection registers each one
    here while it is open (the state knows connections only through this)."""

    idle: asyncio.Event
    transport: asyncio.Transport | None
    listener: Listener

    def close(self) -> None: ...


class NodeSwitch(Protocol):
    """Stopping and starting a simulated cluster's nodes (broker.lifecycle.server.Broker):
    their ports, connections and leaderships. UnknownNode for an id not in the cluster."""

    def stop_node(self, node: int) -> bool: ...

    def start_node(self, node: int) -> bool: ...

    def isolate_node(self, node: int) -> bool: ...


class ApiTable(Protocol):
    """The APIs served and their versions (broker.core.dispatch.Dispatcher), for ApiVersions."""

    def advertised(self) -> list[tuple[int, int, int]]: ...

    def enable(self, feature: str) -> None: ...


# The feature flag of the share-group APIs (Kafka's share.version; the dispatcher's gate).
SHARE_VERSION_FEATURE = "share.version"
# The feature flag of the streams-group APIs (Kafka's streams.version; KIP-1071).
STREAMS_VERSION_FEATURE = "streams.version"


class BrokerState:
    # Consumer groups and committed offsets; set by the server once the store is open.
    groups: GroupCoordinator
    # Transactional ids and their transactions; set by the server once the store is open.
    transactions: TransactionCoordinator
    # __consumer_offsets in Kafka's formats, written as the groups change; set with groups.
    offsets_topic: OffsetsTopic | None = None
    # __transaction_state in Kafka's formats, written as transactions change.
    txn_state_topic: TxnStateTopic | None = None

    def __init__(
        self,
        config: Config,
        store: Store,
        producer_ids: ProducerIdAllocator,
        dispatcher: ApiTable,
    ) -> None:
        self.config = config
        self.dispatcher = dispatcher
        self.store = store
        self.producer_ids = producer_ids
        self.node_id = config.node_id
        # A simulated cluster's nodes and partition leaders; None for a single broker, which
        # is every partition's leader (handlers test this once per request).
        self.cluster: Cluster | None = Cluster(config) if config.cluster_size > 1 else None
        # Its followers' log ends, high watermarks, ISR changes and acks=all waits.
        self.replication: Replication | None = (
            None
            if self.cluster is None
            else Replication(
                self.cluster,
                lag_time_max_ms=config.replica_lag_time_max_ms,
                min_isr=self._min_insync_replicas,
                wake=lambda plog: self.fetch_purgatory.check_and_complete(
                    (plog.topic, plog.partition)
                ),
            )
        )
        # Set by the broker that serves this state (fault injection stops and starts nodes).
        self.nodes: NodeSwitch | None = None
        self.connections: set[ClientConnection] = set()
        self.connection_quotas = ConnectionQuotas(
            config.max_connections,
            config.max_connections_per_ip,
            config.max_connections_per_ip_overrides,
        )
        # queued.max.requests / queued.max.request.bytes over every connection.
        self.request_budget = RequestBudget(
            config.queued_max_requests, config.queued_max_request_bytes
        )
        self.flusher = Flusher()
        # Worker processes for Produce's batch checks, started at the first big batch.
        workers = config.validation_workers
        self.validation_pool = ValidationPool(
            default_count(os.cpu_count()) if workers < 0 else workers
        )
        # CreatePartitions (its disk work on a worker thread) and DeleteTopics take turns.
        self.topic_changes = asyncio.Lock()
        # Buffers of large request frames, used again (broker.limits.frame_buffers).
        self.frame_buffers = FrameBuffers()
        self.shutting_down = False
        # Messages and bytes in and out, requests and their times (broker.console reads).
        self.metrics = BrokerMetrics()
        # Per open connection (peer "host:port"): client id and the client software its
        # ApiVersions named (KIP-511), for the console; the connection removes its entry.
        self.client_software: dict[str, tuple[str, str, str]] = {}
        # Zero-copy fetch sends; switched off if the event loop cannot sendfile (uvloop).
        self.sendfile = True
        # Metadata naming invalid topics: one log line per client and minute.
        self.invalid_topic_log = LogLimiter(60.0)
        # Metadata for a topic not auto-created: one line per client and topic a minute.
        self.unknown_topic_log = LogLimiter(60.0)
        # Failed logins: one log line per address and user a minute.
        self.failed_login_log = LogLimiter(60.0)
        # Long-polling fetches, parked per partition (Kafka's delayed-fetch purgatory).
        self.fetch_purgatory = FetchPurgatory()
        # Incremental fetch sessions (KIP-227), shared by every connection as in Kafka.
        self.fetch_sessions = FetchSessionCache(config.max_incremental_fetch_session_cache_slots)
        # Per-topic config overrides (CreateTopics, AlterConfigs) and what they amount to.
        self.topic_configs = TopicConfigStore.open(store.data_dir)
        self._default_settings = topic_configs.settings(config, store.log_config, {})
        self._settings: dict[bytes, TopicSettings] = {}
        self._load_topic_configs()
        # Dynamic broker configs (IncrementalAlterConfigs/AlterConfigs on BROKER resources):
        # "" = cluster-wide default, str(node id) = this broker. Stored and described only.
        self.broker_configs = BrokerConfigStore.open(store.data_dir)
        for name, reason in self.broker_configs.problems:
            log.warning("broker config file %s ignored: %s", name, reason)
        # Group configs (IncrementalAlterConfigs/AlterConfigs on GROUP resources); KIP-848
        # consumer groups read their session timeout and heartbeat interval from them.
        self.group_configs = GroupConfigStore.open(store.data_dir)
        if self.group_configs.problem:
            log.warning("group config file ignored: %s", self.group_configs.problem)
        # Client quotas (AlterClientQuotas; stored and described, not enforced) and SCRAM
        # credentials (AlterUserScramCredentials; SASL/SCRAM logins read them).
        self.client_quotas = ClientQuotaStore.open(store.data_dir)
        if self.client_quotas.problem:
            log.warning("client quota file ignored: %s", self.client_quotas.problem)
        self.scram_credentials = ScramCredentialStore.open(store.data_dir)
        self._bootstrap_scram_users()
        if self.scram_credentials.problem:
            log.warning("SCRAM credential file ignored: %s", self.scram_credentials.problem)
        # KIP-932 share groups; their APIs are served and advertised only with
        # minikafka.share.version >= 1 (Kafka's finalized share.version feature).
        self.shares = ShareCoordinator(
            ShareSettings.of(config),
            store,
            saved=ShareStateStore.open(store.data_dir),
            group_configs=self.group_config_overrides,
            other_group=self.classic_or_consumer,
            saved_groups=ShareGroupStore.open(store.data_dir),
        )
        if self.shares.saved is not None and self.shares.saved.problem:
            log.warning("share group state file ignored: %s", self.shares.saved.problem)
        if self.shares.saved_groups is not None and self.shares.saved_groups.problem:
            log.warning("share groups file ignored: %s", self.shares.saved_groups.problem)
        if config.share_version >= 1:
            dispatcher.enable(SHARE_VERSION_FEATURE)
        # KIP-1071 streams groups, served and advertised with minikafka.streams.version >= 1.
        self.streams = StreamsCoordinator(
            StreamsSettings(
                session_timeout_ms=config.group_streams_session_timeout_ms,
                heartbeat_interval_ms=config.group_streams_heartbeat_interval_ms,
                initial_rebalance_delay_ms=config.group_streams_initial_rebalance_delay_ms,
            ),
            self._partition_count,
        )
        if config.streams_version >= 1:
            dispatcher.enable(STREAMS_VERSION_FEATURE)
        # ACLs, when authorizer.class.name names StandardAuthorizer; None = no authorizer
        # (every request allowed, the ACL APIs answer SECURITY_DISABLED, as in Kafka).
        self.authorizer: StandardAuthorizer | None = None
        if config.authorizer.enabled:
            # Imported only here: a broker without an authorizer never loads the ACL code.
            from broker.security.authorizer import StandardAuthorizer
            from storage.acl_store import AclStore

            self.authorizer = StandardAuthorizer(config.authorizer, AclStore.open(store.data_dir))

    def connection_closed(self, peer: str) -> None:
        """A client connection ended: the share sessions it opened end with it (Kafka's
        share session cache listens to disconnects), their records released to others."""
        if not self.shares.sessions.sessions:
            return
        for topic_id, index in self.shares.connection_closed(peer):
            info = self.store.topic_by_id(topic_id)
            if info is not None:
                self.fetch_purgatory.check_and_complete((info.name, index))
        self.shares.persist()

    def _partition_count(self, topic: str) -> int | None:
        info = self.store.topic(topic)
        return None if info is None else len(info.partitions)

    def classic_or_consumer(self, group_id: str) -> bool:
        groups = getattr(self, "groups", None)
        return groups is not None and (
            group_id in groups.groups or group_id in groups.consumer.groups
        )

    def _bootstrap_scram_users(self) -> None:
        """minikafka.scram.bootstrap.users, into a new data directory only (as format)."""
        users = self.config.scram_bootstrap_users
        if not users or self.scram_credentials.path.exists():
            return
        from broker.security.sasl_scram import MECHANISMS  # SCRAM is loaded only if used

        self.scram_credentials.replace(
            {(u.name, MECHANISMS[u.mechanism][0]): u.credential for u in users}
        )
        log.info("bootstrapped %d SCRAM credential(s) from the configuration", len(users))

    def notify_appended(self, logs: Iterable[PartitionLog]) -> None:
        """Data was appended to these partitions: wake the fetches parked on them, and only
        those (ReplicaManager's checkAndComplete per TopicPartitionOperationKey)."""
        if self.replication is not None:
            logs = list(logs)
        for plog in logs:
            self.fetch_purgatory.check_and_complete((plog.topic, plog.partition))
        if self.replication is not None:
            self._replicate(self.replication, logs)

    def _replicate(self, replication: Replication, logs: Iterable[PartitionLog]) -> None:
        """A simulated cluster's leader appended to these partitions: its followers fetch
        (their high watermarks move then, which wakes the fetches again)."""
        for plog in logs:
            if plog.topic in (OFFSETS_TOPIC, TRANSACTION_TOPIC):
                # The coordinators' own topics are not followed (committed at once).
                continue
            info = self.store.topic(plog.topic)
            if info is not None and self.store.partition(plog.topic, plog.partition) is plog:
                replication.appended(info.topic_id, plog.partition, plog)

    def _min_insync_replicas(self, plog: PartitionLog) -> int:
        info = self.store.topic(plog.topic)
        if info is None:
            return 1
        return self.topic_settings(info).min_insync_replicas

    def complete_parked_fetches(self) -> None:
        """Answer every parked fetch now (shutdown, topic deletion)."""
        self.fetch_purgatory.complete_all()

    @property
    def cluster_id(self) -> str:
        return self.store.cluster_id

    def auto_create_topic(self, name: str) -> TopicInfo:
        info = self.store.create_topic(name, self.config.num_partitions)
        log.info("auto-created topic %r with %d partition(s)", name, self.config.num_partitions)
        return info

    # -- topic configs -------------------------------------------------------------------

    def _load_topic_configs(self) -> None:
        for name, reason in self.topic_configs.problems:
            log.warning("topic config file %s ignored: %s", name, reason)
        topics = self.store.topics()
        orphans = self.topic_configs.remove_except({t.topic_id for t in topics})
        if orphans:
            # Left by a crash in the middle of a topic deletion.
            log.info("removed the configs of deleted topic(s) %s", ", ".join(orphans))
        for info in topics:
            overrides = self.topic_configs.get(info.topic_id)
            if not overrides:
                continue
            try:
                new = topic_configs.settings(self.config, self.store.log_config, overrides)
            except topic_configs.InvalidConfigError as exc:
                # Written by a version that accepted it; keep serving with the defaults.
                log.warning("topic %s: stored configs ignored: %s", info.name, exc.message)
                continue
            self._apply(info, new)

    def topic_overrides(self, info: TopicInfo) -> dict[str, str]:
        """The configs set on this topic (not the defaults it inherits)."""
        return self.topic_configs.get(info.topic_id)

    def topic_settings(self, info: TopicInfo) -> TopicSettings:
        return self._settings.get(info.topic_id, self._default_settings)

    def set_topic_configs(self, info: TopicInfo, overrides: dict[str, str]) -> None:
        """Replace a topic's overrides (already validated): persist, then apply at once."""
        new = topic_configs.settings(self.config, self.store.log_config, overrides)
        self.topic_configs.put(info.topic_id, info.name, overrides)
        self._apply(info, new)

    def apply_topic_settings(self, info: TopicInfo) -> None:
        """Give partitions created since (CreatePartitions) the topic's settings."""
        self._apply(info, self.topic_settings(info))

    def _apply(self, info: TopicInfo, new: TopicSettings) -> None:
        if new == self._default_settings:
            self._settings.pop(info.topic_id, None)
        else:
            self._settings[info.topic_id] = new
        for plog in info.partitions:
            plog.config = new.log_config

    # -- dynamic broker configs ------------------------------------------------------------

    def dynamic_broker_configs(self, resource: str) -> dict[str, str]:
        """What IncrementalAlterConfigs/AlterConfigs set on a BROKER resource ("" = default)."""
        return self.broker_configs.get(resource)

    def set_dynamic_broker_configs(self, resource: str, configs: dict[str, str]) -> None:
        """Replace a BROKER resource's dynamic configs (already validated), durably."""
        self.broker_configs.put(resource, configs)

    # -- group configs ---------------------------------------------------------------------

    def group_config_overrides(self, group: str) -> dict[str, str]:
        """What IncrementalAlterConfigs/AlterConfigs set on a GROUP resource."""
        return self.group_configs.get(group)

    def set_group_configs(self, group: str, configs: dict[str, str]) -> None:
        """Replace a group's config overrides (already validated), durably."""
        self.group_configs.put(group, configs)

    def forget_topic(self, info: TopicInfo) -> None:
        """Drop a deleted topic's configs (file included) and its metrics."""
        self._settings.pop(info.topic_id, None)
        self.metrics.forget(info.name)
        if self.cluster is not None:
            self.cluster.forget_topic(info.topic_id)
        if self.replication is not None:
            self.replication.forget_topic(info.topic_id)
        self.topic_configs.delete(info.topic_id)
