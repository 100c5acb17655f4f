"""Lifecycle: open the store, listen on every listener, shut down cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import ssl
import time

from broker import __version__
from broker.background import Background
from broker.config import Config, ConfigError, Listener
from broker.connection import KafkaConnection
from broker.groups import GroupCoordinator, GroupSettings
from broker.handlers import build_dispatcher
from broker.security.tls import TlsConfigError, server_context
from broker.state import BrokerState
from storage.committed_offsets import CommittedOffsets
from storage.log_config import LogConfig
from storage.producer_ids import ProducerIdAllocator
from storage.store import Store

log = logging.getLogger(__name__)

# Announced on stderr once every listener is bound; tests and scripts wait for it.
READY_MARKER = "minikafka started"
# How long requests in flight may take to finish on SIGTERM (Docker waits 10 s, then kills).
SHUTDOWN_GRACE_S = 3.0


class Broker:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.state: BrokerState | None = None
        self.servers: list[asyncio.Server] = []
        self.stopped = asyncio.Event()
        self.background: Background | None = None

    async def start(self) -> None:
        config = self.config
        started = time.monotonic()
        store = Store.open(config.log_dir, node_id=config.node_id, log_config=log_config(config))
        producer_ids = ProducerIdAllocator(config.log_dir)
        state = BrokerState(config, store, producer_ids, build_dispatcher())
        state.groups = _open_groups(config, state)
        self.state = state
        loop = asyncio.get_running_loop()
        resolved: dict[str, Listener] = {}
        contexts = _tls_contexts(config)
        for listener in config.listeners:
            server = await loop.create_server(
                lambda name=listener.name: KafkaConnection(
                    state, state.dispatcher, resolved[name], contexts.get(name)
                ),
                host=listener.host or None,
                port=listener.port,
                reuse_address=True,
                start_serving=False,
            )
            self.servers.append(server)
            port = server.sockets[0].getsockname()[1]
            # Port 0 binds an ephemeral port; advertise the real one.
            resolved[listener.name] = dataclasses.replace(
                listener, port=port, advertised_port=listener.advertised_port or port
            )
        bound = [resolved[lst.name] for lst in config.listeners]
        config = dataclasses.replace(config, listeners=tuple(bound))
        self.config = config
        state.config = config
        for server in self.servers:
            await server.start_serving()
        self.background = Background(state)
        self.background.start()
        state.groups.start()
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
            state.notify_appended()
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
            await state.groups.close()
            started = time.monotonic()
            # Final snapshots, fsync, close files, then the clean-shutdown marker.
            state.store.close()
            log.info("store closed cleanly in %.0f ms", (time.monotonic() - started) * 1000)
        log.info("minikafka stopped")
        self.stopped.set()


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
    offsets = CommittedOffsets.open(config.log_dir)
    if offsets.recovery.dropped_bytes:
        log.warning(
            "committed offsets: dropped a torn tail of %d byte(s)", offsets.recovery.dropped_bytes
        )
    settings = GroupSettings(
        initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        min_session_timeout_ms=config.group_min_session_timeout_ms,
        max_session_timeout_ms=config.group_max_session_timeout_ms,
    )
    return GroupCoordinator(settings, offsets, state.flusher)


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


async def serve(config: Config) -> int:
    broker = Broker(config)
    await broker.start()
    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop_requested.set)
    await stop_requested.wait()
    log.info("shutting down (signal received)")
    await broker.stop()
    return 0


def run(config: Config, *, config_source: str = "defaults") -> int:
    log.info("configuration from %s; pid %d", config_source, os.getpid())
    if config.event_loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            log.error("minikafka.event.loop=uvloop, but uvloop is not installed")
            return 2
        return int(uvloop.run(serve(config)))
    return asyncio.run(serve(config))
