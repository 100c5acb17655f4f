"""pytest plugin: a clean Kafka broker per test (or per session), in the test process.

Registered through the ``pytest11`` entry point, so installing minikafka is enough.

Fixtures:
  kafka_broker          a ``minikafka.ThreadedBroker`` for this test, on a free port, with a
                        temporary data directory removed afterwards; ``.faults`` injects
                        faults, ``.crash_restart()`` crashes and restarts it.
  kafka_bootstrap       ``kafka_broker.bootstrap`` ("127.0.0.1:PORT").
  kafka_topic           a factory: ``kafka_topic(partitions=3)`` makes a topic with a name no
                        other test uses, on ``kafka_broker`` (or ``broker=``), and returns it.
  kafka_session_broker  one broker for the whole session (tests share it: use kafka_topic).
  kafka_cluster         a simulated 3-node cluster for this test (``cluster_size=`` and
                        ``racks=`` in the marker change it): ``.bootstrap`` names every node,
                        ``.stop_node(id)``/``.start_node(id)`` stop and start one.

Configuration, Kafka property names with ``_`` for ``.``:
  @pytest.mark.minikafka(num_partitions=3, auto_create_topics_enable=False)
  @pytest.mark.parametrize("kafka_broker", [{"num_partitions": 3}], indirect=True)
  ``control=True`` also opens the HTTP control plane (``kafka_broker.control_url``, whose
  bearer token is ``kafka_broker.control_token``).

The terminal summary reports how many brokers were started and their start-to-ready times;
``--minikafka-report=FILE`` writes the same figures as JSON.
"""

from __future__ import annotations

import itertools
import json
import re
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from broker.toolkit.embedded import ThreadedBroker

_READY_MS = pytest.StashKey[list[float]]()
_names = itertools.count(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minikafka")
    group.addoption(
        "--minikafka-report",
        metavar="FILE",
        default=None,
        help="write the brokers' start-to-ready times (ms) to FILE as JSON",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "minikafka(**properties): Kafka broker properties for the kafka_broker fixture "
        "(num_partitions=3 sets num.partitions); control=True opens the HTTP control plane",
    )
    config.stash[_READY_MS] = []


def _start(config: pytest.Config, tmp: Path, settings: dict[str, Any]) -> ThreadedBroker:
    from broker.toolkit.embedded import ThreadedBroker

    broker = ThreadedBroker(tmp, **settings).start()
    config.stash[_READY_MS].append(broker.ready_ms)
    return broker


def _properties_only(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings that are broker properties (not ThreadedBroker's own arguments)."""
    own = ("host", "port", "control", "config", "cluster_size", "racks")
    return {k: v for k, v in settings.items() if k not in own}


def _settings(request: pytest.FixtureRequest, fixture: str) -> dict[str, Any]:
    """The minikafka markers' settings, then the fixture's parameter (indirect)."""
    from broker.toolkit.embedded import check_property_names

    settings: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("minikafka"))):
        # A misspelt property would start a broker with the default: refused, named as set.
        check_property_names(None, _properties_only(marker.kwargs), "@pytest.mark.minikafka")
        settings.update(marker.kwargs)
    param = getattr(request, "param", None)
    if param is not None:
        if not isinstance(param, dict):
            raise TypeError(f"parametrize {fixture} with dicts of broker properties")
        check_property_names(None, _properties_only(param), f"{fixture} parameter")
        settings.update(param)
    return settings


@pytest.fixture
def kafka_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedBroker]:
    """A Kafka broker for this test only (a minikafka.ThreadedBroker), on a free loopback port
    with a temporary data directory, stopped afterwards.

    Attributes: .bootstrap ("127.0.0.1:PORT"), .port, .data_dir, .faults (inject errors,
    dropped answers, delays, offline partitions), .crash_restart(), .create_topic(name, n).
    Broker properties, Kafka's names with "_" for ".":
    @pytest.mark.minikafka(num_partitions=3), or
    @pytest.mark.parametrize("kafka_broker", [{"num_partitions": 3}], indirect=True).
    control=True in the marker also opens the HTTP control plane (.control_url).
    """
    settings = _settings(request, "kafka_broker")
    broker = _start(request.config, tmp_path_factory.mktemp("minikafka"), settings)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def kafka_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedBroker]:
    """A simulated Kafka cluster of 3 nodes in this process (a minikafka.ThreadedBroker with
    cluster_size=3), for this test only: node ids 1, 2, 3 on consecutive free loopback ports.

    Attributes as kafka_broker's; .bootstrap names every node; .stop_node(id) closes a node's
    ports and connections and moves its leaderships, .start_node(id) brings it back.
    @pytest.mark.minikafka(cluster_size=5, racks=["a", "b", "a", "b", "c"]) changes it.
    """
    settings = {"cluster_size": 3, **_settings(request, "kafka_cluster")}
    broker = _start(request.config, tmp_path_factory.mktemp("minikafka-cluster"), settings)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_session_broker(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedBroker]:
    """One Kafka broker for the whole session, with the default properties, started on first
    use; tests share it, so give each its own topics: kafka_topic(broker=kafka_session_broker).
    """
    broker = _start(pytestconfig, tmp_path_factory.mktemp("minikafka-session"), {})
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def kafka_bootstrap(kafka_broker: ThreadedBroker) -> str:
    """The bootstrap address of this test's kafka_broker, e.g. "127.0.0.1:40123": pass it to
    any client as bootstrap.servers."""
    return kafka_broker.bootstrap


@pytest.fixture
def kafka_topic(
    request: pytest.FixtureRequest,
) -> Callable[..., str]:
    """A factory of topic names no other test uses: kafka_topic() creates one on this test's
    kafka_broker (the broker's num.partitions) and returns its name; kafka_topic(3) with
    3 partitions; broker=... on another broker (kafka_session_broker); create=False only
    makes the name."""
    base = re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name)[:120]

    def make(
        partitions: int | None = None, *, broker: ThreadedBroker | None = None, create: bool = True
    ) -> str:
        name = f"{base}-{next(_names)}"
        if create:
            target = broker if broker is not None else request.getfixturevalue("kafka_broker")
            target.create_topic(name, partitions)
        return name

    return make


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    times = config.stash.get(_READY_MS, [])
    if not times:
        return
    summary = {
        "brokers": len(times),
        "ready_ms_median": round(statistics.median(times), 1),
        "ready_ms_max": round(max(times), 1),
        "ready_ms_min": round(min(times), 1),
    }
    terminalreporter.write_line(
        f"minikafka: {summary['brokers']} broker(s) started; start-to-ready median "
        f"{summary['ready_ms_median']} ms, min {summary['ready_ms_min']} ms, "
        f"max {summary['ready_ms_max']} ms"
    )
    path = config.getoption("--minikafka-report")
    if path:
        Path(path).write_text(json.dumps(summary, indent=2) + "\n")
