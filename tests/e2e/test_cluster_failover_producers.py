"""The Python clients' idempotent acks=all producers write while a simulated 3-node cluster's
partition leaders stop and start in turn: every acknowledged record is stored exactly once,
at the offset acknowledged, in send order (Kafka's guarantee, CLUSTER_NOTES' observation).

Sized for make test: 20,000 records and three failovers (each partition's leader once) per
client. tests/compat/test_cluster_failover_producers.py (make compat) runs 100,000 records
and six failovers per client, the Java client's too. Followers trail by DELAY_MS, so a stop
cuts appends not yet acknowledged, which the producers send again (the truncated count is
printed with -s, and must not be 0).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka import ThreadedBroker
from tests.support.cluster_producers import (
    PARTITIONS,
    ProducerRun,
    assert_stored_once,
    consumed_by_partition,
    cycle_leaders,
    gate_rounds,
    open_gates,
    start_producing,
)

pytestmark = [
    pytest.mark.minikafka(default_replication_factor=3),
    # kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text,
    # deprecated since Python 3.11; pytest runs with warnings as errors.
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]

TOTAL = 20_000
ROUNDS = 3
DELAY_MS = 20
# From this many failovers on, at least one stop must cut unacknowledged appends.
REQUIRE_CUTS_FROM_ROUNDS = 6


def run_through_failovers(cluster: ThreadedBroker, client: str, total: int, rounds: int) -> None:
    topic = f"failover-{client}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(10)
    # Followers trail by a little: acks=all answers wait on them, so a stop catches appends
    # acknowledged by no one yet, which the producer sends again to the new leader.
    cluster.faults.replication_delay(DELAY_MS)
    run = ProducerRun(client, client)
    on_stop = gate_rounds(run, total, rounds)
    thread = start_producing(cluster.bootstrap, topic, total, run)
    try:
        failovers = cycle_leaders(
            cluster, topic, run.progress, run.done.is_set, total, rounds, on_stop
        )
    finally:
        open_gates(run)
    assert run.done.wait(180), f"{client} did not finish"
    thread.join(10)
    assert len(failovers) == rounds, f"{client} finished after {len(failovers)} failovers"
    cut = sum(f.truncated for f in failovers)
    print(
        f"{client}: {total} records in {run.seconds:.1f} s through {len(failovers)} failovers,"
        f" {cut} unacknowledged appends truncated"
    )
    # The stops cut appends no one had acknowledged yet (the producer sent them again) when
    # a stop caught some in flight: nearly always, but a loaded machine can let the producer
    # drain first, so only the longer runs (make compat: 6 stops, 100k records) require it.
    if rounds >= REQUIRE_CUTS_FROM_ROUNDS:
        assert cut > 0
    stored = assert_stored_once(Path(str(cluster.data_dir)), topic, client, total, run)
    assert consumed_by_partition(cluster.bootstrap, topic) == stored


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka"])
def test_idempotent_producer_stores_each_acknowledged_record_once_through_leader_restarts(
    kafka_cluster: ThreadedBroker, client: str
) -> None:
    run_through_failovers(kafka_cluster, client, TOTAL, ROUNDS)
