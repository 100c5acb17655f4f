"""The README's Python examples work as written, each against a fresh broker process (only the
bootstrap address changes): the three clients' produce, consume and admin blocks, and the
pytest example. (kafkajs, kcat and Java are not installed by `make test`; `make compat`
runs those clients.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.produce import stored_values

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
EXPECTED = sorted(b"order %d" % i for i in range(10))


def section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def client_examples() -> dict[str, str]:
    """The Python blocks of "Produce, consume, administer", by the client named before each."""
    text = section("Produce, consume, administer")
    found = re.findall(r"\n([\w-]+)( \([^)]*\))?:\n\n```python\n(.*?)```", text, re.S)
    return {name: code for name, _, code in found}


def test_the_readme_shows_each_python_client() -> None:
    assert sorted(client_examples()) == ["aiokafka", "confluent-kafka", "kafka-python"]


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka", "aiokafka"])
def test_readme_client_example_creates_produces_and_consumes(
    broker: BrokerProcess, client: str
) -> None:
    code = client_examples()[client]
    assert code.count("127.0.0.1:9092") >= 3  # admin, producer, consumer
    run = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code.replace("127.0.0.1:9092", broker.bootstrap)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "orders" in lines[0]  # the admin client's topic list
    consumed = lines[1:]
    assert len(consumed) == 10, run.stdout
    # "partition offset key value", each record once, from the three partitions.
    assert sorted(int(line.split()[0]) for line in consumed) != [0] * 10
    assert all(f"order {i}" in run.stdout for i in range(10))
    stored = [v for p in range(3) for v in stored_values(broker.data_dir, "orders", p)]
    assert sorted(v for v in stored if v is not None) == EXPECTED


def test_readme_pytest_example_passes(tmp_path: Path) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", section("Testing your code"), re.S)
    (tmp_path / "test_readme_example.py").write_text(code)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_readme_uses_one_spelling_of_the_command() -> None:
    text = README.read_text()
    assert ".venv/bin/minikafka" not in text
    assert text.index("make run") < text.index("make test") < text.index("## ")
