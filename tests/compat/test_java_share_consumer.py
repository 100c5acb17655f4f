"""Java KafkaShareConsumer (kafka-clients 4.4.0) against a broker with share groups on.

Three consumers in one share group share one partition (tests/compat/share/
ShareConsume.java, compiled here with javac against build/java/kafka-4.4.0/lib, which
`make compat` fills): every record is delivered, an accepted record is never delivered
again, a released one is delivered again with its delivery count up, and one released at
every delivery is archived at group.share.delivery.count.limit.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.compat.conftest import require_tool
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_partitioned_topic, produce
from tests.support.raw_client import RawClient

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "build" / "java" / "kafka-4.4.0" / "lib"
SOURCE = Path(__file__).parent / "share" / "ShareConsume.java"
LOG4J_CONFIG = Path(__file__).parent / "java" / "log4j2.properties"
DELIVERY_LIMIT = 3
RECORDS = 60
# The program gives up after 60 s; this only catches a JVM that hangs.
JAVA_TIMEOUT_S = 120


def compile_program(out: Path) -> Path:
    """ShareConsume compiled against kafka-clients 4.4.0 into ``out``."""
    if not (LIB / "kafka-clients-4.4.0.jar").exists():
        pytest.fail("kafka-clients 4.4.0 jars missing: run `make compat`")
    subprocess.run(
        [require_tool("javac"), "-d", str(out), "-cp", f"{LIB}/*", str(SOURCE)],
        check=True,
        timeout=JAVA_TIMEOUT_S,
    )
    return out


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_program(tmp_path_factory.mktemp("share-java"))


@pytest.fixture
def share_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    overrides = {
        "minikafka.share.version": "1",
        "group.share.delivery.count.limit": str(DELIVERY_LIMIT),
    }
    with running(tmp_path / "data", overrides) as proc:
        yield proc


def run_java(program: Path, bootstrap: str, *args: str) -> list[dict[str, Any]]:
    command = [
        require_tool("java"),
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
        "-cp",
        f"{program}:{LIB}/*",
        "ShareConsume",
        bootstrap,
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    assert done.returncode == 0, f"ShareConsume exited {done.returncode}:\n{done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines()]


def produce_records(port: int, topic: str) -> None:
    with RawClient(port) as client:
        create_partitioned_topic(client, topic, 1)
        for start in range(0, RECORDS, 10):
            data = build_batch([(None, f"v{i}".encode()) for i in range(start, start + 10)])
            # A live Kafka may answer NOT_LEADER_OR_FOLLOWER until the new partition's leader
            # has the metadata (a race on its side under load): retried, with a deadline.
            deadline = time.monotonic() + 30
            answer = produce(client, topic, data)
            while answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                assert time.monotonic() < deadline, "no leader for the new topic after 30 s"
                time.sleep(0.1)
                answer = produce(client, topic, data)
            assert answer.error_code == 0


def check_deliveries(lines: list[dict[str, Any]], limit: int = DELIVERY_LIMIT) -> None:
    assert lines[-1] == {"done": True}, lines[-5:]
    deliveries: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for line in lines[:-1]:
        deliveries[line["offset"]].append(line)
    # Every record delivered; offsets are the values (one partition, produced in order).
    assert sorted(deliveries) == list(range(RECORDS))
    for offset, seen in deliveries.items():
        counts = [d["delivery"] for d in seen]
        acks = [d["ack"] for d in seen]
        # Delivered in order of delivery count, each count once: never redelivered after
        # an ACCEPT, always redelivered after a RELEASE below the limit.
        assert counts == list(range(1, len(seen) + 1)), (offset, seen)
        if offset % 5 == 0:
            assert acks == ["release"] * limit, (offset, seen)  # then archived
        elif offset % 5 == 1:
            assert acks == ["release", "accept"], (offset, seen)
        else:
            assert acks == ["accept"], (offset, seen)
    consumers = {d["consumer"] for seen in deliveries.values() for d in seen}
    assert len(consumers) >= 2, consumers  # the partition's records were shared


def test_three_share_consumers_on_one_partition(program: Path, share_broker: BrokerProcess) -> None:
    produce_records(share_broker.port, "shared")
    lines = run_java(
        program, share_broker.bootstrap, "shared", "sg", str(RECORDS), str(DELIVERY_LIMIT)
    )
    check_deliveries(lines)
