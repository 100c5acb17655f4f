"""The examples the README shows, run against a real broker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from examples.spark_audit import duplicate_sequences, offset_gaps, read_for_audit
from examples.spark_pipeline import build_pipeline
from tests.minikafka_spark.kafka_helpers import create_topic, stored_records
from tests.minikafka_spark.test_spark_sink import read_committed
from tests.support.broker_process import BrokerProcess
from tests.support.real_clients import Sent, produce_confluent

ROOT = Path(__file__).resolve().parents[2]


def produce_words(broker: BrokerProcess, topic: str, n: int) -> None:
    now = int(time.time() * 1000)
    records = [Sent(i % 2, b"k%d" % i, b"word-%d" % i, (("n", b"%d" % i),), now) for i in range(n)]
    produce_confluent(broker.bootstrap, topic, "none", records)


@pytest.mark.parametrize("exactly_once", [False, True])
def test_example_pipeline_writes_every_input_record_transformed_once(
    spark: Any, broker: BrokerProcess, tmp_path: Path, exactly_once: bool
) -> None:
    source, sink = f"words-{exactly_once}", f"upper-{exactly_once}"
    create_topic(broker.bootstrap, source, 2)
    create_topic(broker.bootstrap, sink, 2)
    produce_words(broker, source, 2000)
    query = build_pipeline(
        spark, broker.bootstrap, source, sink, str(tmp_path / "cp"), exactly_once
    ).start()
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    values = Counter(read_committed(broker.bootstrap, sink, 2, 2000))
    assert values == Counter(b"WORD-%d" % i for i in range(2000))
    stored = stored_records(broker.data_dir, sink, 2)
    assert Counter(r.value for r in stored) == values
    assert {r.headers for r in stored} == {(("n", b"%d" % i),) for i in range(2000)}


def test_audit_finds_no_duplicate_and_no_gap_in_a_topic_of_idempotent_producers(
    spark: Any, broker: BrokerProcess
) -> None:
    create_topic(broker.bootstrap, "audit-clean", 2)
    produce_words(broker, "audit-clean", 3000)
    produce_words(broker, "audit-clean", 1000)
    records = read_for_audit(spark, broker.bootstrap, "audit-clean")
    assert records.count() == len(stored_records(broker.data_dir, "audit-clean", 2)) == 4000
    assert duplicate_sequences(records).count() == 0
    assert offset_gaps(records).count() == 0


def test_audit_reports_duplicate_sequences_and_offset_gaps(spark: Any) -> None:
    columns = ["topic", "partition", "offset", "producerId", "producerEpoch", "sequence"]
    rows = [
        ("t", 0, 0, 7, 0, 0),
        ("t", 0, 1, 7, 0, 1),
        ("t", 0, 2, 7, 0, 1),  # stored twice
        ("t", 0, 5, 7, 1, 1),  # a new epoch restarts the sequence: not a duplicate; 3-4 gap
        ("t", 1, 0, -1, -1, -1),  # not idempotent: not audited for sequences
        ("t", 1, 1, -1, -1, -1),
    ]
    frame = spark.createDataFrame(rows, columns)
    duplicates = [
        (r["partition"], r["producerId"], r["sequence"], sorted(r["offsets"]))
        for r in duplicate_sequences(frame).collect()
    ]
    assert duplicates == [(0, 7, 1, [1, 2])]
    gaps = [(r["partition"], r["after"], r["before"]) for r in offset_gaps(frame).collect()]
    assert gaps == [(0, 2, 5)]


def run_example(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`.venv/bin/python examples/<script> ...` from a shell whose virtualenv is not activated:
    no PYSPARK_PYTHON, the venv's bin directory not on PATH (so `python3` there is one without
    pyarrow or minikafka_spark), none of the test session's PYTHONPATH."""
    venv_bin = str(Path(sys.executable).parent)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYTHONPATH")
    }
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # as the session fixture: loopback only
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )


def test_example_scripts_run_without_an_activated_virtualenv(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "script-words", 2)
    create_topic(broker.bootstrap, "script-upper", 2)
    produce_words(broker, "script-words", 100)
    done = run_example(
        "spark_pipeline.py", broker.bootstrap, "script-words", "script-upper", str(tmp_path / "cp")
    )
    assert done.returncode == 0, done.stderr[-4000:]
    (result,) = done.stdout.splitlines()
    assert result.startswith("script-words -> script-upper: input read up to ")
    assert '"script-words"' in result and "50" in result  # 50 records in each partition
    values = Counter(read_committed(broker.bootstrap, "script-upper", 2, 100))
    assert values == Counter(b"WORD-%d" % i for i in range(100))

    audit = run_example("spark_audit.py", broker.bootstrap, "script-words")
    assert audit.returncode == 0, audit.stderr[-4000:]
    assert audit.stdout.splitlines() == ["100 records, 0 duplicate sequences, 0 gaps"]
