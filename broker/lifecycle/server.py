"""Lifecycle: open the store, listen on every listener, shut down cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import functools
import logging
import socket
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from broker import __version__
from broker.cluster.routing import VIEWING_NODE
from broker.cluster.state import (
    Cluster,
    UnknownNode,
)
from broker.config.kinds import consumer_assignors
from broker.config.model import Config, ConfigError, Listener
from broker.coordinator.groups import GroupCoordinator, GroupSettings
from broker.coordinator.groups.consumer_manager import ConsumerGroupSettings
from broker.coordinator.offsets_topic import OffsetsTopic
from broker.coordinator.transactions import Settings as TransactionSettings
from broker.coordinator.transactions import TransactionCoordinator
from broker.coordinator.txn_state_topic import TxnStateTopic
from broker.core.dispatch import Dispatcher
from broker.core.request_context import RequestContext
from broker.core.state import BrokerState
from broker.handlers import build_dispatcher
from broker.handlers._leadership import group_elsewhere
from broker.lifecycle.background import Background
from broker.net.acceptor import Acceptor, BindError, bind
from broker.net.connection import KafkaConnection
from broker.net.fd_headroom import FdHeadroom
from broker.runtime.flusher import Flusher
from broker.runtime.startup_errors import data_dir_failure, listeners_fix
from broker.security.tls import TlsConfigError, server_context
from protocol.schema import Message
from storage.committed_offsets import OffsetsInTopic
from storage.dir_lock import DataDirLock, DataDirLockedError
from storage.log_config import LogConfig
from storage.producer_ids import ProducerIdAllocator
from storage.replica_assignment_store import ReplicaAssignmentStore
from storage.store import Store
from storage.txn_state_log import FILE_NAME as TXN_STATE_FILE
from storage.txn_state_log import TxnStateLog

log = logging.getLogger(__name__)

# Announced on stderr once every listener is bound; tests and scripts wait for it.
READY_MARKER = "minikafka started"


class ServerFaults(Protocol):
    """Fault injection (broker.toolkit.faults) as a broker sees it: attached to each start's
    state and dispatcher, and it may refuse new connections for a while."""

    def attach(self, state: BrokerState, dispatcher: Dispatcher) -> None: ...

    def refusing(self) -> bool: ...

    def refused_connection(self) -> asyncio.BaseProtocol: ...


# How long requests in flight may take to finish on SIGTERM (Docker waits 10 s, then kills).
SHUTDOWN_GRACE_S = 3.0


class Broker:
    def __init__(self, config: Config, faults: ServerFaults | None = None) -> None:
        self.config = config
        self.faults = faults
        self.state: BrokerState | None = None
        self.servers: list[Acceptor] = []
        self.stopped = asyncio.Event()
        self.background: Background | None = None
        # A simulated cluster's acceptors per node index (every listener's), for broker-stop.
        self.node_servers: dict[int, list[Acceptor]] = {}
        self._connection_factory: Callable[[str, int, str], asyncio.BaseProtocol] | None = None
        self._headroom: FdHeadroom | None = None
        self._resolved: dict[tuple[str, int], Listener] = {}
        # The data directory's lock, held from start to stop (or crash).
        self._lock: DataDirLock | None = None

    async def start(self) -> None:
        config = self.config
        started = time.monotonic()
        # Every socket bound (closed if the start fails), and per node listener its sockets.
        listening: list[list[socket.socket]] = []
        ordered: list[list[socket.socket]] = []
        lock: DataDirLock | None = None
        store: Store | None = None
        try:
            # TLS material and ports first, then the data directory's lock (Kafka's
            # LogManager takes it before it reads the directory), then recovery: a start
            # that is going to fail leaves the directory as it found it (not even a .lock).
            contexts = _tls_contexts(config)
            names = [(lst.name, lst.host, lst.port) for lst in config.listeners]
            runs = _ephemeral_runs(config, listening)
            if runs:
                config = dataclasses.replace(
                    config,
                    listeners=tuple(
                        dataclasses.replace(lst, port=runs[lst.name][0])
                        if lst.name in runs
                        else lst
                        for lst in config.listeners
                    ),
                )
            for listener in node_listeners(config):
                if listener.name in runs:
                    ordered.append(runs[listener.name][1][listener.node_index])
                    continue
                sockets = bind(
                    listener.host,
                    listener.port,
                    _listener_label(config, listener),
                    listeners_fix(names, listener.name),
                )
                listening.append(sockets)
                ordered.append(sockets)
            try:
                lock = DataDirLock.acquire(config.log_dir)
            except DataDirLockedError:
                raise
            except OSError as exc:
                raise data_dir_failure(config.log_dir, exc) from exc
            try:
                store = Store.open(
                    config.log_dir, node_id=config.node_id, log_config=log_config(config)
                )
            except PermissionError as exc:
                # A file or topic directory another user made (a bind mount's old contents).
                raise data_dir_failure(config.log_dir, exc) from exc
            except OSError as exc:
                if exc.errno not in (errno.EMFILE, errno.ENFILE):
                    raise
                raise data_dir_failure(config.log_dir, exc) from exc
            producer_ids = ProducerIdAllocator(config.log_dir)
            dispatcher = build_dispatcher()
            state = BrokerState(config, store, producer_ids, dispatcher)
            if state.cluster is not None:
                _load_assignments(state.cluster, store)
            state.groups = _open_groups(config, state)
            state.transactions = _open_transactions(config, state)
        except BaseException:
            for sockets in listening:
                for sock in sockets:
                    sock.close()
            if store is not None:
                # Recovered but not serving: closed as a crash would leave it.
                store.close_unclean()
            if lock is not None:
                lock.release()
            raise
        self._lock = lock
        state.transactions.on_markers = state.notify_appended
        if state.cluster is not None:
            state.groups.elsewhere = group_elsewhere(state.cluster)
            dispatcher.interceptors.append(_viewing(state.cluster))
            state.cluster.unclean_allowed = _unclean_allowed(state)
        self.state = state
        state.nodes = self
        faults = self.faults
        if faults is not None:
            faults.attach(state, dispatcher)
        resolved: dict[tuple[str, int], Listener] = {}

        def connection(name: str, node_index: int, address: str) -> asyncio.BaseProtocol:
            if faults is not None and faults.refusing():
                # Refused on purpose (fault injection): it never counts against the quotas.
                state.connection_quotas.dec(address)
                return faults.refused_connection()
            return KafkaConnection(
                state, dispatcher, resolved[name, node_index], address, contexts.get(name)
            )

        self._connection_factory = connection
        self._resolved = resolved
        # One count of the process's file descriptors for every listener's acceptor.
        headroom = FdHeadroom()
        self._headroom = headroom
        for listener, sockets in zip(node_listeners(config), ordered, strict=True):
            server = Acceptor(
                sockets,
                functools.partial(connection, listener.name, listener.node_index),
                state.connection_quotas,
                headroom,
            )
            self.servers.append(server)
            self.node_servers.setdefault(listener.node_index, []).append(server)
            port = server.port
            # Port 0 binds an ephemeral port; advertise the real one.
            resolved[listener.name, listener.node_index] = dataclasses.replace(
                listener, port=port, advertised_port=listener.advertised_port or port
            )
        bound = [resolved[lst.name, 0] for lst in config.listeners]
        if state.cluster is not None:
            for lst in config.listeners:
                state.cluster.listeners[lst.name] = [
                    resolved[lst.name, k] for k in range(config.cluster_size)
                ]
        config = dataclasses.replace(config, listeners=tuple(bound))
        self.config = config
        state.config = config
        for server in self.servers:
            server.start()
        self.background = Background(state)
        self.background.start()
        state.groups.start()
        state.transactions.start()
        if config.validation_workers_eager:
            # Benchmarks and tests: every worker ready before the broker says it started.
            await state.validation_pool.start(timeout_s=30.0)
        log.info(
            "%s version=%s node.id=%d cluster.id=%s log.dirs=%s listeners=%s startup_ms=%.0f",
            READY_MARKER,
            __version__,
            config.node_id,
            store.cluster_id,
            config.log_dir,
            ",".join(
                f"{lst.name}://{lst.host}:{lst.port} (advertised {lst.advertised_host}:"
                f"{lst.advertised_port})"
                for lst in bound
            ),
            (time.monotonic() - started) * 1000,
        )

    def stop_node(self, node: int) -> bool:
        """A simulated cluster's node stops: its ports close, its connections drop, the
        partitions it led elect new leaders. False if it was stopped already."""
        state, cluster = _cluster_of(self.state)
        cluster.check_node(node)
        if node in cluster.isolated:
            # Fenced already; its ports close now and its zombie view ends.
            cluster.drop_isolation(node)
            self._close_node(state, cluster, node)
            state.complete_parked_fetches()
            log.warning("isolated node %d stopped (fault injection)", node)
            return True
        if node not in cluster.alive:
            return False
        self._close_node(state, cluster, node)
        cluster.stop(node, _all_partitions(state))
        if state.replication is not None:
            # Smaller ISRs may move high watermarks; appends waiting on the old leader answer.
            state.replication.refresh()
        # Fetches parked on the old leader answer now; their clients look for the new one.
        state.complete_parked_fetches()
        log.warning("node %d stopped (fault injection)", node)
        return True

    def _close_node(self, state: BrokerState, cluster: Cluster, node: int) -> None:
        index = node - cluster.node_ids[0]
        for server in self.node_servers.pop(index, []):
            server.close()
            self.servers.remove(server)
        for conn in list(state.connections):
            if conn.listener.node_index == index and conn.transport is not None:
                conn.transport.abort()

    def isolate_node(self, node: int) -> bool:
        """A simulated cluster's node loses the controller and its peers while its ports
        stay open: fenced (its leaderships move, it leaves the ISRs), it answers clients from
        its stale view. False if it was stopped or isolated already."""
        state, cluster = _cluster_of(self.state)
        cluster.check_node(node)
        if node not in cluster.alive:
            return False
        cluster.isolate(node, _all_partitions(state))
        if state.replication is not None:
            state.replication.refresh()
        state.complete_parked_fetches()
        log.warning("node %d isolated (fault injection)", node)
        return True

    def start_node(self, node: int) -> bool:
        """A stopped node serves again on the ports it had. False if it was running."""
        state, cluster = _cluster_of(self.state)
        cluster.check_node(node)
        if cluster.rejoin(node):
            # Isolated: its ports never closed; it catches up as a started node does.
            if state.replication is not None:
                state.replication.node_started(node)
                state.replication.refresh()
            state.complete_parked_fetches()
            log.info("isolated node %d rejoined the cluster (fault injection)", node)
            return True
        if node in cluster.alive:
            return False
        index = node - cluster.node_ids[0]
        factory, headroom = self._connection_factory, self._headroom
        assert factory is not None and headroom is not None
        listeners = [lst for (_, k), lst in self._resolved.items() if k == index]
        bound = [
            bind(lst.host, lst.port, _listener_label(self.config, lst), "another port")
            for lst in listeners
        ]
        for lst, sockets in zip(listeners, bound, strict=True):
            server = Acceptor(
                sockets,
                functools.partial(factory, lst.name, index),
                state.connection_quotas,
                headroom,
            )
            self.servers.append(server)
            self.node_servers.setdefault(index, []).append(server)
            server.start()
        cluster.start(node)
        if state.replication is not None:
            state.replication.node_started(node)
            state.replication.refresh()
        log.info("node %d started again (fault injection)", node)
        return True

    async def stop(self) -> None:
        """Graceful shutdown: stop accepting, finish requests in flight, snapshot, flush."""
        state = self.state
        for server in self.servers:
            server.close()
        if state is not None:
            state.shutting_down = True
            # Parked JoinGroup/SyncGroup answers go out now (NOT_COORDINATOR), not at timeout.
            state.groups.shutdown()
            # Long-polling fetches wake up and answer with what they have.
            state.complete_parked_fetches()
            waits = [conn.idle.wait() for conn in list(state.connections)]
            if waits:
                try:
                    await asyncio.wait_for(asyncio.gather(*waits), timeout=SHUTDOWN_GRACE_S)
                except TimeoutError:
                    log.warning("requests still in flight after %ss; closing", SHUTDOWN_GRACE_S)
            for conn in list(state.connections):
                conn.close()
            if self.background is not None:
                await self.background.stop()
            await state.transactions.close()
            await state.groups.close()
            state.validation_pool.close()
            started = time.monotonic()
            # Final snapshots, fsync, close files, then the clean-shutdown marker.
            state.store.close()
            log.info("store closed cleanly in %.0f ms", (time.monotonic() - started) * 1000)
        self._release_lock()
        log.info("minikafka stopped")
        self.stopped.set()

    async def crash(self) -> None:
        """Stop as SIGKILL would: connections reset, nothing flushed, snapshotted or marked
        clean, so the next start on this data directory recovers (fault injection)."""
        state = self.state
        for server in self.servers:
            server.close()
        if state is not None:
            state.shutting_down = True
            for conn in list(state.connections):
                if conn.transport is not None:
                    conn.transport.abort()
            if self.background is not None:
                await self.background.stop()
            # The coordinator's log is fsynced at every change: closing it loses nothing a
            # SIGKILL would keep, and stops its timers.
            await state.transactions.close()
            await state.groups.abandon()
            state.validation_pool.close()
            # A flush round in a worker thread must not find its files closed under it.
            await state.flusher.settle()
            state.store.close_unclean()
        # A killed process's lock goes with it: the restart takes it again.
        self._release_lock()
        log.warning("minikafka crashed on purpose (fault injection)")
        self.stopped.set()

    def _release_lock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()


# Binding a cluster's ephemeral listener: tries at a run of consecutive free ports.
PORT_RUN_ATTEMPTS = 50


def _ephemeral_runs(
    config: Config, listening: list[list[socket.socket]]
) -> dict[str, tuple[int, list[list[socket.socket]]]]:
    """A cluster's listeners on port 0: a free run of consecutive ports each, node k on the
    first + k as with a fixed port (so a restart binds the same ones): per listener name the
    first port and each node's sockets, also added to ``listening`` (closed on failure)."""
    found: dict[str, tuple[int, list[list[socket.socket]]]] = {}
    if config.cluster_size == 1:
        return found
    for lst in config.listeners:
        if lst.port:
            continue
        for _ in range(PORT_RUN_ATTEMPTS):
            first = bind(lst.host, 0, f"listener {lst.name}")
            port = first[0].getsockname()[1]
            run: list[list[socket.socket]] = [first]
            try:
                for k in range(1, config.cluster_size):
                    run.append(bind(lst.host, port + k, f"listener {lst.name}"))
            except (BindError, OverflowError):
                for sockets in run:
                    for sock in sockets:
                        sock.close()
                continue
            found[lst.name] = (port, run)
            listening.extend(run)
            break
        else:
            raise BindError(
                f"listener {lst.name}: no {config.cluster_size} consecutive free ports found "
                f"for minikafka.cluster.size={config.cluster_size}; give the listener a port"
            )
    return found


