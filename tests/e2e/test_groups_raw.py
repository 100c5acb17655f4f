"""Group APIs over a raw socket (Kafka's error codes for bad input) and the admin clients."""

from __future__ import annotations

from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.leave_group import LEAVE_GROUP
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.sync_group import SYNC_GROUP
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.group_offsets import committed_topic
from tests.support.produce import create_topic
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS

INCONSISTENT_GROUP_PROTOCOL, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID = 23, 22, 25
MEMBER_ID_REQUIRED, GROUP_ID_NOT_FOUND = 79, 69


def join_request(member_id: str, protocols: list[Message]) -> Message:
    return Message(
        group_id="raw",
        session_timeout_ms=6000,
        rebalance_timeout_ms=6000,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=protocols,
        reason=None,
    )


def commit_request(group: str, generation: int, member_id: str, topic: str) -> Message:
    return Message(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=None,
        topics=[committed_topic(topic, {0: 1}, None)],
    )


def test_bad_group_input_gets_kafkas_error_codes(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create_topic(client, "raw-groups")
        empty = client.request(JOIN_GROUP, 7, join_request("", []))
        assert empty.error_code == INCONSISTENT_GROUP_PROTOCOL

        protocols = [Message(name="range", metadata=b"\x00\x00\x00\x00\x00\x00")]
        first = client.request(JOIN_GROUP, 7, join_request("", protocols))
        assert first.error_code == MEMBER_ID_REQUIRED and first.member_id
        joined = client.request(JOIN_GROUP, 7, join_request(first.member_id, protocols))
        assert joined.error_code == 0 and joined.generation_id == 1
        assert joined.leader == first.member_id and joined.protocol_name == "range"

        stranger = client.request(
            SYNC_GROUP,
            5,
            Message(
                group_id="raw",
                generation_id=1,
                member_id="not-a-member",
                group_instance_id=None,
                protocol_type="consumer",
                protocol_name="range",
                assignments=[],
            ),
        )
        assert stranger.error_code == UNKNOWN_MEMBER_ID

        stale = client.request(
            OFFSET_COMMIT, 8, commit_request("raw", 6, first.member_id, "raw-groups")
        )
        assert stale.topics[0].partitions[0].error_code == ILLEGAL_GENERATION
        unknown = client.request(
            OFFSET_COMMIT, 9, commit_request("no-such-group", 3, "m", "raw-groups")
        )
        assert unknown.topics[0].partitions[0].error_code == GROUP_ID_NOT_FOUND
        unknown_v8 = client.request(
            OFFSET_COMMIT, 8, commit_request("no-such-group", 3, "m", "raw-groups")
        )
        assert unknown_v8.topics[0].partitions[0].error_code == ILLEGAL_GENERATION
        simple = client.request(OFFSET_COMMIT, 8, commit_request("simple", -1, "", "raw-groups"))
        assert simple.topics[0].partitions[0].error_code == 0


def test_admin_clients_list_describe_delete(shared_broker: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    with RawClient(shared_broker.port) as client:
        create_topic(client, "admin-groups")
        for group in ("admin-a", "admin-b"):
            answer = client.request(OFFSET_COMMIT, 8, commit_request(group, -1, "", "admin-groups"))
            assert answer.topics[0].partitions[0].error_code == 0

    kp = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        listed = {g["group_id"]: g for g in kp.list_groups()}
        assert listed["admin-a"]["protocol_type"] == ""  # a simple-consumer group
        described = kp.describe_groups(["admin-a"])["admin-a"]
        assert described["group_state"] == "Empty" and described["members"] == []
        offsets = kp.list_group_offsets({"admin-a": None})
        assert offsets, offsets  # the simple consumer's commit
        kp.delete_groups(["admin-a"])
        assert "admin-a" not in {g["group_id"] for g in kp.list_groups()}
    finally:
        kp.close()

    ck = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    listed_ck = ck.list_consumer_groups().result(timeout=10)
    ids = {g.group_id for g in listed_ck.valid}
    assert "admin-b" in ids and "admin-a" not in ids
    described_ck = ck.describe_consumer_groups(["admin-b"])["admin-b"].result(timeout=10)
    assert str(described_ck.state).endswith("EMPTY")
    ck.delete_consumer_groups(["admin-b"])["admin-b"].result(timeout=10)
    after = {g.group_id for g in ck.list_consumer_groups().result(timeout=10).valid}
    assert "admin-b" not in after


INVALID_REQUEST = 42
# Errors.INVALID_REQUEST.message(): the exception's default message.
INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or "
    "the message was sent to an incompatible broker. See the broker logs for more details."
)


def find_coordinator(client: RawClient, version: int, key_type: int) -> Message:
    return client.request(
        FIND_COORDINATOR,
        version,
        Message(key="g", key_type=key_type, coordinator_keys=["g", "h"]),
    )


def test_find_coordinator_error_message_is_kafkas_at_each_version(
    shared_broker: BrokerProcess,
) -> None:
    """KafkaApis.handleFindCoordinatorRequestLessThanV4 fills error_message from
    Errors.message() ("NONE" on success); v4+ answers leave each coordinator's at its
    default, "" (recorded from Kafka 4.0: kafka-oracle raw_group_protocol, group_*)."""
    with RawClient(shared_broker.port) as client:
        assert find_coordinator(client, 0, 0).error_code == 0
        for version in (1, 2, 3):
            found = find_coordinator(client, version, 0)
            assert (found.error_code, found.error_message) == (0, "NONE"), version
            assert found.node_id == 1 and found.port == shared_broker.port
            # Share keys: the error's message, as FindCoordinatorResponse.prepareOldResponse.
            share = find_coordinator(client, version, 2)
            assert (share.error_code, share.error_message) == (
                INVALID_REQUEST,
                INVALID_REQUEST_MESSAGE,
            )
            assert (share.node_id, share.host, share.port) == (-1, "", -1)
        for version in (4, 6):
            found = find_coordinator(client, version, 0)
            assert [(c.key, c.error_code, c.error_message) for c in found.coordinators] == [
                ("g", 0, ""),
                ("h", 0, ""),
            ]
            share = find_coordinator(client, version, 2)
            assert [(c.error_code, c.error_message, c.node_id) for c in share.coordinators] == [
                (INVALID_REQUEST, "", -1)
            ] * 2
        # An unknown key type fails the whole request (CoordinatorType.forId throws
        # InvalidRequestException): every key gets the error with its message.
        unknown = find_coordinator(client, 4, 7)
        assert [(c.error_code, c.error_message) for c in unknown.coordinators] == [
            (INVALID_REQUEST, INVALID_REQUEST_MESSAGE)
        ] * 2
        old_unknown = find_coordinator(client, 2, 7)
        assert (old_unknown.error_code, old_unknown.error_message) == (
            INVALID_REQUEST,
            INVALID_REQUEST_MESSAGE,
        )


NOT_REQUESTED = -(2**31)
# READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (AclOperation codes 3, 6, 8, 10, 11):
# AclEntry.supportedOperations(GROUP), all allowed with no authorizer, as Utils.to32BitField.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)


def test_describe_groups_reports_authorized_operations_when_asked(
    shared_broker: BrokerProcess,
) -> None:
    """KafkaApis.handleDescribeGroupsRequest: v3+ with include_authorized_operations fills
    them for every group answered without an error (recorded from Kafka 4.0: {3,6,8,10,11}
    in kafka-oracle raw_group_protocol and admin_groups_kafkapython)."""
    with RawClient(shared_broker.port) as client:
        create_topic(client, "described")
        committed = client.request(OFFSET_COMMIT, 8, commit_request("ops", -1, "", "described"))
        assert committed.topics[0].partitions[0].error_code == 0

        def describe(version: int, group: str, include: bool) -> Message:
            answer = client.request(
                DESCRIBE_GROUPS,
                version,
                Message(groups=[group], include_authorized_operations=include),
            )
            described: Message = answer.groups[0]
            return described

        for version in (3, 5, 6):
            group = describe(version, "ops", True)
            assert (group.error_code, group.group_state) == (0, "Empty")
            assert group.authorized_operations == GROUP_OPERATIONS, version
            assert describe(version, "ops", False).authorized_operations == NOT_REQUESTED
        # Before v6 a missing group is answered Dead without an error, so it gets them too.
        missing = describe(5, "no-such-group", True)
        assert (missing.error_code, missing.group_state) == (0, "Dead")
        assert missing.authorized_operations == GROUP_OPERATIONS
        missing_v6 = describe(6, "no-such-group", True)
        assert missing_v6.error_code == GROUP_ID_NOT_FOUND
        assert missing_v6.authorized_operations == NOT_REQUESTED


def test_leave_group_for_an_unknown_group_answers_unknown_member_id(
    shared_broker: BrokerProcess,
) -> None:
    """Kafka 4.0 (GroupMetadataManager.classicGroupLeave throws UnknownMemberIdException,
    GroupCoordinatorService.leaveGroup turns it into a per-member UNKNOWN_MEMBER_ID and
    LeaveGroupResponse moves that to the top level before v3): v0-2 answer it at the top
    level; v3+ per member, with no top-level error."""
    with RawClient(shared_broker.port) as client:
        for version in (0, 1, 2):
            old = client.request(
                LEAVE_GROUP, version, Message(group_id="never-joined", member_id="m-1")
            )
            assert old.error_code == UNKNOWN_MEMBER_ID, version
        for version in (3, 5):
            members = [
                Message(member_id="m-1", group_instance_id=None, reason=None),
                Message(member_id="", group_instance_id="i-2", reason="bye"),
            ]
            new = client.request(
                LEAVE_GROUP, version, Message(group_id="never-joined", members=members)
            )
            assert new.error_code == 0, version
            assert [(m.member_id, m.group_instance_id, m.error_code) for m in new.members] == [
                ("m-1", None, UNKNOWN_MEMBER_ID),
                ("", "i-2", UNKNOWN_MEMBER_ID),
            ]
