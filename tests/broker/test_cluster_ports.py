"""A simulated cluster's node k serves every listener at its port + k: listeners whose port
ranges overlap are refused at start, naming both, instead of failing to bind (or, for
advertised ports, sending clients to the wrong node)."""

from __future__ import annotations

import pytest

from broker.config.loader import make_config
from broker.config.model import ConfigError
from broker.lifecycle.server import node_listeners

TWO = {"listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"}


def test_ranges_that_overlap_are_refused_with_both_listeners_named() -> None:
    with pytest.raises(ConfigError, match=r"A takes ports 9092-9094, which B's port 9093"):
        make_config(
            {
                **TWO,
                "minikafka.cluster.size": "3",
                "listeners": "A://127.0.0.1:9092,B://127.0.0.1:9093",
            }
        )


def test_ranges_that_touch_are_served_each_node_on_its_own_ports() -> None:
    config = make_config(
        {**TWO, "minikafka.cluster.size": "3", "listeners": "A://127.0.0.1:9092,B://127.0.0.1:9095"}
    )
    ports = sorted(lst.port for lst in node_listeners(config))
    assert ports == [9092, 9093, 9094, 9095, 9096, 9097]


def test_one_node_keeps_listeners_on_neighbouring_ports() -> None:
    config = make_config({**TWO, "listeners": "A://127.0.0.1:9092,B://127.0.0.1:9093"})
    assert [lst.port for lst in node_listeners(config)] == [9092, 9093]


def test_a_range_past_the_last_port_is_refused() -> None:
    with pytest.raises(ConfigError, match="passes 65535"):
        make_config({"minikafka.cluster.size": "3", "listeners": "PLAINTEXT://127.0.0.1:65534"})


def test_advertised_ranges_overlap_only_on_one_host() -> None:
    props = {
        **TWO,
        "minikafka.cluster.size": "3",
        "listeners": "A://0.0.0.0:9092,B://0.0.0.0:29092",
    }
    # Containers reach broker:9092-9094, the host localhost:9093-9095 (published ports).
    config = make_config({**props, "advertised.listeners": "A://broker:9092,B://localhost:9093"})
    assert sorted(lst.advertised_port for lst in node_listeners(config)) == [
        9092,
        9093,
        9093,
        9094,
        9094,
        9095,
    ]
    with pytest.raises(ConfigError, match=r"advertised\.listeners"):
        make_config({**props, "advertised.listeners": "A://localhost:9092,B://localhost:9093"})


def test_ephemeral_ports_never_collide() -> None:
    config = make_config(
        {**TWO, "minikafka.cluster.size": "3", "listeners": "A://127.0.0.1:0,B://127.0.0.1:0"}
    )
    assert [lst.port for lst in node_listeners(config)] == [0] * 6
