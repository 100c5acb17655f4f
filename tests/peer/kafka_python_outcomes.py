"""pytest plugin loaded into kafka-python's own test run: one outcome per test id.

The runner (tests/peer/run_kafka_python.py) reads the JSON written here instead of
parsing pytest's terminal output or JUnit class names. An error in setup or teardown
counts as "error", a failed call as "failed", a skip anywhere as "skipped".
"""

from __future__ import annotations

import json
import os

import pytest

OUTCOMES_ENV = "MINIKAFKA_PEER_OUTCOMES"

_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped:
        _outcomes.setdefault(report.nodeid, "skipped")
    elif report.failed:
        outcome = "failed" if report.when == "call" else "error"
        # A failed call followed by a failed teardown stays "failed".
        if _outcomes.get(report.nodeid) not in ("failed", "error"):
            _outcomes[report.nodeid] = outcome
    elif report.when == "call":
        _outcomes.setdefault(report.nodeid, "passed")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get(OUTCOMES_ENV)
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump({"exitstatus": int(exitstatus), "outcomes": _outcomes}, out, indent=1)
