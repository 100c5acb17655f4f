"""A broker inside the test process: ``minikafka.Broker`` (asyncio) and ``ThreadedBroker``.

Both serve real sockets on a free loopback port, so any client (confluent-kafka,
kafka-python, aiokafka, a JVM, kcat) talks to them as to a remote broker, and both remove
the temporary data directory they made. ``Broker`` runs on the caller's event loop
(``async with minikafka.Broker() as broker``); ``ThreadedBroker`` runs its own loop in a
daemon thread for synchronous tests, and hands calls on ``faults`` to that loop.

``cluster_size=3`` (and ``racks=["a", "b", "c"]``) simulates a cluster of that many nodes
(broker.cluster), ``bootstrap`` naming them all; ``stop_node``/``start_node`` stop and start
one of them.

Configuration uses Kafka's property names, as a mapping (``config={"num.partitions": 3}``)
or as keywords with ``_`` for ``.`` (``num_partitions=3``).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import functools
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from broker.config.loader import closest_property, is_known_property, make_config
from broker.config.model import ConfigError
from broker.toolkit.faults import FaultInjector
from broker.toolkit.host import BrokerHost
from storage.store import TopicAlreadyExistsError

T = TypeVar("T")
START_TIMEOUT_S = 30.0

PropertyValue = str | int | float | bool


# Broker's own keyword arguments, for the suggestion when one is misspelt.
_OWN_KEYWORDS = ("data_dir", "host", "port", "control", "cluster_size", "racks", "config")


def kafka_properties(
    config: Mapping[str, PropertyValue] | None, keywords: Mapping[str, PropertyValue]
) -> dict[str, str]:
    """Kafka property names -> text; keywords spell ``.`` as ``_`` (Kafka's names have none)."""
    merged = {**(config or {}), **{k.replace("_", "."): v for k, v in keywords.items()}}
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in merged.items()}


def property_origins(
    config: Mapping[str, PropertyValue] | None,
    keywords: Mapping[str, PropertyValue],
    keyword_source: str = "keyword argument",
) -> dict[str, str]:
    """Kafka property name -> where the caller set it, for messages."""
    origins = {name: f"config[{name!r}]" for name in config or {}}
    for key, value in keywords.items():
        origins[key.replace("_", ".")] = f"{keyword_source} {key}={value!r}"
    return origins


def check_property_names(
    config: Mapping[str, PropertyValue] | None,
    keywords: Mapping[str, PropertyValue],
    keyword_source: str = "keyword argument",
) -> None:
    """Refuse a name that is no broker property, with the nearest one's spelling.

    The command line warns and carries on, as Kafka does; here the programmer is at hand,
    and a typo silently started with defaults costs more than the error.
    """
    for name in config or {}:
        if not is_known_property(name):
            near = closest_property(name)
            hint = f": did you mean {near!r}?" if near else ""
            raise ConfigError(None, f"unknown broker property {name!r} (in config=){hint}")
    for key, value in keywords.items():
        name = key.replace("_", ".")
        if is_known_property(name):
            continue
        near = closest_property(name)
        spelled = near.replace(".", "_") if near else None
        if spelled is None:
            found = difflib.get_close_matches(key, _OWN_KEYWORDS, n=1, cutoff=0.7)
            spelled = found[0] if found else None
        hint = f": did you mean {spelled}?" if spelled else ""
        raise ConfigError(
            None,
            f"unknown broker property {name!r} ({keyword_source} {key}={value!r}){hint}",
        )


