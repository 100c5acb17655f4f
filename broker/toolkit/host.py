"""One broker with what outlives it: its faults, its control plane, its ports.

A crash (fault injection) throws the ``Broker`` away as SIGKILL would and starts a new one on
the same data directory and the same ports, so clients reconnect to the address they know;
the faults set and the HTTP control listener stay. ``minikafka`` (the process) and
``minikafka.Broker`` (in-process) both run a broker through this class.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import TYPE_CHECKING, Any

from broker.lifecycle.server import Broker

if TYPE_CHECKING:
    from broker.config.model import Config
    from broker.toolkit.control_http import ControlServer
    from broker.toolkit.faults import FaultInjector

log = logging.getLogger(__name__)


class BrokerHost:
    def __init__(self, config: Config, faults: FaultInjector | None = None) -> None:
        self.config = config
        # Made when asked for (the control plane, or the caller's own): a broker nobody can
        # inject faults into neither imports nor wraps anything for them.
        self._faults = faults
        self.broker: Broker | None = None
        self.control: ControlServer | None = None
        # Start (or restart) to ready, for the pytest plugin's report.
        self.ready_ms = 0.0
        self.restarts = 0

    @property
    def faults(self) -> FaultInjector:
        if self._faults is None:
            from broker.toolkit.faults import FaultInjector

            self._faults = FaultInjector()
        return self._faults

    @property
    def port(self) -> int:
        return self.config.listeners[0].port

    @property
    def bootstrap(self) -> str:
        """The first listener's address; of a simulated cluster, every node's."""
        listener = self.config.listeners[0]
        state = self.broker.state if self.broker is not None else None
        if state is None or state.cluster is None:
            return f"{listener.advertised_host}:{listener.advertised_port}"
        nodes = state.cluster.listeners[listener.name]
        return ",".join(f"{n.advertised_host}:{n.advertised_port}" for n in nodes)

    async def start(self) -> None:
        control = None
        if self.config.control_host is not None:
            from broker.toolkit.control_http import ControlServer

            # Bound before the broker starts (and recovers): a port in use touches nothing.
            # Its faults exist from the first start, so that they are attached to it.
            _ = self.faults
            control = ControlServer.bind_to(
                self, self.config.control_host, self.config.control_port
            )
        try:
            await self._start_broker()
        except BaseException:
            if control is not None:
                await control.close()
            raise
        if control is not None:
            await control.serve()
            self.control = control

    async def _start_broker(self) -> None:
        started = time.monotonic()
        broker = Broker(self.config, self._faults)
        await broker.start()
        self.broker = broker
        # Ports bound as 0 are now real: a restart binds the same ones.
        self.config = dataclasses.replace(broker.config)
        self.ready_ms = (time.monotonic() - started) * 1000

    async def stop(self) -> None:
        if self.control is not None:
            await self.control.close()
            self.control = None
        if self.broker is not None:
            await self.broker.stop()
            self.broker = None

    async def crash(self) -> None:
        """Stop the broker uncleanly (no flush, no snapshots, no clean-shutdown marker)."""
        if self.broker is not None:
            await self.broker.crash()
            self.broker = None

    async def restart(self) -> None:
        """Start a broker again on the same data directory and ports (recovering if needed)."""
        if self.broker is None:
            await self._start_broker()
            self.restarts += 1

    async def crash_restart(self, *, down_s: float | None = None) -> dict[str, Any]:
        """Crash, stay down ``down_s`` seconds (connections refused), start again."""
        from broker.toolkit.faults import check_seconds

        down = 0.0 if down_s is None else check_seconds("down_s", down_s)
        await self.crash()
        if down:
            await asyncio.sleep(down)
        await self.restart()
        log.warning("restarted after a crash in %.0f ms (recovery included)", self.ready_ms)
        return {"restart_ms": round(self.ready_ms, 1), "restarts": self.restarts}

    def describe(self) -> dict[str, Any]:
        return {
            "bootstrap": self.bootstrap,
            "log_dir": self.config.log_dir,
            "node_id": self.config.node_id,
            "running": self.broker is not None,
            "restarts": self.restarts,
            "ready_ms": round(self.ready_ms, 1),
        }
