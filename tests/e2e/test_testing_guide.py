"""docs/TESTING_WITH_MINIKAFKA.md as a user follows it: the aiokafka example with the
pytest-asyncio configuration shown, the broker's log in a failing test, and the fixtures'
descriptions in `pytest --fixtures`, each in a pytest of its own on a generated project."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "TESTING_WITH_MINIKAFKA.md"
FIXTURES = ("kafka_broker", "kafka_bootstrap", "kafka_topic", "kafka_session_broker")


def guide_section(start: str) -> str:
    text = GUIDE.read_text()
    begin = text.index(start)
    end = text.find("\n#", begin + len(start))
    return text[begin : end if end != -1 else len(text)]


def blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    if not any(ep.name == "minikafka" for ep in entry_points(group="pytest11")):
        command += ["-p", "minikafka.pytest_plugin"]  # an install older than the entry point
    return subprocess.run(
        [*command, *args],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.parametrize(
    ("language", "config_file"), [("toml", "pyproject.toml"), ("ini", "pytest.ini")]
)
def test_the_aiokafka_example_passes_with_the_configuration_shown(
    tmp_path: Path, language: str, config_file: str
) -> None:
    section = guide_section("### aiokafka: a coordinator still loading, then a crash")
    (config,) = blocks(section, language)
    assert "asyncio_mode" in config
    (example,) = blocks(section, "python")
    (tmp_path / config_file).write_text(config)
    (tmp_path / "test_guide_aiokafka.py").write_text(example)
    done = run_pytest(tmp_path, "-q", "-W", "error::pytest.PytestDeprecationWarning")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_without_the_configuration_the_async_test_does_not_run(tmp_path: Path) -> None:
    """What the guide warns of: pytest-asyncio's default strict mode leaves it unrun."""
    section = guide_section("### aiokafka: a coordinator still loading, then a crash")
    (example,) = blocks(section, "python")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    )
    (tmp_path / "test_guide_aiokafka.py").write_text(example)
    done = run_pytest(tmp_path, "-q", "-rs")
    assert "1 passed" not in done.stdout
    assert "async def functions are not natively supported" in done.stdout + done.stderr


FAILING = """
from confluent_kafka.admin import AdminClient


def test_fails(kafka_broker, kafka_topic):
    kafka_topic(2)
    AdminClient({"bootstrap.servers": kafka_broker.bootstrap}).list_topics(timeout=10)
    assert False
"""


def test_log_level_info_shows_the_brokers_log_in_a_failing_test(tmp_path: Path) -> None:
    section = guide_section("### The broker's log when a test fails")
    assert "pytest --log-level=INFO" in section
    (tmp_path / "test_failing.py").write_text(FAILING)
    quiet = run_pytest(tmp_path, "-q")
    assert quiet.returncode == 1 and "minikafka started" not in quiet.stdout
    shown = run_pytest(tmp_path, "-q", "--log-level=INFO")
    assert shown.returncode == 1
    captured = shown.stdout[shown.stdout.index("Captured log setup") :]
    assert "INFO     broker.lifecycle.server" in captured and "minikafka started" in captured
    assert "minikafka stopped" in captured


def test_the_conftest_shown_adds_the_brokers_request_lines(tmp_path: Path) -> None:
    section = guide_section("### The broker's log when a test fails")
    (conftest,) = blocks(section, "python")
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_failing.py").write_text(FAILING)
    done = run_pytest(tmp_path, "-q")
    assert done.returncode == 1
    captured = done.stdout[done.stdout.index("Captured log call") :]
    assert re.search(
        r"DEBUG +broker\.requests.*request Metadata v\d+ from client 'rdkafka'", captured
    )


def test_pytest_fixtures_describes_every_fixture(tmp_path: Path) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    done = run_pytest(tmp_path, "--fixtures")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for name in FIXTURES:
        (at,) = [i for i, line in enumerate(lines) if line.startswith(f"{name} ")]
        description = lines[at + 1].strip()
        assert description and "no docstring available" not in description, name
