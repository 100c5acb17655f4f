"""Every family /metrics publishes moves with what it counts, on a real broker process: read
with Prometheus' parser before and after the thing it counts happened (the counters of
records, bytes, requests and lag are checked in tests/e2e/test_console.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.fetch import FETCH
from protocol.records import build_batch
from protocol.schema import Message
from tests.e2e.test_console import CONSOLE, Samples, console_url, create, metrics, produce, value
from tests.e2e.test_console_actions import post
from tests.support.broker_process import running
from tests.support.produce import fetch_request
from tests.support.produce import produce as produce_raw
from tests.support.raw_client import RawClient

DEADLINE_S = 30.0
PURGATORY = "kafka_server_delayedoperationpurgatory_purgatorysize"
OFFLINE = "kafka_controller_kafkacontroller_offlinepartitionscount"
LEADERS = "kafka_server_replicamanager_leadercount"
PARTITIONS = "kafka_server_replicamanager_partitioncount"
UNDER_REPLICATED = "kafka_server_replicamanager_underreplicatedpartitions"
UNDER_MIN_ISR = "kafka_server_replicamanager_underminisrpartitioncount"


def until(url: str, check: Callable[[Samples], bool], what: str) -> Samples:
    """The first scrape ``check`` accepts (fails after DEADLINE_S)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        seen = metrics(url)
        if check(seen):
            return seen
        assert time.monotonic() < deadline, f"not within {DEADLINE_S} s: {what}"
        time.sleep(0.05)


def fault(url: str, operation: str, args: str) -> None:
    status, page = post(url, "fault", {"operation": operation, "args": args})
    assert status == 200, page


