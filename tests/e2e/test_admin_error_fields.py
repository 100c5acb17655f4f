"""The error fields of admin answers, byte for byte what Kafka 4.0 puts there.

Clients show ``error_message`` to users and some tell "" from null, so these follow the
answers recorded from Kafka 4.0.0 (kafka-oracle: admin_confluent_configs,
admin_create_partitions, admin_describe_producers, admin_kafkapython_create_delete_topics).
"""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode
from protocol.messages.create_partitions import CREATE_PARTITIONS
from protocol.messages.describe_producers import DESCRIBE_PRODUCERS
from protocol.schema import Message
from tests.e2e.test_admin_configs import create, describe
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

TOPIC = 2

pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


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
