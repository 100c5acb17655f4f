"""A broker process for benchmarks: fixed free port, temporary data dir, RSS readings."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait_accepting(port: int, deadline: float) -> None:
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.perf_counter() > deadline:
                raise
            time.sleep(0.002)


# Settings every benchmark broker gets (e.g. the event loop chosen with --loop).
COMMON_OVERRIDES: dict[str, str] = {}


class BenchBroker:
    def __init__(
        self,
        data_dir: Path | None = None,
        port: int | None = None,
        overrides: dict[str, str] | None = None,
    ) -> None:
        self.overrides = {**COMMON_OVERRIDES, **(overrides or {})}
        self._tmp = None if data_dir else tempfile.mkdtemp(prefix="minikafka-bench-")
        self.data_dir = data_dir or Path(self._tmp or ".") / "data"
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "broker",
            "--override",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "--override",
            f"log.dirs={self.data_dir}",
            "--override",
            "log.level=WARNING",
            *[arg for k, v in self.overrides.items() for arg in ("--override", f"{k}={v}")],
        ]

    def spawn(self) -> subprocess.Popen[bytes]:
        self.proc = subprocess.Popen(self.command())
        return self.proc

    def __enter__(self) -> BenchBroker:
        self.spawn()
        wait_accepting(self.port, time.perf_counter() + 60)
        return self

    def rss_mb(self) -> float:
        assert self.proc is not None
        return rss_mb(self.proc.pid)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)


def write_results(stem: str, result: object, table: str) -> None:
    """``result`` as bench/results/<stem>.json and its ``table`` as <stem>.md, printed too."""
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    (results / f"{stem}.md").write_text(table)
    print(table)