class Broker:
    """A broker on the running event loop; ``async with Broker() as broker:``."""

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        control: bool = False,
        cluster_size: int = 1,
        racks: Sequence[str] | None = None,
        config: Mapping[str, PropertyValue] | None = None,
        **properties: PropertyValue,
    ) -> None:
        check_property_names(config, properties)
        cluster: dict[str, str] = {}
        if cluster_size != 1:
            cluster["minikafka.cluster.size"] = str(cluster_size)
        if racks is not None:
            cluster["minikafka.cluster.racks"] = ",".join(racks)
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._origins = property_origins(config, properties)
        self._properties = {
            "listeners": f"PLAINTEXT://{host}:{port}",
            # In the caller's process: no worker processes unless asked for (issue 19).
            "minikafka.validation.workers": "0",
            **({"minikafka.control.listener": f"{host}:0"} if control else {}),
            **cluster,
            **kafka_properties(config, properties),
        }
        self.faults = FaultInjector()
        self._host: BrokerHost | None = None

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> Broker:
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="minikafka-"))
        config = make_config({**self._properties, "log.dirs": str(self.data_dir)}, self._origins)
        host = BrokerHost(config, self.faults)
        try:
            await host.start()
        except BaseException:
            self._remove_dir()
            raise
        self._host = host
        return self

    async def stop(self) -> None:
        host, self._host = self._host, None
        try:
            if host is not None:
                await host.stop()
        finally:
            self._remove_dir()

    def _remove_dir(self) -> None:
        if self._own_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    async def __aenter__(self) -> Broker:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # --- what tests use -------------------------------------------------------------------

    @property
    def host(self) -> BrokerHost:
        if self._host is None:
            raise RuntimeError("the broker is not running (use 'async with' or start())")
        return self._host

    @property
    def bootstrap(self) -> str:
        """``host:port`` for ``bootstrap.servers`` (every node's, comma-separated, of a
        cluster)."""
        return self.host.bootstrap

    def stop_node(self, node: int) -> bool:
        """Stop one node of a cluster (``cluster_size`` > 1): fault operation broker-stop."""
        return bool(self.faults.broker_stop(node))

    def start_node(self, node: int) -> bool:
        """Start a stopped node again (or end its isolation): fault operation broker-start."""
        return bool(self.faults.broker_start(node))

    def isolate_node(self, node: int) -> bool:
        """Isolate one node of a cluster (the zombie leader): fault operation broker-isolate."""
        return bool(self.faults.broker_isolate(node))

    @property
    def port(self) -> int:
        return self.host.port

    @property
    def ready_ms(self) -> float:
        """Start (or last restart) to ready, in milliseconds."""
        return self.host.ready_ms

    @property
    def control_url(self) -> str | None:
        """The HTTP control plane (``control=True``), e.g. for ``minikafka fault --url``."""
        control = self.host.control
        return None if control is None else control.url

    @property
    def control_token(self) -> str | None:
        """What the control plane requires as ``Authorization: Bearer <token>``."""
        control = self.host.control
        return None if control is None else control.token

    def create_topic(self, name: str, partitions: int | None = None) -> None:
        """Create a topic directly (no admin client needed); an existing one is kept."""
        state = self.host.broker.state if self.host.broker is not None else None
        if state is None:
            raise RuntimeError("the broker is down (crashed and not restarted)")
        count = partitions if partitions is not None else state.config.num_partitions
        with contextlib.suppress(TopicAlreadyExistsError):
            state.store.create_topic(name, count)

    async def crash(self) -> None:
        """Stop as SIGKILL would (nothing flushed, no clean-shutdown marker)."""
        await self.host.crash()

    async def restart(self) -> None:
        """Start again on the same data directory and port after ``crash``."""
        await self.host.restart()

    async def crash_restart(self, *, down_s: float | None = None) -> dict[str, Any]:
        """Crash, stay down ``down_s`` seconds, restart with recovery; same port."""
        return await self.host.crash_restart(down_s=down_s)


class _OnLoop:
    """Calls an object's methods on an event loop running in another thread."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._target = target
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            async def run() -> Any:
                return attr(*args, **kwargs)

            return asyncio.run_coroutine_threadsafe(run(), self._loop).result(START_TIMEOUT_S)

        return call


class ThreadedBroker:
    """A ``Broker`` on its own event loop thread, for synchronous tests: ``with``-able.

    ``faults`` has ``FaultInjector``'s methods, run on the broker's loop.
    """

    def __init__(self, data_dir: str | Path | None = None, **kwargs: Any) -> None:
        self._broker = Broker(data_dir, **kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.faults: Any = None

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = START_TIMEOUT_S) -> T:
        assert self._loop is not None, "the broker is not running"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def start(self) -> ThreadedBroker:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="minikafka-broker", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            self._call(self._broker.start())
        except BaseException:
            self._stop_loop()
            raise
        self.faults = _OnLoop(self._broker.faults, loop)
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        try:
            self._call(self._broker.stop())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(START_TIMEOUT_S)
        if loop is not None:
            loop.close()

    def __enter__(self) -> ThreadedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return self._broker.bootstrap

    @property
    def port(self) -> int:
        return self._broker.port

    @property
    def data_dir(self) -> Path | None:
        return self._broker.data_dir

    @property
    def ready_ms(self) -> float:
        return self._broker.ready_ms

    @property
    def control_url(self) -> str | None:
        return self._broker.control_url

    @property
    def control_token(self) -> str | None:
        return self._broker.control_token

    def create_topic(self, name: str, partitions: int | None = None) -> None:
        self._call(_run(functools.partial(self._broker.create_topic, name, partitions)))

    def stop_node(self, node: int) -> bool:
        return self._call(_run(functools.partial(self._broker.stop_node, node)))

    def start_node(self, node: int) -> bool:
        return self._call(_run(functools.partial(self._broker.start_node, node)))

    def isolate_node(self, node: int) -> bool:
        return self._call(_run(functools.partial(self._broker.isolate_node, node)))

    def crash(self) -> None:
        self._call(self._broker.crash())

    def restart(self) -> None:
        self._call(self._broker.restart())

    def crash_restart(self, *, down_s: float | None = None) -> dict[str, Any]:
        return self._call(self._broker.crash_restart(down_s=down_s))


async def _run(fn: Callable[[], T]) -> T:
    return fn()
