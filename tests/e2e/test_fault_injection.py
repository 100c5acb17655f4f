"""Fault injection over the wire: each fault set through the HTTP control plane of a real
broker process, checked on the response fields a raw client reads and on the segment files."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.fetch import FETCH
from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.schema import Message
from tests.support.fault_broker import FaultBroker
from tests.support.produce import (
    batch,
    create_topic,
    fetch_request,
    init_producer,
    produce,
    produce_request,
    producing_to,
    stored,
)
from tests.support.raw_client import SOFTWARE, RawClient

NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
LEADER_NOT_AVAILABLE = 5
COORDINATOR_LOAD_IN_PROGRESS = 14


@pytest.fixture(scope="module")
def fb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultBroker]:
    proc = FaultBroker(tmp_path_factory.mktemp("faults") / "data", {"num.partitions": "2"})
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(autouse=True)
def no_faults_left(fb: FaultBroker) -> Iterator[None]:
    yield
    fb.faults.clear()


def sequences(data: Path, topic: str, partition: int = 0) -> list[int]:
    return [h.base_sequence for h, _ in stored(data, topic, partition)]


def metadata(client: RawClient, topic: str) -> Message:
    return client.request(
        METADATA, 12, Message(topics=[Message(name=topic)], allow_auto_topic_creation=False)
    )


def test_error_before_the_work_is_answered_and_nothing_is_stored(fb: FaultBroker) -> None:
    with producing_to(fb.port, "before") as (client, pid):
        rule = fb.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=1)
        assert isinstance(rule, int)

        refused = produce(client, "before", batch(pid, 0, 0))
        assert (refused.error_code, refused.base_offset) == (NOT_LEADER_OR_FOLLOWER, -1)
        assert stored(fb.data_dir, "before") == []

        retried = produce(client, "before", batch(pid, 0, 0))
        assert (retried.error_code, retried.base_offset) == (0, 0)
    assert sequences(fb.data_dir, "before") == [0]


def test_error_after_the_work_stores_the_batch_and_the_retry_is_a_duplicate(
    fb: FaultBroker,
) -> None:
    # The lost-ACK case: the append happened, the answer says it failed.
    with producing_to(fb.port, "after") as (client, pid):
        produce(client, "after", batch(pid, 0, 0))
        fb.faults.error("Produce", "REQUEST_TIMED_OUT", when="after")

        lost = produce(client, "after", batch(pid, 0, 2))
        assert (lost.error_code, lost.base_offset) == (REQUEST_TIMED_OUT, -1)
        assert sequences(fb.data_dir, "after") == [0, 2]

        retried = produce(client, "after", batch(pid, 0, 2))
        assert (retried.error_code, retried.base_offset) == (0, 2)
    assert sequences(fb.data_dir, "after") == [0, 2]


def test_error_scoped_to_a_partition_leaves_the_other_partitions_served(fb: FaultBroker) -> None:
    with producing_to(fb.port, "scoped") as (client, pid):
        fb.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", topic="scoped", partition=1)
        request = Message(
            transactional_id=None,
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                Message(
                    name="scoped",
                    partition_data=[
                        Message(index=0, records=batch(pid, 0, 0)),
                        Message(index=1, records=batch(pid, 0, 0)),
                    ],
                )
            ],
        )
        answer = client.request(PRODUCE, 9, request)
    parts = {p.index: p for p in answer.responses[0].partition_responses}
    assert (parts[0].error_code, parts[0].base_offset) == (0, 0)
    assert (parts[1].error_code, parts[1].base_offset) == (NOT_LEADER_OR_FOLLOWER, -1)
    assert sequences(fb.data_dir, "scoped", 0) == [0]
    assert sequences(fb.data_dir, "scoped", 1) == []


def test_error_scoped_to_another_client_id_does_not_apply(fb: FaultBroker) -> None:
    with RawClient(fb.port, client_id="bystander") as client:
        create_topic(client, "bystander")
        pid = init_producer(client)
        fb.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", client_id="someone-else")
        assert produce(client, "bystander", batch(pid, 0, 0)).error_code == 0
    assert fb.faults.status()["faults"][0]["count_left"] == 1


def test_drop_does_the_work_answers_nothing_and_closes_the_connection(fb: FaultBroker) -> None:
    with producing_to(fb.port, "dropped") as (client, pid):
        fb.faults.drop("Produce", close_after_ms=50)
        client.send(PRODUCE, 9, produce_request("dropped", batch(pid, 0, 0)))
        assert client.closed_by_peer(timeout=10)  # EOF, not an answer
    assert sequences(fb.data_dir, "dropped") == [0]
    assert "answer to Produce dropped" in fb.wait_for_log("answer to Produce dropped")


def test_delay_holds_the_answer(fb: FaultBroker) -> None:
    with RawClient(fb.port) as client:
        fb.faults.delay("ApiVersions", 400, count=1)
        started = time.monotonic()
        answer = client.request(API_VERSIONS, 3, SOFTWARE)
        assert time.monotonic() - started >= 0.4
        assert answer.error_code == 0


def test_throttle_sets_throttle_time_ms(fb: FaultBroker) -> None:
    with RawClient(fb.port) as client:
        fb.faults.throttle("Metadata", 250, count=1)
        assert metadata(client, "nothing").throttle_time_ms == 250
        assert metadata(client, "nothing").throttle_time_ms == 0


def test_offline_partition_has_no_leader_until_brought_back(fb: FaultBroker) -> None:
    with producing_to(fb.port, "offline") as (client, pid):
        fb.faults.take_offline("offline", 0)
        parts = {p.partition_index: p for p in metadata(client, "offline").topics[0].partitions}
        assert (parts[0].error_code, parts[0].leader_id, parts[0].isr_nodes) == (
            LEADER_NOT_AVAILABLE,
            -1,
            [],
        )
        assert parts[0].offline_replicas == [1]
        assert (parts[1].error_code, parts[1].leader_id) == (0, 1)
        assert produce(client, "offline", batch(pid, 0, 0)).error_code == NOT_LEADER_OR_FOLLOWER
        assert stored(fb.data_dir, "offline") == []

        fb.faults.bring_online("offline", 0)
        assert metadata(client, "offline").topics[0].partitions[0].error_code == 0
        assert produce(client, "offline", batch(pid, 0, 0)).error_code == 0
    assert sequences(fb.data_dir, "offline") == [0]


def test_close_connections_closes_every_client_connection(fb: FaultBroker) -> None:
    with RawClient(fb.port) as first, RawClient(fb.port) as second:
        first.request(API_VERSIONS, 3, SOFTWARE)
        second.request(API_VERSIONS, 3, SOFTWARE)
        assert fb.faults.close_connections() >= 2
        assert first.closed_by_peer()
        assert second.closed_by_peer()


def test_refused_connections_are_closed_at_once_until_cleared(fb: FaultBroker) -> None:
    fb.faults.refuse_connections(60)
    with RawClient(fb.port) as refused:
        assert refused.closed_by_peer()
    fb.faults.clear()
    with RawClient(fb.port) as accepted:
        assert accepted.request(API_VERSIONS, 3, SOFTWARE).error_code == 0


def test_request_log_records_what_the_client_sent(fb: FaultBroker) -> None:
    fb.faults.log_requests()
    with RawClient(fb.port, client_id="logged-client") as client:
        create_topic(client, "logged")
        pid = init_producer(client)
        produce(client, "logged", batch(pid, 0, 0, count=3))
    entries = fb.faults.requests(api="Produce", client_id="logged-client")
    assert len(entries) == 1
    entry = entries[0]
    assert (entry["api"], entry["api_key"], entry["api_version"]) == ("Produce", 0, 9)
    sent = entry["request"]
    assert sent["acks"] == -1
    assert sent["topic_data"][0]["name"] == "logged"
    records = sent["topic_data"][0]["partition_data"][0]["records"]
    assert records["batches"] == [
        {
            "producer_id": pid,
            "producer_epoch": 0,
            "base_sequence": 0,
            "records_count": 3,
            "codec": 0,
            "transactional": False,
        }
    ]


def test_join_group_error_is_a_whole_request_answer(fb: FaultBroker) -> None:
    fb.faults.error("JoinGroup", "COORDINATOR_LOAD_IN_PROGRESS", count=1)
    request = Message(
        group_id="g-loading",
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[Message(name="range", metadata=b"")],
    )
    with RawClient(fb.port) as client:
        answer = client.request(JOIN_GROUP, 5, request)
    assert answer.error_code == COORDINATOR_LOAD_IN_PROGRESS
    assert (answer.generation_id, answer.member_id, answer.members) == (-1, "", [])


def test_fetch_error_sets_the_partition_and_top_level_codes(fb: FaultBroker) -> None:
    with RawClient(fb.port) as client:
        create_topic(client, "fetch-error")
        fb.faults.error("Fetch", "NOT_LEADER_OR_FOLLOWER", count=1)
        answer = client.request(FETCH, 12, fetch_request("fetch-error", 0))
    assert answer.error_code == NOT_LEADER_OR_FOLLOWER
    part = answer.responses[0].partitions[0]
    assert (part.error_code, part.high_watermark) == (NOT_LEADER_OR_FOLLOWER, -1)


def test_a_fault_with_a_duration_expires(fb: FaultBroker) -> None:
    # Long enough that a loaded machine still sends the first request before it is over.
    fb.faults.error("Metadata", "REQUEST_TIMED_OUT", count=None, duration_s=2)
    with RawClient(fb.port) as client:
        assert metadata(client, "t").topics[0].error_code == REQUEST_TIMED_OUT
        deadline = time.monotonic() + 10
        while metadata(client, "t").topics[0].error_code == REQUEST_TIMED_OUT:
            assert time.monotonic() < deadline, "the fault did not expire"
    assert fb.faults.status()["faults"] == []


def test_crash_restart_recovers_every_acknowledged_batch(tmp_path: Path) -> None:
    proc = FaultBroker(tmp_path / "data").start()
    try:
        with producing_to(proc.port, "crash") as (client, pid):
            for seq in (0, 2, 4):
                assert produce(client, "crash", batch(pid, 0, seq)).error_code == 0
        answer = proc.faults.crash_restart()
        assert answer["restarts"] == 1
        proc.wait_for_log("recovered after crash")
        with RawClient(proc.port) as client:
            # Producer state rebuilt from the log: the retry of the last batch is a duplicate.
            again = produce(client, "crash", batch(pid, 0, 4))
            assert (again.error_code, again.base_offset) == (0, 4)
    finally:
        proc.stop()
    assert sequences(tmp_path / "data", "crash") == [0, 2, 4]