def test_each_family_of_a_single_broker_moves(tmp_path: Path) -> None:
    with running(tmp_path / "data", CONSOLE) as proc:
        url = console_url(proc)
        before = metrics(url)
        create(proc.bootstrap, "moved", 3)
        # Partitions, led by this broker (a single one leads each).
        seen = until(url, lambda m: value(m, PARTITIONS) == value(before, PARTITIONS) + 3, "+3")
        assert value(seen, LEADERS) == value(seen, PARTITIONS)
        assert value(seen, "kafka_topic_partitions", topic="moved") == 3

        # Segments roll at segment.bytes (its least, 1 MiB); DeleteRecords moves the start.
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        rolled = NewTopic("rolled", 1, 1, config={"segment.bytes": str(1024 * 1024)})
        admin.create_topics([rolled])["rolled"].result(30)
        produce(proc.bootstrap, "rolled", [(f"k{i}", "v" * 100_000, 0) for i in range(30)])
        seen = metrics(url)
        assert value(seen, "kafka_log_log_numlogsegments", topic="rolled") > 1
        assert value(seen, "kafka_log_log_logstartoffset", topic="rolled") == 0
        status, page = post(
            url, "delete-records", {"topic": "rolled", "partition": "0", "offset": "30"}
        )
        assert status == 200, page
        assert value(metrics(url), "kafka_log_log_logstartoffset", topic="rolled") == 30

        # Connections open and closed.
        base = value(metrics(url), "kafka_server_socket_server_metrics_connection_count")
        clients = [RawClient(proc.port) for _ in range(3)]
        try:
            for client in clients:
                client.request(API_VERSIONS, 0, Message())
            until(
                url,
                lambda m: (
                    value(m, "kafka_server_socket_server_metrics_connection_count") >= base + 3
                ),
                "3 more connections",
            )
        finally:
            for client in clients:
                client.close()
        until(
            url,
            lambda m: value(m, "kafka_server_socket_server_metrics_connection_count") <= base,
            "the connections closed",
        )

        # A long-polling Fetch is parked in the fetch purgatory until data arrives.
        with RawClient(proc.port) as poller:
            poller.sock.settimeout(DEADLINE_S)
            request = fetch_request("moved", 0, max_wait_ms=20_000, min_bytes=1)
            poller.send_raw(poller.encode(FETCH, 12, request, correlation_id=7))
            poller.pending.append((7, FETCH, 12))
            until(url, lambda m: value(m, PURGATORY, delayedOperation="Fetch") == 1, "parked")
            with RawClient(proc.port) as writer:
                answer = produce_raw(writer, "moved", build_batch([(b"k", b"v")]))
                assert answer.error_code == 0
            _, fetched = poller.receive()
            assert fetched.responses[0].partitions[0].error_code == 0
        assert value(metrics(url), PURGATORY, delayedOperation="Fetch") == 0
        assert value(metrics(url), PURGATORY, delayedOperation="Produce") == 0

        # The offline fault takes a partition's leader away until it is brought back.
        fault(url, "offline", '{"topic": "moved", "partition": 1}')
        seen = metrics(url)
        assert value(seen, OFFLINE) == 1 and value(seen, LEADERS) == value(seen, PARTITIONS) - 1
        fault(url, "online", '{"topic": "moved", "partition": 1}')
        assert value(metrics(url), OFFLINE) == 0

        # Groups per protocol; KIP-848 groups per state: Stable while a member consumes,
        # Empty after.
        by_protocol = "kafka_server_group_coordinator_metrics_group_count"
        by_state = "kafka_server_group_coordinator_metrics_consumer_group_count"
        before = metrics(url)
        assert value(before, by_protocol, protocol="consumer") == 0
        assert value(before, by_state, state="Stable") == 0
        consumer = Consumer(
            {
                "bootstrap.servers": proc.bootstrap,
                "group.id": "counted",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["moved"])
        try:
            deadline = time.monotonic() + DEADLINE_S
            while consumer.poll(0.2) is None and time.monotonic() < deadline:
                pass
            seen = until(url, lambda m: value(m, by_state, state="Stable") == 1, "stable")
            assert value(seen, by_protocol, protocol="consumer") == 1
            assert value(seen, by_protocol, protocol="classic") == value(
                before, by_protocol, protocol="classic"
            )
        finally:
            consumer.close()
        seen = until(url, lambda m: value(m, by_state, state="Empty") == 1, "the group empty")
        assert value(seen, by_state, state="Stable") == 0


def test_replication_families_move_in_a_simulated_cluster(tmp_path: Path) -> None:
    overrides = {
        **CONSOLE,
        "minikafka.cluster.size": "3",
        "default.replication.factor": "3",
    }
    with running(tmp_path / "data", overrides) as proc:
        url = console_url(proc)
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        topics = [
            NewTopic("replicated", 1, 3, config={"min.insync.replicas": "3"}),
            NewTopic("single", 3, 1),
        ]
        for done in admin.create_topics(topics).values():
            done.result(30)
        seen = metrics(url)
        assert value(seen, UNDER_REPLICATED) == value(seen, UNDER_MIN_ISR) == 0
        assert value(seen, OFFLINE) == 0
        # Replicas, summed over the nodes: 3 of replicated's, one of each of single's.
        assert value(seen, PARTITIONS) - value(seen, LEADERS) == 2

        # acks=all waits for the followers while they trail by the replication delay.
        fault(url, "replication-delay", '{"delay_ms": 3000}')
        done = threading.Event()
        answers: list[int] = []

        def write() -> None:
            try:
                produce(proc.bootstrap, "replicated", [("k", "v", 0)], acks="all")
                answers.append(0)
            finally:
                done.set()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        until(url, lambda m: value(m, PURGATORY, delayedOperation="Produce") == 1, "waiting")
        assert done.wait(DEADLINE_S) and answers == [0]
        assert value(metrics(url), PURGATORY, delayedOperation="Produce") == 0
        fault(url, "replication-delay", '{"delay_ms": 0}')

        # A stopped node leaves the ISRs: under-replicated, and below min.insync.replicas=3.
        fault(url, "broker-stop", '{"node": 3}')
        seen = metrics(url)
        assert value(seen, UNDER_REPLICATED) >= 1 and value(seen, UNDER_MIN_ISR) == 1, seen
        # Single's partition whose only replica is node 3 has no leader.
        assert value(seen, OFFLINE) == 1, seen
        fault(url, "broker-start", '{"node": 3}')
        seen = until(
            url,
            lambda m: value(m, UNDER_REPLICATED) == value(m, OFFLINE) == 0,
            "the ISRs whole again",
        )
        assert value(seen, UNDER_MIN_ISR) == 0
