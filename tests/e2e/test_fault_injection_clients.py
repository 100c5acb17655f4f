"""Real clients (kafka-python, confluent-kafka, aiokafka) under injected faults: each must
recover the way Kafka's clients are built to, and the segment files must hold every
acknowledged record exactly once. Faults go through the broker's HTTP control plane."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from protocol.records import decode_records
from tests.support.fault_broker import FaultBroker
from tests.support.produce import stored
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

CLIENTS = ["kafka-python", "confluent-kafka", "aiokafka"]
# kafka-python 3.0 loads its protocol schemas with importlib.resources' legacy functions.
pytestmark = KAFKA_PYTHON_SCHEMA_READS
DEADLINE_S = 60.0


@pytest.fixture
def fb(tmp_path: Path) -> Iterator[FaultBroker]:
    proc = FaultBroker(
        tmp_path / "data",
        {"num.partitions": "1", "group.initial.rebalance.delay.ms": "0"},
    ).start()
    try:
        yield proc
    finally:
        proc.stop()


def stored_keys(data: Path, topic: str) -> list[bytes]:
    """Every record key in the partition's segment files, in offset order."""
    keys = []
    for header, raw in stored(data, topic):
        keys += [r.key or b"" for r in decode_records(raw, header)]
    return keys


def keys(n: int, start: int = 0) -> list[bytes]:
    return [b"k-%05d" % i for i in range(start, start + n)]


# --- idempotent producers, sending records in rounds (each round waits for its acks) ------


def produce_rounds(
    client: str,
    bootstrap: str,
    topic: str,
    rounds: list[list[bytes]],
    between: Callable[[int], None],
) -> None:
    """Send each round, call ``between(i)`` once its records are handed to the client (not
    yet acknowledged), then wait until all are acknowledged."""
    if client == "kafka-python":
        from kafka import KafkaProducer

        kp = KafkaProducer(
            bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=5
        )
        try:
            for i, batch in enumerate(rounds):
                futures = [kp.send(topic, key=k, value=b"v", partition=0) for k in batch]
                between(i)
                kp.flush(timeout=DEADLINE_S)
                for future in futures:
                    future.get(timeout=0)
        finally:
            kp.close(timeout=10)
    elif client == "confluent-kafka":
        from confluent_kafka import Producer

        errors: list[object] = []
        cp = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
            }
        )
        for i, batch in enumerate(rounds):
            for k in batch:
                cp.produce(
                    topic,
                    key=k,
                    value=b"v",
                    partition=0,
                    on_delivery=lambda e, _m: e and errors.append(e),
                )
            cp.poll(0)
            between(i)
            assert cp.flush(DEADLINE_S) == 0
        assert errors == []
    else:
        from aiokafka import AIOKafkaProducer

        async def run() -> None:
            ap = AIOKafkaProducer(
                bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=5
            )
            await ap.start()
            try:
                for i, batch in enumerate(rounds):
                    futures = [await ap.send(topic, key=k, value=b"v", partition=0) for k in batch]
                    await asyncio.to_thread(between, i)
                    await asyncio.wait_for(asyncio.gather(*futures), DEADLINE_S)
            finally:
                await ap.stop()

        asyncio.run(run())


def produce_all(client: str, bootstrap: str, topic: str, records: list[bytes]) -> None:
    produce_rounds(client, bootstrap, topic, [records], lambda _i: None)


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


# --- the behaviours ----------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_not_leader_on_produce_makes_clients_refresh_metadata_and_retry_storing_once(
    fb: FaultBroker, client: str
) -> None:
    topic = f"not-leader-{client}"
    fb.faults.log_requests()
    fb.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
    produce_all(client, fb.bootstrap, topic, keys(50))

    assert stored_keys(fb.data_dir, topic) == keys(50)
    log = fb.faults.requests()
    refused = [i for i, e in enumerate(log) if e.get("fault", {}).get("action") == "error"]
    assert len(refused) == 2
    # After the first refusal the client asked for metadata again before producing again.
    after = [e["api"] for e in log[refused[0] + 1 :]]
    assert "Metadata" in after
    assert after.index("Metadata") < len(after) - 1 - after[::-1].index("Produce")


