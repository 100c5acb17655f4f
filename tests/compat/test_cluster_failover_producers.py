"""100,000 records from an idempotent acks=all producer of each client (confluent-kafka,
kafka-python, aiokafka, and the Java client 3.9.0, 4.0.0 and 4.4.0) while a simulated
3-node cluster's partition leaders stop and start in turn (each partition's leader twice):
every acknowledged record stored exactly once, at the offset acknowledged, in send order.
And the Java client's acks=1 records past the new leader's log lost exactly, as the Python
clients' in tests/e2e/test_cluster_acks1_loss.py.

tests/e2e/test_cluster_failover_producers.py runs the Python clients at a size for make test.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka import ThreadedBroker
from tests.compat.checks import assert_exactly_once_in_order, stored_partitions
from tests.compat.conftest import require_tool
from tests.compat.test_java_client import JAVA_TIMEOUT_S, KAFKA_CLIENTS_VERSIONS, built
from tests.e2e.test_cluster_acks1_loss import lose_a_burst
from tests.e2e.test_cluster_failover_producers import DELAY_MS, run_through_failovers
from tests.support.cluster_producers import PARTITIONS, ProducerRun, committed, cycle_leaders

pytestmark = [
    pytest.mark.minikafka(default_replication_factor=3),
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]

TOTAL = 100_000
ROUNDS = 6


@pytest.mark.timeout(300)
@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka"])
def test_python_idempotent_producer_stores_100k_records_once_through_leader_restarts(
    kafka_cluster: ThreadedBroker, client: str
) -> None:
    run_through_failovers(kafka_cluster, client, TOTAL, ROUNDS)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("version", KAFKA_CLIENTS_VERSIONS)
def test_java_idempotent_producer_stores_100k_records_once_through_leader_restarts(
    kafka_cluster: ThreadedBroker, version: str
) -> None:
    require_tool("java")
    java_client = built(version)
    topic = "failover-java"
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(10)
    kafka_cluster.faults.replication_delay(DELAY_MS)

    # Produce (tests/compat/java): keyed records, acks=all, idempotent, 5 in flight; it
    # prints every acknowledgement once flushed. Its progress meanwhile is what the cluster
    # committed.
    command = java_client.command("Produce", kafka_cluster.bootstrap, topic, str(TOTAL), "none")
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outputs: dict[str, str] = {}

    def collect() -> None:
        outputs["stdout"], outputs["stderr"] = process.communicate(timeout=240)

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    try:
        failovers = cycle_leaders(
            kafka_cluster,
            topic,
            lambda: committed(kafka_cluster, topic),
            lambda: process.poll() is not None,
            TOTAL,
            ROUNDS,
        )
        reader.join(240)
    finally:
        if process.poll() is None:
            process.kill()
    seconds = time.monotonic() - started
    assert process.returncode == 0, outputs.get("stderr", "")[-3000:]
    assert len(failovers) == ROUNDS, f"finished after {len(failovers)} failovers"
    print(
        f"Java {java_client.version}: {TOTAL} records in {seconds:.1f} s (JVM start included)"
        f" through {len(failovers)} failovers,"
        f" {sum(f.truncated for f in failovers)} unacknowledged appends truncated"
    )

    assert sum(f.truncated for f in failovers) > 0
    acks = [json.loads(line) for line in outputs["stdout"].splitlines()]
    assert [a["i"] for a in acks] == list(range(TOTAL))
    sent = [
        (b"key-%d" % i, b"java record %d: the quick brown fox jumps over the lazy dog" % i)
        for i in range(TOTAL)
    ]
    data_dir = Path(str(kafka_cluster.data_dir))
    by_partition = stored_partitions(data_dir, topic, PARTITIONS, idempotent=True)
    assert_exactly_once_in_order(by_partition, sent)
    where = {
        (r.key, r.value): (p, r.offset) for p, records in by_partition.items() for r in records
    }
    assert [(a["partition"], a["offset"]) for a in acks] == [where[s] for s in sent]


@pytest.mark.parametrize("version", KAFKA_CLIENTS_VERSIONS)
def test_java_acks_1_records_beyond_the_new_leaders_log_are_lost_exactly(
    kafka_cluster: ThreadedBroker, version: str
) -> None:
    """tests/e2e/test_cluster_acks1_loss.py's bursts, sent by the Java client (ProduceRange:
    acks=1, not idempotent, acknowledgements printed as they arrive)."""
    java_client = built(version)
    topic = f"acks1-java-{version}"
    run = ProducerRun("java", "java")

    def send(indexes: range) -> None:
        command = java_client.command(
            "ProduceRange",
            kafka_cluster.bootstrap,
            topic,
            run.tag,
            str(indexes.start),
            str(len(indexes)),
            "1",
            str(PARTITIONS),
        )
        done = subprocess.run(command, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
        assert done.returncode == 0, done.stderr[-3000:]
        for line in done.stdout.splitlines():
            ack = json.loads(line)
            if "error" in ack:
                run.errors.append(f"{ack['i']}: {ack['error']} {ack['message']}")
            else:
                run.ack(ack["i"], ack["partition"], ack["offset"])

    lose_a_burst(kafka_cluster, topic, run, send)