def _load_assignments(cluster: Cluster, store: Store) -> None:
    """A cluster's replication factors and manual assignments, kept in the data directory."""
    kept = ReplicaAssignmentStore.open(store.data_dir)
    if kept.problem:
        log.warning("replica assignment file ignored: %s", kept.problem)
    gone = cluster.load(kept, (t.topic_id for t in store.topics()))
    if gone:
        log.info("forgot the replica assignments of %d deleted topic(s)", gone)


def _viewing(cluster: Cluster) -> Callable[[RequestContext, Message], None]:
    """The dispatcher's interceptor that names the node each request reached, so an isolated
    node's answers come from its stale view (broker.cluster.state.Cluster.isolate)."""

    def viewing(ctx: RequestContext, request: Message) -> None:
        VIEWING_NODE.set(cluster.node_of(ctx.listener))

    return viewing


def _unclean_allowed(state: BrokerState) -> Callable[[bytes | str], bool]:
    """unclean.leader.election.enable of a partition's topic: its override, else the
    broker's (an internal topic's is the broker's; Kafka's check of the value stands)."""
    broker_wide = dict(state.config.explicit).get("unclean.leader.election.enable", "false")

    def allowed(key: bytes | str) -> bool:
        info = state.store.topic_by_id(key) if isinstance(key, bytes) else None
        override = (
            None
            if info is None
            else state.topic_overrides(info).get("unclean.leader.election.enable")
        )
        return (broker_wide if override is None else override).strip().lower() == "true"

    return allowed


