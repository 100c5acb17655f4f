"""A start the environment refuses ends in one line naming the listener or the path and the
fix, exit status 2, and the data directory as it was (real ``python -m broker`` processes).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_data_dir_lock import listing
from tests.support.broker_process import run_refused

START_TIMEOUT_S = 30.0
NOBODY = 65534
ROOT = os.geteuid() == 0
# The repository, for ``python -m broker`` whatever the test's working directory.
PROJECT = Path(__file__).resolve().parents[2]


def start(settings: dict[str, str], user: int | None = None) -> tuple[int, str]:
    """Start a broker expected to give up (as ``user`` if given): its exit code and the one
    ERROR line it logged."""
    command = None
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
