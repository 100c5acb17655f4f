"""What a caller may see with StandardAuthorizer: group and transaction answers leave out
(or refuse) the groups and topics the caller may not DESCRIBE, as Kafka 4.0's KafkaApis
filters them. Raw requests against a broker process with SASL users and ACLs."""

from __future__ import annotations

import time

from protocol.errors import ErrorCode
from protocol.messages.add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from protocol.messages.consumer_group_describe import CONSUMER_GROUP_DESCRIBE
from protocol.messages.describe_transactions import DESCRIBE_TRANSACTIONS
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.messages.list_groups import LIST_GROUPS
from protocol.schema import Message
from tests.e2e.test_consumer_groups_raw import heartbeat
from tests.e2e.test_security_acls import (
    DESCRIBE,
    GROUP,
    TOPIC,
    TRANSACTIONAL_ID,
    create,
    creation,
    login,
)
from tests.support.broker_process import BrokerProcess
from tests.support.produce import create_partitioned_topic, create_topic
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS

TOPICS_HIDDEN = "The group has described topic(s) that the client is not authorized to describe."


def join_until_assigned(
    client: RawClient, group: str, *, topics: list[str] | None = None, regex: str | None = None
) -> None:
    """A member joins and heartbeats until it owns a partition (a regex is resolved in the
    background, so its assignment may come a heartbeat later)."""
    member_id = f"{group}-member"  # v1: the member picks its id (KIP-1082)
    answer = heartbeat(
        client,
        group,
        member_id,
        0,
        topics=topics,
        regex=regex,
        owned={},
        rebalance_timeout_ms=30000,
    )
    assert answer.error_code == 0, answer
    epoch = answer.member_epoch
    deadline = time.monotonic() + 15
    while not (answer.assignment and answer.assignment.topic_partitions):
        assert time.monotonic() < deadline, f"{group}: never assigned"
        answer = heartbeat(client, group, member_id, epoch)
        assert answer.error_code == 0, answer
        epoch = answer.member_epoch


def describe_groups(client: RawClient, *groups: str) -> list[Message]:
    answer = client.request(
        CONSUMER_GROUP_DESCRIBE,
        1,
        Message(group_ids=list(groups), include_authorized_operations=False),
    )
    return list(answer.groups)


def test_consumer_group_describe_refuses_groups_naming_topics_the_caller_may_not_describe(
    acl_broker: BrokerProcess,
) -> None:
    with login(acl_broker, "admin") as admin:
        topic_id = create_partitioned_topic(admin, "hidden-orders", 2)
        join_until_assigned(admin, "by-name", topics=["hidden-orders"])
        # Not ".*": that also matches __consumer_offsets once a group has made it, and Kafka's
        # regex resolution keeps internal topics too (GroupMetadataManager
        # .refreshRegularExpressions), so alice could then never describe this group.
        join_until_assigned(admin, "by-regex", regex="hidden-.*")
        assert (
            create(
                admin,
                creation(GROUP, "by-name", "User:alice", DESCRIBE),
                creation(GROUP, "by-regex", "User:alice", DESCRIBE),
            )
            == [(0, None)] * 2
        )
    with login(acl_broker, "alice") as alice:
        refused = describe_groups(alice, "by-name", "by-regex")
    # KafkaApis.handleConsumerGroupDescribe: the whole group is replaced, no member left.
    assert [
        (g.group_id, g.error_code, g.error_message, g.members, g.group_epoch, g.group_state)
        for g in refused
    ] == [
        (name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPICS_HIDDEN, [], 0, "")
        for name in ("by-name", "by-regex")
    ]
    acl_broker.wait_for_log("Principal = User:alice is Denied operation = Describe")
    with login(acl_broker, "admin") as admin:
        assert create(admin, creation(TOPIC, "hidden-orders", "User:alice", DESCRIBE)) == [
            (0, None)
        ]
    with login(acl_broker, "alice") as alice:
        shown = describe_groups(alice, "by-name", "by-regex")
    assert [g.error_code for g in shown] == [0, 0]
    for group in shown:
        [member] = group.members
        [assigned] = member.assignment.topic_partitions
        assert (assigned.topic_name, bytes(assigned.topic_id)) == ("hidden-orders", topic_id)


def test_list_groups_lists_consumer_protocol_groups_only_to_who_may_describe_them(
    acl_broker: BrokerProcess,
) -> None:
    with login(acl_broker, "admin") as admin:
        create_topic(admin, "lg-topic")
        join_until_assigned(admin, "kip848-private", topics=["lg-topic"])
        join_until_assigned(admin, "kip848-shared", topics=["lg-topic"])
        assert create(admin, creation(GROUP, "kip848-shared", "User:alice", DESCRIBE)) == [
            (0, None)
        ]
        everything = admin.request(LIST_GROUPS, 5, Message(states_filter=[], types_filter=[]))
    assert {g.group_id for g in everything.groups} == {"kip848-private", "kip848-shared"}
    with login(acl_broker, "alice") as alice:
        for version in (0, 5):
            body = Message(states_filter=[], types_filter=[]) if version == 5 else Message()
            listed = alice.request(LIST_GROUPS, version, body)
            assert listed.error_code == 0
            assert [g.group_id for g in listed.groups] == ["kip848-shared"]


def test_describe_transactions_leaves_out_topics_the_caller_may_not_describe(
    acl_broker: BrokerProcess,
) -> None:
    with login(acl_broker, "admin") as admin:
        create_topic(admin, "txv-open")
        create_topic(admin, "txv-secret")
        opened = admin.request(
            INIT_PRODUCER_ID, 4, Message(transactional_id="txv-1", transaction_timeout_ms=60000)
        )
        assert opened.error_code == 0
        added = admin.request(
            ADD_PARTITIONS_TO_TXN,
            3,
            Message(
                v3_and_below_transactional_id="txv-1",
                v3_and_below_producer_id=opened.producer_id,
                v3_and_below_producer_epoch=opened.producer_epoch,
                v3_and_below_topics=[
                    Message(name="txv-open", partitions=[0]),
                    Message(name="txv-secret", partitions=[0]),
                ],
            ),
        )
        assert [
            p.partition_error_code
            for t in added.results_by_topic_v3_and_below
            for p in t.results_by_partition
        ] == [0, 0]
        assert (
            create(
                admin,
                creation(TRANSACTIONAL_ID, "txv-1", "User:alice", DESCRIBE),
                creation(TOPIC, "txv-open", "User:alice", DESCRIBE),
            )
            == [(0, None)] * 2
        )
        full = admin.request(DESCRIBE_TRANSACTIONS, 0, Message(transactional_ids=["txv-1"]))
    assert {t.topic for t in full.transaction_states[0].topics} == {"txv-open", "txv-secret"}
    with login(acl_broker, "alice") as alice:
        seen = alice.request(DESCRIBE_TRANSACTIONS, 0, Message(transactional_ids=["txv-1"]))
    [state] = seen.transaction_states
    assert (state.error_code, state.transaction_state) == (0, "Ongoing")
    assert [(t.topic, t.partitions) for t in state.topics] == [("txv-open", [0])]
    acl_broker.wait_for_log("Principal = User:alice is Denied operation = Describe")