def _cluster_of(state: BrokerState | None) -> tuple[BrokerState, Cluster]:
    if state is None or state.cluster is None:
        raise UnknownNode("not a cluster: minikafka.cluster.size is 1")
    return state, state.cluster


def _all_partitions(state: BrokerState) -> list[tuple[bytes | str, int]]:
    """Every partition whose leadership a stop may move, internal topics' included."""
    keys: list[tuple[bytes | str, int]] = [
        (t.topic_id, p) for t in state.store.topics() for p in range(len(t.partitions))
    ]
    internal = state.cluster.internal_partitions if state.cluster is not None else {}
    for name, count in internal.items():
        keys.extend((name, p) for p in range(count))
    return keys


def node_listeners(config: Config) -> list[Listener]:
    """Every listener of every node: node k serves each at its port + k (an ephemeral port
    when the port is 0) and advertises the advertised port + k."""
    if config.cluster_size == 1:
        return list(config.listeners)
    return [
        dataclasses.replace(
            lst,
            port=lst.port + k if lst.port else 0,
            advertised_port=lst.advertised_port + k if lst.advertised_port else 0,
            node_index=k,
        )
        for k in range(config.cluster_size)
        for lst in config.listeners
    ]


def _listener_label(config: Config, listener: Listener) -> str:
    if config.cluster_size == 1:
        return f"listener {listener.name}"
    return f"listener {listener.name} of node {config.node_id + listener.node_index}"


