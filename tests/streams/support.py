"""Running a stream application as a process, feeding it input and reading its output."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[2]
APPS = Path(__file__).resolve().parent / "apps"
VENV_PYTHON = ROOT / "build" / "streams-venv" / "bin" / "python"
# Seconds measured by the tests, reported at the end of the run (conftest).
TIMINGS: dict[str, float] = {}
# Other facts worth seeing in the run's output (duplicates an at-least-once flow made).
NOTES: dict[str, str] = {}


def streams_python() -> str:
    return os.environ.get("MINIKAFKA_STREAMS_PYTHON", str(VENV_PYTHON))


class App:
    """One run of apps/<script> with arguments; its output (both streams) goes to a file
    so a failure can show it."""

    def __init__(self, python: str, script: str, log: Path, *args: str, **env: str) -> None:
        self.log = log
        self._file = log.open("ab")
        self.proc = subprocess.Popen(
            [python, str(APPS / script), *args],
            stdout=self._file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE,
            cwd=str(log.parent),
            env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_for(self, needle: str, timeout: float = 60.0) -> None:
        if not until(lambda: needle in self.text() or not self.alive(), timeout):
            raise AssertionError(f"no {needle!r} in {timeout} s:\n{self.text()[-4000:]}")
        assert needle in self.text(), f"app exited ({self.proc.returncode}):\n{self.text()[-4000:]}"

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait(30)
        self._close()

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, as an orchestrator stops an instance; SIGKILL if it does not exit."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(30)
        self._close()
        return code

    def _close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self._file.close()


def until(check: Callable[[], bool], timeout: float) -> bool:
    """Poll ``check`` (each call does real work: a fetch or a file read) until it holds."""
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.1)
    return check()


def create_topics(bootstrap: str, partitions: int, *names: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes, bytes]]) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, value, key)
    assert producer.flush(30) == 0


def consume_all(
    bootstrap: str, topic: str, *, committed_only: bool = True, idle: float = 1.0
) -> list[Any]:
    """Every record of ``topic`` up to its end now (read_committed: the last stable offset),
    through a fresh consumer that commits nothing."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "streams-test-reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed" if committed_only else "read_uncommitted",
            "enable.partition.eof": True,
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=10)
        partitions = list(meta.topics[topic].partitions)
        consumer.assign(
            [
                confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                for p in partitions
            ]
        )
        records: list[Any] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + 30
        while len(at_end) < len(partitions) and time.monotonic() < deadline:
            for m in consumer.consume(500, timeout=idle):
                if m.error() is None:
                    records.append(m)
                    at_end.discard(m.partition())
                elif m.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
        return records
    finally:
        consumer.close()
