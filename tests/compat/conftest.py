"""Compatibility tests with tools outside Python: kcat (librdkafka 2.0), kafkajs 2.2 and the
Java client (kafka-clients 3.9.0, 4.0.0 and 4.4.0).

`make compat` installs them (kcat and a JDK with apt-get, kafkajs with npm into
tests/compat/js, kafka-clients' jars with Maven into build/java) and runs these
tests; `make test` deselects them. A missing tool fails the test rather than
skipping it, so a broken install can never pass as green.

Every test puts a CaptureProxy between the tool and the broker and reports, at the end of
the run, which API versions each tool sent.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.capture_proxy import CapturedFrame, CaptureProxy

PARTITIONS = 3
JS_DIR = Path(__file__).parent / "js"

# Kafka's API names for the keys these tools send; the report falls back to the number.
API_NAMES = {
    0: "Produce",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    18: "ApiVersions",
    19: "CreateTopics",
    20: "DeleteTopics",
    21: "DeleteRecords",
    22: "InitProducerId",
    24: "AddPartitionsToTxn",
    25: "AddOffsetsToTxn",
    26: "EndTxn",
    27: "WriteTxnMarkers",
    28: "TxnOffsetCommit",
    32: "DescribeConfigs",
    33: "AlterConfigs",
    37: "CreatePartitions",
    42: "DeleteGroups",
    60: "DescribeCluster",
    61: "DescribeProducers",
    65: "DescribeTransactions",
    66: "ListTransactions",
    75: "DescribeTopicPartitions",
}

# tool -> API name -> versions seen; printed by pytest_terminal_summary.
SEEN_VERSIONS: dict[str, dict[str, set[int]]] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/compat/" in str(item.path):
            item.add_marker(pytest.mark.compat)


def record_versions(tool: str, frames: list[CapturedFrame]) -> None:
    seen = SEEN_VERSIONS.setdefault(tool, {})
    for frame in frames:
        name = API_NAMES.get(frame.api_key, f"api {frame.api_key}")
        seen.setdefault(name, set()).add(frame.api_version)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not SEEN_VERSIONS:
        return
    terminalreporter.section("API versions sent (captured on the wire)")
    for tool, apis in sorted(SEEN_VERSIONS.items()):
        listed = ", ".join(
            f"{name} v{'/'.join(str(v) for v in sorted(versions))}"
            for name, versions in sorted(apis.items())
        )
        terminalreporter.write_line(f"{tool}: {listed}")


def require_tool(*names: str) -> str:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(f"{' or '.join(names)} not installed: run `make compat`, which installs it")


@pytest.fixture
def proxied_broker(tmp_path: Path) -> Iterator[tuple[BrokerProcess, CaptureProxy]]:
    """A broker with 3 partitions per topic whose clients all go through a CaptureProxy.

    The broker advertises the proxy's address, so clients that bootstrap through the proxy
    stay on it. A short initial rebalance delay keeps a single-member group quick to form
    (Kafka's default waits 3 s for more members).
    """
    with CaptureProxy() as proxy:
        broker = BrokerProcess(
            tmp_path / "data",
            {
                "num.partitions": str(PARTITIONS),
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}",
                "group.initial.rebalance.delay.ms": "100",
            },
        ).start()
        proxy.set_upstream(broker.port)
        try:
            yield broker, proxy
        finally:
            broker.kill() if not broker.is_running() else broker.stop()