def _open_transactions(config: Config, state: BrokerState) -> TransactionCoordinator:
    settings = TransactionSettings(
        max_timeout_ms=config.transaction_max_timeout_ms,
        id_expiration_ms=config.transactional_id_expiration_ms,
        abort_interval_ms=config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
        expire_interval_ms=config.transaction_remove_expired_transaction_cleanup_interval_ms,
    )
    fresh_log = not (Path(config.log_dir) / TXN_STATE_FILE).exists()
    txn_log = TxnStateLog.open(config.log_dir)
    topic = TxnStateTopic(
        state.store,
        config.transaction_state_log_num_partitions,
        state.set_topic_configs,
        state.notify_appended,
        offsets_partitions=config.offsets_topic_num_partitions,
    )
    topic.start(txn_log, fresh_log=fresh_log)
    txn_log.listener = topic.written
    state.txn_state_topic = topic
    return TransactionCoordinator(
        settings,
        state.store,
        txn_log,
        state.producer_ids,
        state.flusher,
        state.groups,
    )


def _tls_contexts(config: Config) -> dict[str, ssl.SSLContext]:
    """One SSLContext per TLS listener; an unreadable key stops start-up, as in Kafka."""
    contexts: dict[str, ssl.SSLContext] = {}
    for listener in config.listeners:
        if listener.security.tls is None:
            continue
        try:
            contexts[listener.name] = server_context(listener.security.tls)
        except TlsConfigError as exc:
            raise ConfigError(None, f"listener {listener.name}: {exc}") from exc
    return contexts


