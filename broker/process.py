"""The broker as an operating-system process (the ``minikafka`` command's serving part): the
event loop it runs on, and a ``BrokerHost`` served until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import signal
from typing import TYPE_CHECKING

from broker.config.kafka_checks import without_effect
from broker.config.model import Config
from broker.toolkit.host import BrokerHost

if TYPE_CHECKING:
    from broker.console.server import ConsoleServer

log = logging.getLogger(__name__)
# The limit asked for when the hard limit is unlimited (Linux's default nr_open).
MAX_DESCRIPTORS = 1_048_576


async def serve(config: Config) -> int:
    # The host keeps faults, the control plane and the ports across fault-injected crashes.

    broker = BrokerHost(config)
    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()
    # Before the start: a SIGTERM right after the ready line must stop cleanly, not kill.
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop_requested.set)
    console: ConsoleServer | None = None
    if config.console_host is not None:
        # Imported only here: a broker without a console loads none of it.
        from broker.console.server import ConsoleServer

        # Bound before the broker starts (and recovers): a port in use touches nothing.
        console = ConsoleServer.bind_to(broker, config.console_host, config.console_port)
        # Its faults page needs them attached from the first start.
        _ = broker.faults
    try:
        await broker.start()
    except BaseException:
        if console is not None:
            await console.close()
        raise
    if console is not None:
        await console.serve()
    await stop_requested.wait()
    log.info("shutting down (signal received)")
    if console is not None:
        # /ready and /health answer 503 while the broker stops.
        console.stopping = True
    await broker.stop()
    if console is not None:
        await console.close()
    return 0


def raise_descriptor_limit() -> None:
    """The soft RLIMIT_NOFILE up to the hard one, as the JVM does for Kafka on Linux
    (-XX:+MaxFDLimit, on by default): every segment keeps a file open."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, MAX_DESCRIPTORS)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        log.info("open-file limit stays %d (could not raise it to %d: %s)", soft, target, exc)
        return
    log.info("open-file limit raised from %d to %d", soft, target)


def run(config: Config, *, config_source: str = "defaults") -> int:
    log.info("configuration from %s; pid %d", config_source, os.getpid())
    raise_descriptor_limit()

    idle = without_effect(name for name, _ in config.explicit)
    if idle:
        log.info("set but without effect here (accepted as Kafka's): %s", ", ".join(idle))
    if config.event_loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            log.error("minikafka.event.loop=uvloop, but uvloop is not installed")
            return 2
        return int(uvloop.run(serve(config)))
    return asyncio.run(serve(config))
