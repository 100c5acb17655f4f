"""One broker per data directory (Kafka's log dir ``.lock``), and a start that is going to
fail touches nothing there.

Two brokers on one ``log.dirs`` used to both start and overwrite each other's acknowledged
records; a start that failed on its port first ran crash recovery in the directory.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from protocol.records import build_batch
from tests.support.broker_process import BrokerProcess, run_refused
from tests.support.produce import create_topic, produce, stored_values
from tests.support.raw_client import RawClient

LOCKED = (
    "Failed to acquire lock on file .lock in {}. A Kafka instance in another process or "
    "thread is using this directory. Stop that broker, or point log.dirs at another directory."
)
# Nothing periodic writes in the directory while a test compares its listings.
QUIET = {"minikafka.producer.snapshot.interval.ms": "3600000"}
START_TIMEOUT_S = 30.0

Listing = dict[str, tuple[str, int, int, str]]


def listing(root: Path) -> Listing:
    """Every entry under ``root``: kind, size, mtime (ns) and a hash of a file's bytes."""
    entries: Listing = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            if path.is_dir():
                entries[str(path.relative_to(root))] = ("dir", 0, st.st_mtime_ns, "")
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                entries[str(path.relative_to(root))] = ("file", st.st_size, st.st_mtime_ns, digest)
    return entries


def run_broker(data: Path, port: int = 0) -> subprocess.CompletedProcess[str]:
    """Start a broker process that is expected to give up: its exit code and stderr."""
    settings = {"listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(data), **QUIET}
    return run_refused(settings, timeout=START_TIMEOUT_S)


def produce_values(port: int, topic: str, values: list[bytes]) -> list[int]:
    with RawClient(port) as client:
        create_topic(client, topic)
        offsets = []
        for value in values:
            answer = produce(client, topic, build_batch([(None, value)]))
            assert answer.error_code == 0, answer
            offsets.append(answer.base_offset)
    return offsets


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_second_broker_on_the_same_data_dir_is_refused_and_changes_nothing(data: Path) -> None:
    first = BrokerProcess(data, QUIET).start()
    try:
        first_values = [f"first-{i}".encode() for i in range(20)]
        assert produce_values(first.port, "t", first_values) == list(range(20))
        before = listing(data)
        assert ".lock" in before

        second = run_broker(data)

        assert second.returncode == 2, second.stderr
        assert LOCKED.format(data.absolute()) in second.stderr
        assert "Traceback" not in second.stderr
        assert "minikafka started" not in second.stderr
        # Not even recovery or a snapshot: the directory is as the first broker left it.
        assert listing(data) == before
        # The first broker kept serving and its acknowledged records are where it put them.
        more = [f"first-{i}".encode() for i in range(20, 40)]
        assert produce_values(first.port, "t", more) == list(range(20, 40))
    finally:
        assert first.stop() == 0
    assert stored_values(data, "t") == first_values + more


def test_start_failing_on_its_port_runs_no_recovery(data: Path, port_in_use: int) -> None:
    broker = BrokerProcess(data, QUIET).start()
    values = [f"v-{i}".encode() for i in range(10)]
    produce_values(broker.port, "t", values)
    # No clean-shutdown marker: the next start that gets past its checks recovers.
    broker.kill()
    before = listing(data)

    failed = run_broker(data, port=port_in_use)

    assert failed.returncode == 2, failed.stderr
    assert (
        f"listener PLAINTEXT: 127.0.0.1:{port_in_use} is in use: is another broker "
        "running? --override listeners=PLAINTEXT://127.0.0.1:<port> picks another port"
    ) in failed.stderr
    assert "Traceback" not in failed.stderr
    assert "recover" not in failed.stderr
    assert listing(data) == before
    again = BrokerProcess(data, QUIET).start()
    try:
        again.wait_for_log("no clean shutdown marker: recovering")
    finally:
        again.stop()
    assert stored_values(data, "t") == values


def test_the_lock_dies_with_a_killed_broker(data: Path) -> None:
    first = BrokerProcess(data, QUIET).start()
    produce_values(first.port, "t", [b"before"])
    first.kill()
    again = BrokerProcess(data, QUIET).start()
    try:
        # It holds the lock now: a third start is refused.
        refused = run_broker(data)
        assert refused.returncode == 2
        assert LOCKED.format(data.absolute()) in refused.stderr
        produce_values(again.port, "t", [b"after"])
    finally:
        assert again.stop() == 0
    assert stored_values(data, "t") == [b"before", b"after"]