@pytest.mark.parametrize("client", CLIENTS)
def test_answers_dropped_after_the_append_are_deduplicated_by_idempotent_producers(
    fb: FaultBroker, client: str
) -> None:
    # The seed's lost-ACK flow: the batch is appended, its answer never comes, the
    # connection closes; the producer resends the same sequence and gets the original offset.
    topic = f"lost-ack-{client}"
    fb.faults.log_requests()
    fb.faults.drop("Produce", count=1, close_after_ms=100)
    produce_all(client, fb.bootstrap, topic, keys(40))

    assert stored_keys(fb.data_dir, topic) == keys(40)
    produced = [e for e in fb.faults.requests(api="Produce")]
    assert produced[0]["fault"]["action"] == "drop"
    first = produced[0]["request"]["topic_data"][0]["partition_data"][0]["records"]["batches"][0]
    resent = [
        e["request"]["topic_data"][0]["partition_data"][0]["records"]["batches"][0]
        for e in produced[1:]
    ]
    # The dropped batch was sent again with the same producer id, epoch and sequence.
    same = (first["producer_id"], first["producer_epoch"], first["base_sequence"])
    assert same in [(b["producer_id"], b["producer_epoch"], b["base_sequence"]) for b in resent]


@pytest.mark.parametrize("client", CLIENTS)
def test_coordinator_loading_on_join_group_makes_consumers_retry_and_join(
    fb: FaultBroker, client: str
) -> None:
    topic, group = f"join-{client}", f"g-join-{client}"
    produce_all("confluent-kafka", fb.bootstrap, topic, keys(20))
    fb.faults.log_requests()
    fb.faults.error("JoinGroup", "COORDINATOR_LOAD_IN_PROGRESS", count=2)

    got = consume_group(client, fb.bootstrap, topic, group, 20)

    assert got == stored_keys(fb.data_dir, topic) == keys(20)
    joins = fb.faults.requests(api="JoinGroup")
    assert [e.get("fault", {}).get("error") for e in joins[:2]] == [
        "COORDINATOR_LOAD_IN_PROGRESS"
    ] * 2
    assert len(joins) > 2


def consume_group(client: str, bootstrap: str, topic: str, group: str, n: int) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    if client == "kafka-python":
        from kafka import KafkaConsumer

        kc = KafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest"
        )
        try:
            while len(got) < n and time.monotonic() < deadline:
                for messages in kc.poll(timeout_ms=500).values():
                    got += [m.key for m in messages]
        finally:
            kc.close()
    elif client == "confluent-kafka":
        from confluent_kafka import Consumer

        cc = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
        )
        cc.subscribe([topic])
        try:
            while len(got) < n and time.monotonic() < deadline:
                for m in cc.consume(num_messages=100, timeout=0.5):
                    if m.error() is None:
                        got.append(m.key())
        finally:
            cc.close()
    else:
        from aiokafka import AIOKafkaConsumer

        async def run() -> None:
            ac = AIOKafkaConsumer(
                topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest"
            )
            await ac.start()
            try:
                while len(got) < n and time.monotonic() < deadline:
                    for messages in (await ac.getmany(timeout_ms=500)).values():
                        got.extend(m.key for m in messages)
            finally:
                await ac.stop()

        asyncio.run(run())
    return got


# aiokafka leaks the socket of a connection attempt refused while the broker is down
# (aiokafka/conn.py create_connection); the warning comes from its garbage collection.
@pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
)
@pytest.mark.parametrize("client", CLIENTS)
def test_a_crash_and_restart_mid_stream_loses_and_duplicates_nothing_acknowledged(
    fb: FaultBroker, client: str
) -> None:
    topic = f"crash-{client}"
    rounds = [keys(30, start) for start in range(0, 120, 30)]
    # Answers are held after each append, so the crash lands while one is in flight: its
    # batch is on disk, its acknowledgement never sent.
    fb.faults.delay("Produce", 300)
    crashed = threading.Event()

    def between(i: int) -> None:
        if i != 2:
            return
        wait_for(lambda: len(stored_keys(fb.data_dir, topic)) > 60, "round 3 appended")
        fb.faults.crash_restart(down_s=0.2)
        fb.faults.clear()
        crashed.set()

    produce_rounds(client, fb.bootstrap, topic, rounds, between)

    assert crashed.is_set()
    fb.wait_for_log("recovered after crash")
    assert stored_keys(fb.data_dir, topic) == keys(120)
