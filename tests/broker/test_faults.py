"""broker.toolkit.faults on its own: argument checks, scopes, expiry and the operations table."""

from __future__ import annotations

import pytest

from broker.toolkit.faults import FaultError, FaultInjector, call_operation, json_safe, resolve_api
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.clock import ManualClock


def test_api_names_are_read_as_kafka_spells_them() -> None:
    assert resolve_api("Produce").key == 0
    assert resolve_api("join_group").key == 11
    assert resolve_api("JOINGROUP").key == 11
    assert resolve_api(3).name == "Metadata"
    assert resolve_api("18").name == "ApiVersions"
    with pytest.raises(FaultError, match="unknown api"):
        resolve_api("Producer")


def test_faults_engage_the_dispatcher_only_while_something_is_set() -> None:
    faults = FaultInjector()
    assert not faults.engaged
    rule = faults.error("Produce", "NOT_LEADER_OR_FOLLOWER")
    assert faults.engaged
    faults.clear(id=rule)
    assert not faults.engaged
    faults.log_requests()
    assert faults.engaged
    faults.clear()
    assert not faults.engaged


def test_a_fault_with_a_duration_is_gone_once_it_has_passed() -> None:
    clock = ManualClock(100.0)
    faults = FaultInjector(clock)
    faults.delay("Fetch", 10, duration_s=5)
    faults.take_offline("t", 0, duration_s=1)
    clock.now += 1
    assert faults.status()["offline"] == []
    assert len(faults.status()["faults"]) == 1
    clock.now += 4
    assert faults.status()["faults"] == []
    assert not faults.engaged


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"api": "Produce", "error": 0}, "not a Kafka error"),
        ({"api": "Produce", "error": 6, "when": "during"}, "when must be"),
        ({"api": "Produce", "error": 6, "partition": 0}, "partition needs a topic"),
        ({"api": "Produce", "error": 6, "duration_s": 0}, "duration_s must be above 0"),
        ({"api": "Produce", "error": 6, "count": True}, "count must be an integer"),
        ({"api": "Produce", "error": 6, "client_id": 5}, "client_id must be a string"),
    ],
)
def test_bad_fault_arguments_are_refused_with_a_reason(
    args: dict[str, object], message: str
) -> None:
    faults = FaultInjector()
    with pytest.raises(FaultError, match=message):
        call_operation(faults, "error", args)
    assert faults.rules == []


def test_operations_take_json_arguments_by_name() -> None:
    faults = FaultInjector()
    rule = call_operation(faults, "error", {"api": "Produce", "error": "REQUEST_TIMED_OUT"})
    assert faults.status()["faults"][0]["id"] == rule
    call_operation(faults, "offline", {"topic": "t", "partition": 2})
    assert call_operation(faults, "status", {})["offline"] == [{"topic": "t", "partition": 2}]
    assert call_operation(faults, "clear", {}) == 2


def test_the_request_log_summarises_record_batches() -> None:
    data = build_batch(
        [(None, b"a"), (None, b"b")], producer_id=7, producer_epoch=1, base_sequence=4
    )
    request = Message(
        transactional_id=None,
        topic_data=[Message(name="t", partition_data=[Message(index=0, records=memoryview(data))])],
        topic_id=b"\x01" * 16,
    )
    logged = json_safe(request)
    assert logged["topic_id"] == "01010101-0101-0101-0101-010101010101"
    assert logged["topic_data"][0]["partition_data"][0]["records"] == {
        "size": len(data),
        "batches": [
            {
                "producer_id": 7,
                "producer_epoch": 1,
                "base_sequence": 4,
                "records_count": 2,
                "codec": 0,
                "transactional": False,
            }
        ],
    }


def test_an_unknown_operation_lists_every_operation_the_control_plane_has() -> None:
    with pytest.raises(
        FaultError, match=r"unknown operation 'crash'; known: error, .*crash-restart"
    ):
        call_operation(FaultInjector(), "crash", {})


def test_the_request_log_off_names_the_operation_as_the_cli_spells_it() -> None:
    with pytest.raises(FaultError, match="minikafka fault log-requests"):
        FaultInjector().requests()


def test_taking_offline_a_partition_the_broker_does_not_have_is_refused() -> None:
    from minikafka import ThreadedBroker

    with ThreadedBroker() as broker:
        broker.create_topic("t", 2)
        with pytest.raises(FaultError, match="no topic 'no-such-topic' on this broker"):
            broker.faults.take_offline("no-such-topic", 0)
        with pytest.raises(FaultError, match="topic 't' has 2 partition"):
            broker.faults.take_offline("t", 2)
        broker.faults.take_offline("t", 1)
        assert broker.faults.status()["offline"] == [{"topic": "t", "partition": 1}]