def _open_groups(config: Config, state: BrokerState) -> GroupCoordinator:
    topic = OffsetsTopic(
        state.store,
        config.offsets_topic_num_partitions,
        state.set_topic_configs,
        state.notify_appended,
    )
    # The topic is the coordinator's only store: loaded as Kafka's GroupMetadataManager
    # loads its partitions, each change written there (and fsynced before it is answered).
    offsets = OffsetsInTopic(topic.flush)
    topic.load(offsets)
    offsets.listener = topic
    topic.migrate_log(Path(config.log_dir), offsets)
    state.offsets_topic = topic
    settings = GroupSettings(
        initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        min_session_timeout_ms=config.group_min_session_timeout_ms,
        max_session_timeout_ms=config.group_max_session_timeout_ms,
        offsets_retention_ms=config.offsets_retention_ms,
    )
    consumer_settings = ConsumerGroupSettings(
        session_timeout_ms=config.group_consumer_session_timeout_ms,
        heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
        max_size=config.group_consumer_max_size,
        assignors=consumer_assignors(config.group_consumer_assignors),
        migration_policy=config.group_consumer_migration_policy,
    )

    def topics() -> dict[str, tuple[bytes, int]]:
        return {t.name: (t.topic_id, len(t.partitions)) for t in state.store.topics()}

    return GroupCoordinator(
        settings,
        offsets,
        # Its own rounds: the coordinator's writes linger (group.coordinator.append.linger.ms).
        Flusher(config.group_coordinator_append_linger_ms),
        consumer_settings,
        topics,
        group_configs=state.group_config_overrides,
    )


def log_config(config: Config) -> LogConfig:
    """The broker-wide defaults for every partition (topic-level overrides come later)."""
    return LogConfig(
        segment_bytes=config.segment_bytes,
        segment_ms=config.segment_ms,
        index_interval_bytes=config.index_interval_bytes,
        retention_ms=config.retention_ms,
        retention_bytes=config.retention_bytes,
        flush_messages=config.flush_messages,
        flush_ms=config.flush_ms,
        snapshot_interval_ms=config.snapshot_interval_ms,
        file_delete_delay_ms=config.file_delete_delay_ms,
    )
