"""The error fields of admin answers, byte for byte what Kafka 4.0 puts there.

Clients show ``error_message`` to users and some tell "" from null, so these follow the
answers recorded from Kafka 4.0.0 (kafka-oracle: admin_confluent_configs,
admin_create_partitions, admin_describe_producers, admin_kafkapython_create_delete_topics).
"""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode
from protocol.messages.create_partitions import CREATE_PARTITIONS
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.describe_producers import DESCRIBE_PRODUCERS
from protocol.schema import Message
from tests.e2e.test_admin_configs import create, describe
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

TOPIC = 2

pytestmark = KAFKA_PYTHON_SCHEMA_READS


@pytest.mark.parametrize("version", range(1, 5))
def test_describe_configs_answers_an_empty_message_for_a_topic_found_or_missing(
    shared_broker: BrokerProcess, version: int
) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, f"msg-found-v{version}")
        found = describe(client, TOPIC, f"msg-found-v{version}", version)
        missing = describe(client, TOPIC, "msg-missing", version)
    # ConfigHelper sets no message on either result: the field keeps its default "".
    assert (found.error_code, found.error_message) == (0, "")
    assert (missing.error_code, missing.error_message) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "",
    )


@pytest.mark.parametrize("version", range(4))
def test_create_partitions_of_a_missing_topic_has_a_null_message(
    shared_broker: BrokerProcess, version: int
) -> None:
    with RawClient(shared_broker.port) as client:
        answer = client.request(
            CREATE_PARTITIONS,
            version,
            Message(
                topics=[Message(name="grow-missing", count=2, assignments=None)],
                timeout_ms=1000,
                validate_only=False,
            ),
        )
    result = answer.results[0]
    assert (result.error_code, result.error_message) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        None,
    )


def test_describe_producers_of_a_topic_not_hosted_says_so(
    shared_broker: BrokerProcess,
) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "dp-one")
        answer = client.request(
            DESCRIBE_PRODUCERS,
            0,
            Message(
                topics=[
                    Message(name="dp-one", partition_indexes=[0, 5]),
                    Message(name="dp-nowhere", partition_indexes=[0]),
                ]
            ),
        )
    parts = {(t.name, p.partition_index): p for t in answer.topics for p in t.partitions}
    assert (parts["dp-one", 0].error_code, parts["dp-one", 0].error_message) == (0, None)
    # Kafka words only the missing topic; a missing partition of a known topic has none.
    assert (parts["dp-one", 5].error_code, parts["dp-one", 5].error_message) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        None,
    )
    assert (parts["dp-nowhere", 0].error_code, parts["dp-nowhere", 0].error_message) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "This server does not host this topic-partition.",
    )


def test_create_topics_v7_validate_only_answers_a_topic_id(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        result = create(client, "dry-run-id", 2, validate_only=True, version=7)
        old = create(client, "dry-run-id", 2, validate_only=True, version=6)
    assert (result.error_code, result.error_message) == (0, None)
    assert result.topic_id != bytes(16)
    assert old.error_code == 0
    assert not (shared_broker.data_dir / "dry-run-id-0").exists()


# ReplicationControlManager.validateManualPartitionAssignment, on a cluster whose only
# broker is node 1 (the fixture's default node.id): the broker ids are checked sorted, so
# the smallest unknown one is named. Found by kafka-python's test_create_partitions run
# against a broker whose node id is not the one it assigns to.
MANUAL_ASSIGNMENT_REFUSALS = [
    ([], "The manual partition assignment includes an empty replica list."),
    ([7], "The manual partition assignment includes broker 7, but no such broker is registered."),
    (
        [9, 2],
        "The manual partition assignment includes broker 2, but no such broker is registered.",
    ),
    (
        [1, 5],
        "The manual partition assignment includes broker 5, but no such broker is registered.",
    ),
    ([1, 1], "The manual partition assignment includes the broker 1 more than once."),
]


@pytest.mark.parametrize(("broker_ids", "message"), MANUAL_ASSIGNMENT_REFUSALS)
def test_create_partitions_refuses_a_manual_assignment_in_kafkas_words(
    shared_broker: BrokerProcess, broker_ids: list[int], message: str
) -> None:
    topic = f"grow-manual-{len(broker_ids)}-{'-'.join(map(str, broker_ids))}"
    with RawClient(shared_broker.port) as client:
        assert create(client, topic).error_code == 0
        answer = client.request(
            CREATE_PARTITIONS,
            3,
            Message(
                # The first new partition's assignment is valid: nothing is created when a
                # later one is refused.
                topics=[
                    Message(
                        name=topic,
                        count=3,
                        assignments=[Message(broker_ids=[1]), Message(broker_ids=broker_ids)],
                    )
                ],
                timeout_ms=1000,
                validate_only=False,
            ),
        )
    result = answer.results[0]
    assert (result.error_code, result.error_message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        message,
    )
    partition_dirs = sorted(p.name for p in shared_broker.data_dir.glob(f"{topic}-*"))
    assert partition_dirs == [f"{topic}-0"]


@pytest.mark.parametrize(("broker_ids", "message"), MANUAL_ASSIGNMENT_REFUSALS)
def test_create_topics_refuses_a_manual_assignment_in_kafkas_words(
    shared_broker: BrokerProcess, broker_ids: list[int], message: str
) -> None:
    topic = f"new-manual-{len(broker_ids)}-{'-'.join(map(str, broker_ids))}"
    with RawClient(shared_broker.port) as client:
        answer = client.request(
            CREATE_TOPICS,
            7,
            Message(
                topics=[
                    Message(
                        name=topic,
                        num_partitions=-1,
                        replication_factor=-1,
                        assignments=[
                            Message(partition_index=0, broker_ids=[1]),
                            Message(partition_index=1, broker_ids=broker_ids),
                        ],
                        configs=[],
                    )
                ],
                timeout_ms=1000,
                validate_only=False,
            ),
        )
    result = answer.topics[0]
    assert (result.error_code, result.error_message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        message,
    )
    assert list(shared_broker.data_dir.glob(f"{topic}-*")) == []
