"""A Kafka Connect distributed worker (ConnectDistributed, connect-runtime with connect-file)
against a real broker: its config, offset and status topics on the broker, a FileStreamSource
connector (a file's lines into a topic) created through its REST API, then the worker
restarted while the file grows.

Two restarts: a graceful one (SIGTERM, the worker commits its offsets on the way out) with
at-least-once source tasks, and a SIGKILL with exactly.once.source.support=enabled, where
each batch of records and its source offsets are one transaction. Either way the restarted
worker finds the connector in its config topic, resumes from the offset it stored and the
topic holds every line once, in order: checked on the segment files (committed transactions
only, for the exactly-once worker) and on the offsets topic's last committed position.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.ecosystem.conftest import (
    CONNECT_VERSION,
    Jvm,
    PartitionView,
    Target,
    classpath,
    cleanup_policy,
    jvm_command,
    partition_view,
)
from tests.support.polling import until_sync
from tests.support.produce import create_partitioned_topic
from tests.support.raw_client import RawClient

TOPIC, CONNECTOR = "file-lines", "file-src"
INTERNAL = {"config": "connect-configs", "offset": "connect-offsets", "status": "connect-status"}
OFFSET_PARTITIONS = 3
LINES_BEFORE, LINES_AFTER = 500, 700


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def worker_config(path: Path, bootstrap: str, rest_port: int, exactly_once: bool) -> Path:
    settings = {
        "bootstrap.servers": bootstrap,
        "group.id": "connect-cluster",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "config.storage.topic": INTERNAL["config"],
        "offset.storage.topic": INTERNAL["offset"],
        "status.storage.topic": INTERNAL["status"],
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.storage.partitions": str(OFFSET_PARTITIONS),
        "status.storage.partitions": "1",
        "offset.flush.interval.ms": "500",
        "listeners": f"http://127.0.0.1:{rest_port}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": str(rest_port),
        # A restarted worker rejoins at once instead of waiting out its old member.
        "scheduled.rebalance.max.delay.ms": "0",
        "exactly.once.source.support": "enabled" if exactly_once else "disabled",
    }
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return path


def parse(body: bytes) -> Any:
    # Jetty answers 404 in HTML while the worker is still registering its resources.
    try:
        return json.loads(body) if body else None
    except ValueError:
        return body.decode(errors="replace")


class Rest:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, parse(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, parse(error.read())

    def up(self) -> bool:
        try:
            return self.call("GET", "/connectors")[0] == 200
        except OSError:
            return False

    def task_running(self) -> bool:
        try:
            status, body = self.call("GET", f"/connectors/{CONNECTOR}/status")
        except OSError:
            return False
        return (
            status == 200
            and body["connector"]["state"] == "RUNNING"
            and [t["state"] for t in body["tasks"]] == ["RUNNING"]
        )


def start_worker(config: Path) -> Jvm:
    cp = classpath("connect", CONNECT_VERSION)
    return Jvm(jvm_command(cp, "org.apache.kafka.connect.cli.ConnectDistributed", str(config)))


def topic_lines(view: PartitionView, exactly_once: bool) -> list[str]:
    rows = view.committed if exactly_once else view.non_transactional
    if exactly_once:
        assert not view.non_transactional
    else:
        assert not view.committed and not view.aborted and not view.open
    return [(row.value or b"").decode() for row in rows]


def stored_position(data_dir: Path, source: Path, exactly_once: bool) -> int | None:
    """The last position the worker stored for the file in its offsets topic."""
    key = json.dumps([CONNECTOR, {"filename": str(source)}], separators=(",", ":"))
    position = None
    for p in range(OFFSET_PARTITIONS):
        view = partition_view(data_dir, INTERNAL["offset"], p)
        rows = view.committed if exactly_once else view.non_transactional
        for row in rows:
            if row.key is not None and row.key.decode() == key and row.value is not None:
                position = json.loads(row.value)["position"]
    return position


@pytest.mark.timeout(400)
@pytest.mark.parametrize(
    "exactly_once", [False, True], ids=["sigterm-at-least-once", "sigkill-exactly-once"]
)
def test_file_source_resumes_from_stored_offsets(
    target: Target, tmp_path: Path, exactly_once: bool
) -> None:
    data_dir = target.log_dir
    with RawClient(target.port) as client:
        create_partitioned_topic(client, TOPIC, 1)
    source = tmp_path / "source.txt"
    lines = [f"line-{n:05d}" for n in range(LINES_BEFORE + LINES_AFTER)]
    source.write_text("".join(f"{text}\n" for text in lines[:LINES_BEFORE]))
    rest_port = free_port()
    config = worker_config(
        tmp_path / "worker.properties", target.bootstrap, rest_port, exactly_once
    )
    rest = Rest(rest_port)

    def stored_lines() -> list[str]:
        return topic_lines(partition_view(data_dir, TOPIC, 0), exactly_once)

    worker = start_worker(config)
    try:
        assert until_sync(rest.up, 120), worker.log_tail()
        connector = {
            "name": CONNECTOR,
            "config": {
                "connector.class": "FileStreamSource",
                "tasks.max": "1",
                "file": str(source),
                "topic": TOPIC,
            },
        }
        answers: list[tuple[int, Any]] = []

        def created() -> bool:
            # 409 while the worker's group is still rebalancing; once created, not again
            # (until_sync asks once more at the end).
            if not answers or answers[-1][0] != 201:
                answers.append(rest.call("POST", "/connectors", connector))
            return answers[-1][0] == 201

        assert until_sync(created, 60), answers[-1]
        assert until_sync(rest.task_running, 60), worker.log_tail()
        assert until_sync(lambda: len(stored_lines()) == LINES_BEFORE, 60), worker.log_tail()
        assert until_sync(
            lambda: stored_position(data_dir, source, exactly_once) == source.stat().st_size, 30
        ), worker.log_tail()
        # The file grows; the worker stops while (or right after) it reads the new lines.
        with source.open("a") as out:
            out.write("".join(f"{text}\n" for text in lines[LINES_BEFORE:]))
        if exactly_once:
            worker.kill()
        else:
            assert worker.terminate() in (0, 130, 143), worker.log_tail()
    finally:
        worker.kill()

    worker = start_worker(config)
    try:
        assert until_sync(rest.up, 120), worker.log_tail()
        # The connector comes back from the config topic, not from a new request.
        assert until_sync(lambda: rest.call("GET", "/connectors") == (200, [CONNECTOR]), 60)
        assert until_sync(lambda: len(stored_lines()) >= len(lines), 90), worker.log_tail()
        assert until_sync(
            lambda: stored_position(data_dir, source, exactly_once) == source.stat().st_size, 30
        ), worker.log_tail()
        assert stored_lines() == lines
    finally:
        worker.kill()

    for name in INTERNAL.values():
        assert cleanup_policy(target, name) == "compact", name
