"""Lifecycle: open the store, listen on every listener, shut down cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import time

from broker import __version__
from broker.config import Config, Listener
from broker.connection import KafkaConnection
from broker.handlers import build_dispatcher
from broker.state import BrokerState
from storage.producer_ids import ProducerIdAllocator
from storage.store import Store

log = logging.getLogger(__name__)

# Announced on stderr once every listener is bound; tests and scripts wait for it.
READY_MARKER = "minikafka started"


class Broker:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.state: BrokerState | None = None
        self.servers: list[asyncio.Server] = []
        self.stopped = asyncio.Event()

    async def start(self) -> None:
        config = self.config
        started = time.monotonic()
        store = Store.open(
            config.log_dir,
            node_id=config.node_id,
            segment_bytes=config.segment_bytes,
            index_interval_bytes=config.index_interval_bytes,
        )
        producer_ids = ProducerIdAllocator(config.log_dir)
        state = BrokerState(config, store, producer_ids, build_dispatcher())
        self.state = state
        loop = asyncio.get_running_loop()
        resolved: dict[str, Listener] = {}
        for listener in config.listeners:
            server = await loop.create_server(
                lambda name=listener.name: KafkaConnection(state, state.dispatcher, resolved[name]),
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
        state = self.state
        for server in self.servers:
            server.close()
        if state is not None:
            # Let requests in flight finish so their answers go out, then close.
            waits = [conn.idle.wait() for conn in list(state.connections)]
            if waits:
                await asyncio.wait_for(asyncio.gather(*waits), timeout=5)
            for conn in list(state.connections):
                conn.close()
            state.store.close()
        log.info("minikafka stopped")
        self.stopped.set()


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
    return asyncio.run(serve(config))
