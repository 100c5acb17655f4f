"""The compose files' client script (docker/compose-client.py), run as the containers run it,
against a real broker process: one node (docker-compose.yml) and a simulated 3-node cluster
(docker-compose.cluster.yml), where it must see three nodes and write through each."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.broker_process import running
from tests.support.produce import stored_values

SCRIPT = Path(__file__).resolve().parents[2] / "docker" / "compose-client.py"


@pytest.mark.parametrize("nodes", [1, 3])
def test_the_compose_client_writes_and_reads_back_through_every_node(
    tmp_path: Path, nodes: int
) -> None:
    overrides = {"minikafka.cluster.size": str(nodes)} if nodes > 1 else {}
    with running(tmp_path / "data", overrides) as broker:
        done = subprocess.run(
            [sys.executable, str(SCRIPT), broker.bootstrap, "--nodes", str(nodes)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "compose client: OK" in done.stdout
        if nodes > 1:
            assert "cluster nodes: [1, 2, 3]" in done.stdout
        topic = re.search(r"to (compose-check-[0-9a-f]+)-0 ", done.stdout)
        assert topic is not None, done.stdout
        for partition in range(nodes):
            assert stored_values(broker.data_dir, topic.group(1), partition) == [
                f"record {partition}.{i}".encode() for i in range(5)
            ]


def test_the_compose_client_fails_when_the_cluster_has_fewer_nodes(tmp_path: Path) -> None:
    with running(tmp_path / "data") as broker:
        done = subprocess.run(
            [sys.executable, str(SCRIPT), broker.bootstrap, "--nodes", "3"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 1
    assert "expected 3 nodes" in done.stderr
