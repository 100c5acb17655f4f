"""Produce and the transactional id, as Kafka 4.0's KafkaApis.handleProduceRequest checks
it: WRITE on the transactional id only when the request carries transactional batches
(before every other check, the whole request refused), none needed for idempotent
batches that come with a transactional id. Raw requests against a broker process with
SASL users and ACLs; outcomes checked in the segment files."""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode
from protocol.messages.produce import PRODUCE
from protocol.schema import Message
from tests.e2e.test_security_acls import TOPIC, WRITE, create, creation, login
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_topic, init_producer, stored_values
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS


def _request(txn_id: str | None, acks: int, *parts: tuple[str, bytes]) -> Message:
    return Message(
        transactional_id=txn_id,
        acks=acks,
        timeout_ms=30000,
        topic_data=[
            Message(name=name, partition_data=[Message(index=0, records=data)])
            for name, data in parts
        ],
    )


def _answers(answer: Message) -> dict[str, tuple[int, str | None, int, int]]:
    return {
        topic.name: (p.error_code, p.error_message, p.base_offset, p.log_start_offset)
        for topic in answer.responses
        for p in topic.partition_responses
    }


@pytest.fixture
def writer(acl_broker: BrokerProcess) -> BrokerProcess:
    """alice may WRITE to ``allowed`` (and ``denied`` exists), nothing on transactional ids."""
    with login(acl_broker, "admin") as admin:
        create_topic(admin, "allowed")
        create_topic(admin, "denied")
        assert create(admin, creation(TOPIC, "allowed", "User:alice", WRITE)) == [(0, None)]
    return acl_broker


def test_idempotent_batches_with_a_transactional_id_need_no_acl_on_it(
    writer: BrokerProcess,
) -> None:
    with login(writer, "alice") as alice:
        pid = init_producer(alice)
        answer = alice.request(
            PRODUCE, 9, _request("tx-unlisted", -1, ("allowed", batch(pid, 0, 0, tag="idem")))
        )
    assert _answers(answer) == {"allowed": (0, None, 0, 0)}
    assert stored_values(writer.data_dir, "allowed") == [b"idem-0", b"idem-1"]


def test_transactional_batches_refuse_the_whole_request_before_any_other_check(
    writer: BrokerProcess,
) -> None:
    refused = (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None, -1, -1)
    txn = batch(4000, 0, 0, tag="txn", transactional=True)
    plain = batch(4001, 0, 0, tag="plain")
    with login(writer, "alice") as alice:
        # Denied and unknown topics, and acks=2, are answered after this check in Kafka;
        # one transactional batch (here in the denied topic) refuses every partition.
        answer = alice.request(
            PRODUCE,
            9,
            _request("tx-unlisted", 2, ("allowed", plain), ("denied", txn), ("nowhere", plain)),
        )
        assert _answers(answer) == {"allowed": refused, "denied": refused, "nowhere": refused}
        # No transactional id at all: the same, even for one partition of an unknown topic.
        answer = alice.request(PRODUCE, 9, _request(None, -1, ("nowhere", txn)))
        assert _answers(answer) == {"nowhere": refused}
        # acks=0: Kafka has no answer to send and closes the connection.
        alice.send(PRODUCE, 9, _request("tx-unlisted", 0, ("allowed", txn)), expect_response=False)
        assert alice.closed_by_peer()
    assert stored_values(writer.data_dir, "allowed") == []
