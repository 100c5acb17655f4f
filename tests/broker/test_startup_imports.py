"""A plain broker (PLAINTEXT, no authorizer, no control plane, no compressed batch yet)
imports only what it uses: what is checked here is loaded at first use instead (ACLs, fault
injection, the control plane, SASL/OAUTHBEARER, the codec libraries, RE2 for regex
subscriptions, inline PEM keystores' tempfile, worker-process-only code, crc32c's version
lookup). A test on what is imported, in a fresh interpreter; the time it saves is measured
by the bench (bench/startup.py), not here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Started as broker.process.serve starts it, then sys.modules listed while it serves.
_SCRIPT = """
import asyncio, json, sys
import broker.cli
import broker.process
from broker.config.loader import load_config
from broker.toolkit.host import BrokerHost

config, _, _ = load_config(None, {}, sys.argv[1:])

async def main():
    host = BrokerHost(config)
    await host.start()
    try:
        print(json.dumps(sorted(sys.modules)))
    finally:
        await host.stop()

asyncio.run(main())
"""

LAZY = (
    "importlib.metadata",  # crc32c's package __init__ (broker.runtime.crc32c_import)
    "lz4",
    "snappy",
    "zstandard",
    "broker.security.authorizer",
    "broker.security.sasl_oauthbearer",
    "broker.toolkit.faults",
    "broker.toolkit.fault_responses",
    "broker.toolkit.control_http",
    "broker.net.local_http",
    "broker.console",
    "ctypes",
    "pickle",  # batches a validation worker refused
    "re2",  # regex subscriptions
    "tempfile",  # inline PEM keystores
    "difflib",  # suggestions for a misspelt property
    "uvloop",
    "minikafka_spark",
    "pyspark",
)


def modules_after_start(tmp_path: Path, *overrides: str) -> set[str]:
    args = [
        "listeners=PLAINTEXT://127.0.0.1:0",
        f"log.dirs={tmp_path / 'data'}",
        "log.level=WARNING",
        *overrides,
    ]
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_plain_broker_start_leaves_unused_modules_unimported(tmp_path: Path) -> None:
    modules = modules_after_start(tmp_path)
    assert "broker.lifecycle.server" in modules  # the broker did start
    assert "crc32c" in modules
    assert [name for name in LAZY if loaded(modules, name)] == []


def test_what_is_configured_is_imported(tmp_path: Path) -> None:
    """The same modules are there once configured: an authorizer, the control plane."""
    modules = modules_after_start(
        tmp_path,
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "minikafka.control.listener=127.0.0.1:0",
    )
    for name in (
        "broker.security.authorizer",
        "broker.toolkit.faults",
        "broker.toolkit.control_http",
    ):
        assert name in modules, name
