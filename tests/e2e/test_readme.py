"""The README's produce examples work as written (only the bootstrap address changes)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from protocol.records import decode_records
from tests.support.broker_process import BrokerProcess
from tests.support.produce import stored

README = Path(__file__).resolve().parents[2] / "README.md"


def produce_examples() -> list[str]:
    text = README.read_text()
    section = text[text.index("## Produce to it") : text.index("## Configuration")]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_produce_examples_store_what_they_say(broker: BrokerProcess) -> None:
    examples = produce_examples()
    assert len(examples) == 2  # kafka-python, confluent-kafka
    for code in examples:
        assert "127.0.0.1:9092" in code
        run = subprocess.run(
            [
                sys.executable,
                "-W",
                "ignore",
                "-c",
                code.replace("127.0.0.1:9092", broker.bootstrap),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
    records = [r for _, raw in stored(broker.data_dir, "orders") for r in decode_records(raw)]
    expected = [(b"k%d" % i, b"order %d" % i) for i in range(10)] * 2
    assert [(r.key, r.value) for r in records] == expected
