"""The `minikafka` process as a simulated cluster: minikafka.cluster.size from the command
line, nodes on consecutive ports, `minikafka fault broker-stop/broker-start` from a shell, and
bad cluster settings refused with a clear message."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.messages.metadata import METADATA
from protocol.schema import Message
from tests.support.broker_process import run_refused
from tests.support.fault_broker import FaultBroker
from tests.support.raw_client import RawClient


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[FaultBroker]:
    proc = FaultBroker(
        tmp_path / "data",
        {"minikafka.cluster.size": "3", "minikafka.cluster.racks": "r1,r2,r1", "node.id": "4"},
    ).start()
    try:
        yield proc
    finally:
        proc.stop()


def brokers(port: int) -> list[tuple[int, int, str | None]]:
    with RawClient(port) as client:
        answer = client.request(
            METADATA,
            12,
            Message(
                topics=[],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
    return [(b.node_id, b.port, b.rack) for b in answer.brokers]


def fault(proc: FaultBroker, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker", "fault", "--url", proc.control_url,
         "--data-dir", str(proc.data_dir), *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_the_process_serves_three_nodes_and_the_cli_stops_and_starts_one(
    cluster: FaultBroker,
) -> None:
    port = cluster.port
    assert brokers(port) == [(4, port, "r1"), (5, port + 1, "r2"), (6, port + 2, "r1")]
    done = fault(cluster, "broker-stop", "--node", "5")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] is True
    with pytest.raises(ConnectionRefusedError):
        RawClient(port + 1)
    assert brokers(port + 2) == [(4, port, "r1"), (6, port + 2, "r1")]
    refused = fault(cluster, "broker-stop", "--node", "9")
    assert refused.returncode == 1 and "no node 9" in refused.stderr
    done = fault(cluster, "broker-start", "--node", "5")
    assert done.returncode == 0, done.stderr
    assert [b[0] for b in brokers(port + 1)] == [4, 5, 6]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"minikafka.cluster.size": "0"}, "must be between 1 and 16"),
        ({"minikafka.cluster.size": "17"}, "must be between 1 and 16"),
        (
            {"minikafka.cluster.size": "2", "minikafka.cluster.racks": "a,b,c"},
            "give one rack per node",
        ),
    ],
)
def test_bad_cluster_settings_stop_the_start_with_a_clear_message(
    tmp_path: Path, overrides: dict[str, str], message: str
) -> None:
    done = run_refused({"log.dirs": str(tmp_path / "data"), **overrides})
    assert done.returncode != 0
    assert message in done.stderr
    assert "Traceback" not in done.stderr
