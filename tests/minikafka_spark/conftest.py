"""Real Spark (local mode) against a real broker process: `make spark` runs these.

Test modules named `test_spark_*.py` need pyspark and a JVM; they carry the `spark` marker,
which `make test` deselects. Without pyspark they are not collected at all, so `make test`
works on a machine where `make spark` never ran; `make spark` installs pyspark first and runs
`-m spark`, which fails with "no tests ran" if that install is missing.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.broker_process import BrokerProcess, running

ROOT = Path(__file__).resolve().parents[2]
HAVE_PYSPARK = importlib.util.find_spec("pyspark") is not None
collect_ignore_glob = [] if HAVE_PYSPARK else ["test_spark_*.py"]
# Spark's own Kafka connector and the jars it needs beyond pyspark's, resolved with Maven by
# `make spark` (tests/jvm/spark-kafka/pom.xml); format("kafka") tests fail without them.
CONNECTOR_JARS = sorted((ROOT / "build" / "spark-kafka" / "jars").glob("*.jar"))

# Seconds SparkSession.getOrCreate took; reported at the end of the run.
STARTUP: dict[str, float] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name.startswith("test_spark_"):
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.timeout(600))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if STARTUP:
        terminalreporter.write_line(
            f"Spark session start-up: {STARTUP['seconds']:.1f} s (local[2], pyspark "
            f"{STARTUP['version']})"
        )


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    # Python workers are separate processes: they import minikafka_spark from this tree and
    # run the same interpreter as the tests.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # Loopback only: Spark otherwise binds the driver to the host's outside address.
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from minikafka_spark import register

    started = time.monotonic()
    session = (
        SparkSession.builder.master("local[2,4]")  # 4 attempts per task, as on a cluster
        .appName("minikafka-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.streaming.stopActiveRunOnRestart", "true")
        # Local files: nothing is downloaded when the session starts.
        .config("spark.jars", ",".join(str(jar) for jar in CONNECTOR_JARS))
        .getOrCreate()
    )
    STARTUP["seconds"] = time.monotonic() - started
    STARTUP["version"] = session.version
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running(tmp_path_factory.mktemp("spark") / "data") as proc:
        yield proc
