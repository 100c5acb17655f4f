"""A start the environment refuses ends in one line naming the listener or the path and the
fix, exit status 2, and the data directory as it was (real ``python -m broker`` processes).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.records import build_batch
from tests.e2e.test_admin_configs import create
from tests.e2e.test_data_dir_lock import listing
from tests.support.broker_process import run_refused, running
from tests.support.produce import fetch_partition, produce
from tests.support.raw_client import RawClient

START_TIMEOUT_S = 30.0
NOBODY = 65534
ROOT = os.geteuid() == 0
# The repository, for ``python -m broker`` whatever the test's working directory.
PROJECT = Path(__file__).resolve().parents[2]


def start(
    settings: dict[str, str], user: int | None = None, command: list[str] | None = None
) -> tuple[int, str]:
    """Start a broker expected to give up (as ``user`` if given, or with ``command``): its
    exit code and the one ERROR line it logged."""
    if user is not None:
        command = [sys.executable, str(PROJECT / "tests/support/run_as.py"), str(user)]
    run = run_refused(settings, command=command, cwd=PROJECT, timeout=START_TIMEOUT_S)
    assert "Traceback" not in run.stderr, run.stderr
    assert "minikafka started" not in run.stderr
    errors = [line for line in run.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, run.stderr
    return run.returncode, errors[0]


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory other users can traverse (pytest's tmp_path is private to root)."""
    with tempfile.TemporaryDirectory(prefix="minikafka-start-") as name:
        path = Path(name)
        path.chmod(0o755)
        yield path


def test_listener_port_in_use_names_the_listener_and_the_override(
    tmp_path: Path, port_in_use: int
) -> None:
    data = tmp_path / "data"
    code, line = start({"listeners": f"PLAINTEXT://127.0.0.1:{port_in_use}", "log.dirs": str(data)})
    assert code == 2
    assert (
        f"listener PLAINTEXT: 127.0.0.1:{port_in_use} is in use: is another broker running? "
        "--override listeners=PLAINTEXT://127.0.0.1:<port> picks another port"
    ) in line
    # Not even created: ports are bound before the data directory is touched.
    assert not data.exists()


def test_control_port_in_use_touches_nothing(tmp_path: Path, port_in_use: int) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    before = listing(data)
    code, line = start(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data),
            "minikafka.control.listener": f"127.0.0.1:{port_in_use}",
        }
    )
    assert code == 2
    assert f"control plane (minikafka.control.listener): 127.0.0.1:{port_in_use} is in use" in line
    assert "--override minikafka.control.listener=127.0.0.1:<port>" in line
    assert listing(data) == before


def test_listener_host_that_does_not_resolve(tmp_path: Path) -> None:
    data = tmp_path / "data"
    code, line = start({"listeners": "PLAINTEXT://no-such-host.invalid:0", "log.dirs": str(data)})
    assert code == 2
    assert "listener PLAINTEXT: host 'no-such-host.invalid' does not resolve" in line
    assert "IP address" in line
    assert not data.exists()


def test_log_dirs_naming_a_file(tmp_path: Path) -> None:
    path = tmp_path / "a-file"
    path.write_bytes(b"not a directory")
    code, line = start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(path)})
    assert code == 2
    assert f"{path} is a file, not a directory: point log.dirs at a directory" in line
    assert path.read_bytes() == b"not a directory"


@pytest.mark.skipif(not ROOT, reason="runs the broker as another user")
def test_privileged_port(shared_dir: Path) -> None:
    data = shared_dir / "data"
    data.mkdir()
    os.chown(data, NOBODY, NOBODY)
    code, line = start(
        {"listeners": "PLAINTEXT://127.0.0.1:80", "log.dirs": str(data)}, user=NOBODY
    )
    assert code == 2
    assert "listener PLAINTEXT: cannot bind 127.0.0.1:80: ports below 1024 need root" in line
    assert "--override listeners=PLAINTEXT://127.0.0.1:<port> with a port above 1023" in line
    assert listing(data) == {}


@pytest.mark.skipif(not ROOT, reason="runs the broker as another user")
def test_bind_mount_owned_by_another_user(shared_dir: Path) -> None:
    # Docker: the host made the bind mount as uid 1000, the image runs as another uid.
    data = shared_dir / "data"
    data.mkdir()
    (data / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    os.chown(data, 1000, 1000)
    before = listing(data)
    code, line = start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data)}, NOBODY)
    assert code == 2
    assert f"{data} is owned by uid 1000 and this broker runs as uid {NOBODY}" in line
    assert f"chown -R {NOBODY} {data}" in line
    assert "--build-arg UID=1000" in line
    assert listing(data) == before


def test_data_dir_not_creatable(shared_dir: Path) -> None:
    parent = shared_dir / "parent"
    parent.mkdir()
    user = None
    if ROOT:
        user = NOBODY
    else:
        parent.chmod(0o555)
    data = parent / "data"
    code, line = start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data)}, user)
    assert code == 2
    if ROOT:
        assert f"log.dirs {data}: {parent} is owned by uid 0 and this broker runs as" in line
        assert f"chown -R {NOBODY} {parent}" in line
    else:
        assert f"log.dirs {data}: {parent} is not writable" in line
    assert not data.exists()


def test_too_few_descriptors_for_the_segments_names_the_limit(tmp_path: Path) -> None:
    """Every segment keeps its log open (as Kafka's): a data directory with more segments
    than the hard open-file limit allows ends in one line naming the limit, not a traceback.
    Below the hard limit the broker raises its soft limit itself, as the JVM does."""
    data = tmp_path / "data"
    with running(data) as proc, RawClient(proc.port) as client:
        assert create(client, "many", configs={"segment.bytes": "200"}).error_code == 0
        for i in range(300):
            assert produce(client, "many", build_batch([(b"k%d" % i, b"v" * 60)])).error_code == 0
    assert len(list((data / "many-0").glob("*.log"))) >= 300
    settings = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data)}
    prlimit = ["prlimit", "--nofile=200:200", sys.executable, "-m", "broker"]
    code, line = start(settings, command=prlimit)
    assert code == 2
    assert f"log.dirs {data}: this process's open-file limit was reached while opening" in line
    assert "(this process may open 200)" in line and "ulimit -n 100000" in line
    # A soft limit below the hard one is raised: the same directory opens, every record there.
    raised = ["prlimit", "--nofile=200:4096", sys.executable, "-m", "broker"]
    for key, value in {**settings, "log.level": "INFO"}.items():
        raised += ["--override", f"{key}={value}"]
    broker = subprocess.Popen(
        raised,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=PROJECT,
    )
    try:
        assert broker.stderr is not None
        seen = []
        for line in broker.stderr:  # ends when the broker does: bounded by the kill below
            seen.append(line)
            if "minikafka started" in line:
                break
        assert any("open-file limit raised from 200 to 4096" in x for x in seen), seen
        assert "minikafka started" in seen[-1], seen
    finally:
        broker.kill()
        broker.wait(30)
        if broker.stderr is not None:
            broker.stderr.close()
    with running(data) as proc, RawClient(proc.port) as client:
        assert fetch_partition(client, "many", 299).error_code == 0
