"""The pytest plugin, run by a pytest of its own on a small generated suite: per-test
brokers configured by markers and parameters, unique topics, and the start-to-ready report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SUITE = """
import pytest
from pathlib import Path


def test_each_test_gets_its_own_clean_broker(kafka_broker, kafka_bootstrap, kafka_topic):
    topic = kafka_topic()
    assert kafka_bootstrap == kafka_broker.bootstrap
    assert (Path(kafka_broker.data_dir) / f"{topic}-0").is_dir()
    assert sorted(p.name for p in Path(kafka_broker.data_dir).glob("*-0")) == [f"{topic}-0"]


@pytest.mark.minikafka(num_partitions=3)
def test_marker_sets_broker_properties(kafka_broker, kafka_topic):
    topic = kafka_topic()
    assert len(list(Path(kafka_broker.data_dir).glob(f"{topic}-*"))) == 3


@pytest.mark.parametrize("kafka_broker", [{"num_partitions": 2}], indirect=True)
def test_parameters_set_broker_properties(kafka_broker, kafka_topic):
    topic = kafka_topic()
    assert len(list(Path(kafka_broker.data_dir).glob(f"{topic}-*"))) == 2


def test_faults_are_at_hand(kafka_broker):
    kafka_broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=1)
    assert kafka_broker.faults.status()["faults"][0]["api"] == "Produce"


def test_session_broker_is_shared(kafka_session_broker, kafka_topic):
    first = kafka_topic(broker=kafka_session_broker)
    second = kafka_topic(broker=kafka_session_broker)
    assert first != second
"""


def test_plugin_fixtures_markers_and_report(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SUITE)
    report = tmp_path / "report.json"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if not any(ep.name == "minikafka" for ep in entry_points(group="pytest11")):
        # An install older than the entry point: load the plugin by name.
        args += ["-p", "minikafka.pytest_plugin"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [*args, f"--minikafka-report={report}", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed" in done.stdout
    assert "minikafka: 5 broker(s) started; start-to-ready median" in done.stdout
    figures = json.loads(report.read_text())
    assert figures["brokers"] == 5
    assert 0 < figures["ready_ms_median"] < 10_000


TYPO_SUITE = """
import pytest


@pytest.mark.minikafka(num_partition=3)
def test_misspelt_marker(kafka_broker):
    pass


@pytest.mark.parametrize("kafka_broker", [{"auto_create_topic_enable": False}], indirect=True)
def test_misspelt_parameter(kafka_broker):
    pass
"""


def test_a_misspelt_property_is_refused_with_the_closest_name(tmp_path: Path) -> None:
    (tmp_path / "test_typo.py").write_text(TYPO_SUITE)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if not any(ep.name == "minikafka" for ep in entry_points(group="pytest11")):
        args += ["-p", "minikafka.pytest_plugin"]
    done = subprocess.run(
        [*args, str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert "2 errors" in done.stdout, done.stdout + done.stderr
    assert (
        "unknown broker property 'num.partition' (@pytest.mark.minikafka num_partition=3): "
        "did you mean num_partitions?"
    ) in done.stdout
    assert (
        "unknown broker property 'auto.create.topic.enable' (kafka_broker parameter "
        "auto_create_topic_enable=False): did you mean auto_create_topics_enable?"
    ) in done.stdout
