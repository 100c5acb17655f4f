"""Start a real broker process (python -m broker) on an ephemeral port, for tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Extra broker settings for every BrokerProcess, "key=value;key=value": runs a test module
# under another configuration (tests/e2e/test_validation_workers.py: workers on).
OVERRIDES_ENV = "MINIKAFKA_TEST_BROKER_OVERRIDES"

READY = re.compile(r"minikafka started .*listeners=\w+://[^:]+:(\d+)")
LISTENER = re.compile(r"(\w+)://\[?[^\s\]]*?\]?:(\d+) \(advertised")


def broker_env() -> dict[str, str]:
    """This process's environment without KAFKA_* variables, for a broker process."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}


def env_overrides() -> dict[str, str]:
    text = os.environ.get(OVERRIDES_ENV, "")
    return dict(item.split("=", 1) for item in text.split(";") if item)


class BrokerProcess:
    def __init__(self, data_dir: Path, overrides: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.overrides = dict(overrides or {})
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        # Bound port of each listener by name (the first one is also ``port``).
        self.ports: dict[str, int] = {}
        self.lines: list[str] = []
        self._ready = threading.Event()
        self._reader: threading.Thread | None = None
        self.started_at = 0.0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> BrokerProcess:
        args = [sys.executable, "-m", "broker"]
        settings = {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(self.data_dir),
            "log.level": "INFO",
            **env_overrides(),
            **self.overrides,
        }
        for key, value in settings.items():
            args += ["--override", f"{key}={value}"]
        env = broker_env()
        self._ready.clear()
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
        )
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        if not self._ready.wait(timeout):
            self.kill()
            raise RuntimeError("broker did not start:\n" + "".join(self.lines[-30:]))
        return self

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            match = READY.search(line)
            if match:
                self.port = int(match.group(1))
                self.ports = {name: int(port) for name, port in LISTENER.findall(line)}
                self._ready.set()

    def log_text(self) -> str:
        return "".join(self.lines)

    def wait_for_log(self, pattern: str, timeout: float = 10.0) -> str:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if regex.search(line):
                    return line
            time.sleep(0.02)
        raise AssertionError(f"no log line matching {pattern!r}:\n{self.log_text()[-3000:]}")

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, and the exit code once the broker has shut down. ``timeout`` is a deadline
        for a hang, not a speed check: on a loaded machine a broker with thousands of
        partitions takes more than 10 s to stop. Past it the process is killed and its pipe
        closed before the failure is raised, so nothing of it leaks into later tests (an
        unclosed pipe or a Popen still running is reported by the test that collects it)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"the broker did not stop within {timeout} s of SIGTERM:\n{self.log_text()[-3000:]}"
            ) from None
        self._close_pipe()
        return code

    def _close_pipe(self) -> None:
        if self._reader is not None:
            self._reader.join(5)
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._close_pipe()


def run_refused(
    settings: dict[str, str],
    *,
    command: list[str] | None = None,
    cwd: Path | None = None,
    timeout: float = 30.0,
) -> subprocess.CompletedProcess[str]:
    """Run a broker process expected to give up at start (``python -m broker``, or
    ``command`` instead) with ``settings`` as overrides: its exit code and stderr."""
    args = list(command or [sys.executable, "-m", "broker"])
    for key, value in settings.items():
        args += ["--override", f"{key}={value}"]
    return subprocess.run(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=broker_env(),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


@contextmanager
def running(data_dir: Path, overrides: dict[str, str] | None = None) -> Iterator[BrokerProcess]:
    """A started BrokerProcess, stopped on the way out."""
    proc = BrokerProcess(data_dir, overrides).start()
    try:
        yield proc
    finally:
        proc.stop()
