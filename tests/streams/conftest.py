"""Python stream-processing libraries as real clients of a real broker process: `make streams`.

Each application is a script under apps/ run as its own process with the interpreter of
build/streams-venv (MINIKAFKA_STREAMS_PYTHON overrides it), a virtualenv apart from the
project's because quixstreams pins confluent-kafka below the version the project's tests use.
The tests only talk to the broker through confluent-kafka (the project venv) and read what
the broker stored from its segment files. Every test here carries the `streams` marker, which
`make test` deselects.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.streams.support import NOTES, TIMINGS, streams_python
from tests.support.broker_process import BrokerProcess, running


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/streams/" in str(item.path):
            item.add_marker(pytest.mark.streams)
            item.add_marker(pytest.mark.timeout(300))


@pytest.fixture(scope="session")
def python() -> str:
    """The streams virtualenv's interpreter; a missing one fails the test (make streams
    builds it), so a broken install cannot pass as skipped."""
    path = streams_python()
    assert Path(path).exists(), f"{path} missing: run `make streams`"
    return path


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(tmp_path / "data") as proc:
        yield proc


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for what, seconds in TIMINGS.items():
        terminalreporter.write_line(f"{what}: {seconds:.2f} s")
    for what, fact in NOTES.items():
        terminalreporter.write_line(f"{what}: {fact}")
