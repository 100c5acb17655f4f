"""Kafka Streams and Kafka Connect, Apache Kafka's own frameworks, as real JVM clients of a
real broker (`make ecosystem`; `make test` deselects them).

`make ecosystem` resolves their jars with Maven (tests/ecosystem/streams/pom.xml,
tests/ecosystem/connect/pom.xml) into build/ecosystem/<name>-<version>/lib and compiles
streams/WordCount.java; a missing build fails the test rather than skipping it.

Each test runs against minikafka and against Apache Kafka 4.0.0 (the ``target`` fixture):
the same checks, the segment files read the same way (the format is Kafka's).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.records import decode_records
from protocol.schema import Message
from storage.topic_config_store import DIR_NAME, decode
from tests.support.broker_process import BrokerProcess
from tests.support.kafka_reference import KafkaReference
from tests.support.produce import stored
from tests.support.raw_client import RawClient

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "ecosystem"
LOG4J_CONFIG = Path(__file__).parent / "log4j2.properties"
# Must match ECOSYSTEM_STREAMS_VERSION / ECOSYSTEM_CONNECT_VERSION in the Makefile: the newest
# 4.x Central serves (connect-file lags the other artifacts of a release).
STREAMS_VERSION = "4.4.0"
CONNECT_VERSION = "4.3.1"
COMMIT, ABORT = 1, 0
# Each test runs against minikafka and against Apache Kafka 4.0.0 (the version minikafka
# implements; tests/support/kafka_reference.py, its jars from `make kafka-jars`).
TARGETS = ("minikafka", "kafka-4.0.0")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/ecosystem/" in str(item.path):
            item.add_marker(pytest.mark.ecosystem)


def java() -> str:
    path = shutil.which("java")
    if path is None:
        pytest.fail("java not installed: run `make ecosystem`")
    return path


def classpath(name: str, version: str) -> str:
    """The lib (and classes, when compiled) of one build/ecosystem directory."""
    home = BUILD / f"{name}-{version}"
    if not (home / "lib" / ".installed").exists():
        pytest.fail(f"{home}/lib missing: run `make ecosystem`")
    parts = [f"{home / 'lib'}/*"]
    if (home / "classes").exists():
        if not (home / "classes" / ".compiled").exists():
            pytest.fail(f"{home}/classes not compiled: run `make ecosystem`")
        parts.insert(0, str(home / "classes"))
    return ":".join(parts)


def jvm_command(cp: str, main: str, *args: str, heap: str = "384m") -> list[str]:
    return [
        java(),
        # Two cores are shared by the broker, the JVM and the test.
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
        "-cp",
        cp,
        main,
        *args,
    ]


class Jvm:
    """One JVM, its stdout and stderr lines collected as they come; killed by ``kill``."""

    def __init__(self, command: list[str], cwd: Path | None = None) -> None:
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._readers = [
            threading.Thread(target=self._drain, args=(self.proc.stdout, self.stdout), daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stderr, self.stderr), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _drain(stream: object, into: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append(line.rstrip("\n"))

    def running(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self) -> str:
        return "\n".join(self.stderr[-40:])

    def kill(self) -> None:
        """SIGKILL: no shutdown hook, no last commit."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        self._close()

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM: the JVM's shutdown hooks run (a graceful stop)."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            code = self.proc.wait(timeout)
        finally:
            self.kill()
        return code

    def _close(self) -> None:
        for reader in self._readers:
            reader.join(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@dataclass(frozen=True)
class Target:
    """The broker a test runs against: minikafka, or Apache Kafka as the reference."""

    name: str
    bootstrap: str
    port: int
    # Where the partition directories (Kafka's segment file format, both) are.
    log_dir: Path

    @property
    def is_minikafka(self) -> bool:
        return self.name == "minikafka"


@pytest.fixture(params=TARGETS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "minikafka":
        proc = BrokerProcess(
            tmp_path / "data",
            # Kafka's 3 s wait for more members would only slow each (re)join of one member.
            {"group.initial.rebalance.delay.ms": "100"},
        ).start()
        try:
            yield Target("minikafka", proc.bootstrap, proc.port, proc.data_dir)
        finally:
            proc.kill() if not proc.is_running() else proc.stop()
        return
    version = request.param.removeprefix("kafka-")
    kafka = KafkaReference(version, data_dir=tmp_path / "kafka")
    try:
        kafka.start()
        yield Target(request.param, kafka.bootstrap, kafka.port, kafka.data_dir / "logs")
    finally:
        kafka.stop()


def cleanup_policy(target: Target, topic: str) -> str:
    """The topic's cleanup.policy as DescribeConfigs answers it; on minikafka, also the
    override it stored (Kafka keeps its own in the metadata log)."""
    with RawClient(target.port) as client:
        answer = client.request(
            DESCRIBE_CONFIGS,
            4,
            Message(
                resources=[Message(resource_type=2, resource_name=topic, configuration_keys=None)],
                include_synonyms=False,
                include_documentation=False,
            ),
        )
    [result] = answer.results
    assert result.error_code == 0, result
    [policy] = [c.value for c in result.configs if c.name == "cleanup.policy"]
    if target.is_minikafka:
        assert topic_configs(target.log_dir)[topic].get("cleanup.policy") == policy
    assert isinstance(policy, str)
    return policy


def topic_configs(data_dir: Path) -> dict[str, dict[str, str]]:
    """The config overrides minikafka stored, by topic name."""
    found: dict[str, dict[str, str]] = {}
    directory = data_dir / DIR_NAME
    for file in directory.iterdir() if directory.exists() else ():
        if file.suffix == ".config":
            name, configs = decode(file.read_bytes())
            found[name] = dict(configs)
    return found


@dataclass(frozen=True)
class Stored:
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass
class PartitionView:
    """A partition as stored: data records by transaction outcome, and its markers."""

    committed: list[Stored]
    aborted: list[Stored]
    open: list[Stored]
    non_transactional: list[Stored]
    markers: list[tuple[int, int]]  # (offset, COMMIT or ABORT)


def partition_view(data_dir: Path, topic: str, partition: int) -> PartitionView:
    """What a read_committed reader sees, worked out from the segment files: each
    transactional batch belongs to its producer's current transaction, which the producer's
    next control batch (marker) commits or aborts."""
    view = PartitionView([], [], [], [], [])
    pending: dict[int, list[Stored]] = {}
    for header, raw in stored(data_dir, topic, partition):
        records = decode_records(raw, header)
        if header.is_control:
            (record,) = records
            assert record.key is not None
            kind = struct.unpack(">hh", record.key)[1]
            view.markers.append((header.base_offset, kind))
            done = pending.pop(header.producer_id, [])
            (view.committed if kind == COMMIT else view.aborted).extend(done)
            continue
        rows = [Stored(header.base_offset + r.offset_delta, r.key, r.value) for r in records]
        if header.is_transactional:
            pending.setdefault(header.producer_id, []).extend(rows)
        else:
            view.non_transactional.extend(rows)
    view.open = [row for rows in pending.values() for row in rows]
    view.committed.sort(key=lambda row: row.offset)
    return view
