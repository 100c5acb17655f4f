"""The kafka-topics.sh stand-in librdkafka's suite runs (test_kafka_topics in test.c)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage.topic_config_store import TopicConfigStore
from tests.peer import kafka_cli
from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        yield proc
    finally:
        proc.kill() if not proc.is_running() else proc.stop()


def run_script(kafka_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    # As test.c runs it: system() with the line the test formatted.
    return subprocess.run(
        f"{kafka_path}/bin/{command}", shell=True, capture_output=True, text=True, timeout=60
    )


def test_kafka_topics_create_alter_and_delete_reach_the_broker_as_kafkas_cli_does(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    kafka_path = kafka_cli.install(tmp_path / "kafka")
    bootstrap = f"--bootstrap-server {broker.bootstrap}"

    created = run_script(
        kafka_path,
        f'kafka-topics.sh {bootstrap} --create --topic "ts_topic" --replication-factor 1 '
        "--partitions 1 --config message.timestamp.type=LogAppendTime",
    )
    assert created.returncode == 0, created.stderr
    altered = run_script(
        kafka_path, f"kafka-topics.sh {bootstrap} --alter --topic ts_topic --partitions 3"
    )
    assert altered.returncode == 0, altered.stderr
    assert (
        run_script(
            kafka_path, f"kafka-topics.sh {bootstrap} --create --topic gone --partitions 1"
        ).returncode
        == 0
    )
    deleted = run_script(kafka_path, f"kafka-topics.sh {bootstrap} --delete --topic gone")
    assert deleted.returncode == 0, deleted.stderr
    broker.stop()

    data = broker.data_dir
    assert sorted(p.name for p in data.glob("ts_topic-*")) == [
        "ts_topic-0",
        "ts_topic-1",
        "ts_topic-2",
    ]
    assert not list(data.glob("gone-*"))
    stored = {entry.name: entry.configs for entry in TopicConfigStore.open(data).entries()}
    assert stored["ts_topic"] == {"message.timestamp.type": "LogAppendTime"}


def test_scripts_we_do_not_serve_fail_with_the_reason(tmp_path: Path) -> None:
    kafka_path = kafka_cli.install(tmp_path / "kafka")

    done = run_script(kafka_path, "kafka-acls.sh --bootstrap-server 127.0.0.1:1 --add")

    assert done.returncode == 1
    assert "ACLs" in done.stderr
