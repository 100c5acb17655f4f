"""ACLs with StandardAuthorizer: Describe/Create/DeleteAcls as Kafka answers them (and
SECURITY_DISABLED without an authorizer), super.users, allow.everyone.if.no.acl.found, the
ACL file across restarts, and the operation each API checks, with raw requests and the
admin clients of kafka-python and confluent-kafka; outcomes checked in the segment files."""

from __future__ import annotations

import time
from pathlib import Path

from protocol.errors import ErrorCode
from protocol.messages.create_acls import CREATE_ACLS
from protocol.messages.delete_acls import DELETE_ACLS
from protocol.messages.describe_acls import DESCRIBE_ACLS
from protocol.messages.describe_transactions import DESCRIBE_TRANSACTIONS
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.messages.list_transactions import LIST_TRANSACTIONS
from protocol.messages.metadata import METADATA
from protocol.messages.write_txn_markers import WRITE_TXN_MARKERS
from protocol.records import build_batch
from protocol.schema import Message
from storage.acl_store import FILE_NAME as ACL_FILE
from storage.acl_store import StoredAcl, decode
from tests.support.broker_process import BrokerProcess
from tests.support.produce import create_topic, produce, stored_values
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS
from tests.support.sasl import acl_overrides, plain_login

pytestmark = KAFKA_PYTHON_SCHEMA_READS

# ResourceType, PatternType, AclOperation, AclPermissionType codes.
ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 1, 2, 3, 4, 5
MATCH, LITERAL, PREFIXED = 2, 3, 4
ALL, READ, WRITE, CREATE, DESCRIBE = 2, 3, 4, 5, 8
DENY, ALLOW = 2, 3


def login(broker: BrokerProcess, user: str) -> RawClient:
    client = RawClient(broker.ports["SASL_PLAINTEXT"], client_id=user)
    passwords = {"admin": "admin-secret", "alice": "alice-secret"}
    assert plain_login(client, user, passwords[user]).error_code == 0
    return client


def creation(
    rtype: int, name: str, principal: str, op: int, perm: int = ALLOW, pattern: int = LITERAL
) -> Message:
    return Message(
        resource_type=rtype,
        resource_name=name,
        resource_pattern_type=pattern,
        principal=principal,
        host="*",
        operation=op,
        permission_type=perm,
    )


def any_filter(**kw: object) -> Message:
    values: dict[str, object] = {
        "resource_type_filter": ANY,
        "resource_name_filter": None,
        "pattern_type_filter": ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    values.update(kw)
    return Message(**values)


def create(client: RawClient, *creations: Message) -> list[tuple[int, str | None]]:
    answer = client.request(CREATE_ACLS, 3, Message(creations=list(creations)))
    return [(r.error_code, r.error_message) for r in answer.results]


def described(client: RawClient, **kw: object) -> set[tuple[int, str, int, str, int, int]]:
    answer = client.request(DESCRIBE_ACLS, 3, any_filter(**kw))
    assert answer.error_code == 0, answer
    return {
        (
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            a.principal,
            a.operation,
            a.permission_type,
        )
        for r in answer.resources
        for a in r.acls
    }


def records(tag: str, n: int = 2) -> bytes:
    return build_batch([(None, f"{tag}-{i}".encode()) for i in range(n)])


def test_acl_apis_answer_security_disabled_without_an_authorizer(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        answer = client.request(DESCRIBE_ACLS, 3, any_filter())
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.SECURITY_DISABLED,
            "No Authorizer is configured on the broker",
        )
        assert create(client, creation(TOPIC, "t", "User:a", READ)) == [
            (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
        ]
        answer = client.request(DELETE_ACLS, 3, Message(filters=[any_filter()]))
        assert [(r.error_code, r.error_message) for r in answer.filter_results] == [
            (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
        ]


def test_acls_are_created_described_by_filter_kept_across_restart_and_deleted(
    acl_broker: BrokerProcess,
) -> None:
    acls = [
        creation(TOPIC, "orders", "User:alice", READ),
        creation(TOPIC, "orders-", "User:alice", WRITE, pattern=PREFIXED),
        creation(TOPIC, "*", "User:bob", DESCRIBE, perm=DENY),
        creation(GROUP, "app", "User:*", READ),
        creation(CLUSTER, "kafka-cluster", "User:alice", CREATE),
    ]
    with login(acl_broker, "admin") as admin:
        assert create(admin, *acls) == [(0, None)] * 5
        assert create(admin, acls[0]) == [(0, None)]  # already there: kept once
        everything = described(admin)
        assert len(everything) == 5
        # MATCH: every ACL that applies to the topic orders-eu.
        assert described(
            admin,
            resource_type_filter=TOPIC,
            resource_name_filter="orders-eu",
            pattern_type_filter=MATCH,
        ) == {
            (TOPIC, "orders-", PREFIXED, "User:alice", WRITE, ALLOW),
            (TOPIC, "*", LITERAL, "User:bob", DESCRIBE, DENY),
        }
        assert described(admin, principal_filter="User:alice", pattern_type_filter=LITERAL) == {
            (TOPIC, "orders", LITERAL, "User:alice", READ, ALLOW),
            (CLUSTER, "kafka-cluster", LITERAL, "User:alice", CREATE, ALLOW),
        }
    stored = decode((acl_broker.data_dir / ACL_FILE).read_bytes())
    assert StoredAcl(TOPIC, "orders-", PREFIXED, "User:alice", "*", WRITE, ALLOW) in stored
    assert len(stored) == 5
    acl_broker.stop()
    acl_broker.start()
    with login(acl_broker, "admin") as admin:
        assert described(admin) == everything
        answer = admin.request(
            DELETE_ACLS,
            3,
            Message(
                filters=[
                    any_filter(principal_filter="User:alice"),
                    any_filter(resource_type_filter=GROUP),
                ]
            ),
        )
        assert [r.error_code for r in answer.filter_results] == [0, 0]
        assert [len(r.matching_acls) for r in answer.filter_results] == [3, 1]
        assert described(admin) == {(TOPIC, "*", LITERAL, "User:bob", DESCRIBE, DENY)}
    assert len(decode((acl_broker.data_dir / ACL_FILE).read_bytes())) == 1


def test_invalid_acls_are_refused_with_kafkas_messages(acl_broker: BrokerProcess) -> None:
    with login(acl_broker, "admin") as admin:
        assert create(
            admin,
            creation(ANY, "x", "User:a", READ),
            creation(TOPIC, "x", "User:a", READ, pattern=MATCH),
            creation(CLUSTER, "my-cluster", "User:a", ALL),
            creation(TOPIC, "", "User:a", READ),
            creation(TOPIC, "ok", "User:a", 1),
        ) == [
            (ErrorCode.INVALID_REQUEST, "Invalid resourceType ANY"),
            (ErrorCode.INVALID_REQUEST, "Invalid patternType MATCH"),
            (
                ErrorCode.INVALID_REQUEST,
                "The only valid name for the CLUSTER resource is kafka-cluster",
            ),
            # AclApis' own check, before the controller's (Kafka 4.0, and the reference CLI
            # flow tests/reference/test_cli.py::test_acl_with_an_empty_resource_name).
            (ErrorCode.INVALID_REQUEST, "Invalid empty resource name"),
            (ErrorCode.INVALID_REQUEST, "Invalid operation ANY"),
        ]
        # An unparsable principal fails the whole request, as CreateAclsRequest.aclBinding.
        assert (
            create(
                admin, creation(TOPIC, "ok", "User:a", READ), creation(TOPIC, "ok", "alice", READ)
            )
            == [(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * 2
        )
        assert described(admin) == set()


def test_only_cluster_authorized_principals_manage_acls(acl_broker: BrokerProcess) -> None:
    with login(acl_broker, "alice") as alice:
        answer = alice.request(DESCRIBE_ACLS, 3, any_filter())
        assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert create(alice, creation(TOPIC, "t", "User:alice", ALL))[0][0] == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        )
    acl_broker.wait_for_log("Principal = User:alice is Denied operation = Describe")


def test_user_without_write_cannot_produce_and_with_it_can(acl_broker: BrokerProcess) -> None:
    with login(acl_broker, "admin") as admin:
        create_topic(admin, "payments")
        assert create(admin, creation(TOPIC, "payments", "User:alice", READ)) == [(0, None)]
    with login(acl_broker, "alice") as alice:
        answer = produce(alice, "payments", records("denied"))
        assert answer.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        # READ implies DESCRIBE: the topic is visible, not writable.
        meta = alice.request(
            METADATA,
            12,
            Message(topics=[Message(name="payments")], allow_auto_topic_creation=False),
        )
        assert meta.topics[0].error_code == 0
    assert stored_values(acl_broker.data_dir, "payments") == []
    with login(acl_broker, "admin") as admin:
        assert create(admin, creation(TOPIC, "pay", "User:alice", WRITE, pattern=PREFIXED)) == [
            (0, None)
        ]
    with login(acl_broker, "alice") as alice:
        assert produce(alice, "payments", records("allowed")).error_code == 0
    assert stored_values(acl_broker.data_dir, "payments") == [b"allowed-0", b"allowed-1"]


def test_deny_beats_allow_and_hides_the_topic(acl_broker: BrokerProcess) -> None:
    with login(acl_broker, "admin") as admin:
        create_topic(admin, "secret")
        assert create(
            admin,
            creation(TOPIC, "*", "User:alice", ALL),
            creation(TOPIC, "secret", "User:*", ALL, perm=DENY),
        ) == [(0, None), (0, None)]
    with login(acl_broker, "alice") as alice:
        assert produce(alice, "secret", records("x")).error_code == (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
        meta = alice.request(METADATA, 12, Message(topics=None, allow_auto_topic_creation=False))
        assert "secret" not in {t.name for t in meta.topics}
        meta = alice.request(
            METADATA, 12, Message(topics=[Message(name="secret")], allow_auto_topic_creation=False)
        )
        assert meta.topics[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert stored_values(acl_broker.data_dir, "secret") == []


def test_no_acl_means_denied_unless_allow_everyone_and_super_users_may_do_anything(
    tmp_path: Path,
) -> None:
    for everyone, expected in (("false", ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("true", 0)):
        proc = BrokerProcess(
            tmp_path / f"data-{everyone}",
            acl_overrides(**{"allow.everyone.if.no.acl.found": everyone}),
        ).start()
        try:
            with login(proc, "admin") as admin:
                create_topic(admin, "open")
                assert produce(admin, "open", records("super")).error_code == 0
            with login(proc, "alice") as alice:
                assert produce(alice, "open", records("alice")).error_code == expected
                pid = alice.request(
                    INIT_PRODUCER_ID, 4, Message(transactional_id=None, transaction_timeout_ms=1000)
                )
                assert pid.error_code == (
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED if everyone == "false" else 0
                )
        finally:
            proc.stop()


def test_group_read_is_needed_to_find_the_coordinator(acl_broker: BrokerProcess) -> None:
    with login(acl_broker, "alice") as alice:
        answer = alice.request(FIND_COORDINATOR, 4, Message(key_type=0, coordinator_keys=["grp"]))
        assert answer.coordinators[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    with login(acl_broker, "admin") as admin:
        assert create(admin, creation(GROUP, "grp", "User:alice", READ)) == [(0, None)]
    with login(acl_broker, "alice") as alice:
        answer = alice.request(FIND_COORDINATOR, 4, Message(key_type=0, coordinator_keys=["grp"]))
        assert answer.coordinators[0].error_code == 0


def test_admin_clients_manage_acls_and_a_reader_consumes_with_a_group(
    acl_broker: BrokerProcess,
) -> None:
    from confluent_kafka import Consumer, KafkaError, Producer
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KpResourceType

    sasl = {
        "bootstrap.servers": f"127.0.0.1:{acl_broker.ports['SASL_PLAINTEXT']}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
    }
    as_admin = {**sasl, "sasl.username": "admin", "sasl.password": "admin-secret"}
    as_alice = {**sasl, "sasl.username": "alice", "sasl.password": "alice-secret"}
    producer = Producer({**as_admin, "enable.idempotence": True})
    for i in range(3):
        producer.produce("feed", value=b"feed-%d" % i, partition=0)
    assert producer.flush(15) == 0

    admin = AdminClient(as_admin)
    topic_read = AclBinding(
        ResourceType.TOPIC,
        "feed",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    for future in admin.create_acls([topic_read]).values():
        future.result(15)
    kp_admin = KafkaAdminClient(
        bootstrap_servers=as_admin["bootstrap.servers"],
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="admin",
        sasl_plain_password="admin-secret",
    )
    group_read = ACL(
        principal="User:alice",
        host="*",
        operation=ACLOperation.READ,
        permission_type=ACLPermissionType.ALLOW,
        resource_pattern=ResourcePattern(KpResourceType.GROUP, "readers"),
    )
    result = kp_admin.create_acls([group_read])
    assert result["failed"] == [] and len(result["succeeded"]) == 1
    found, error = kp_admin.describe_acls(
        ACLFilter(
            principal="User:alice",
            host="*",
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(
                KpResourceType.ANY, None, ACLResourcePatternType.ANY
            ),
        )
    )
    assert error is None or error.errno == 0, error
    assert {
        (a.resource_pattern.resource_type, a.resource_pattern.resource_name) for a in found
    } == {
        (KpResourceType.TOPIC, "feed"),
        (KpResourceType.GROUP, "readers"),
    }

    consumer = Consumer({**as_alice, "group.id": "readers", "auto.offset.reset": "earliest"})
    consumer.subscribe(["feed"])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    assert got == [b"feed-0", b"feed-1", b"feed-2"]

    # A deny beats the allow: alice's next group member is refused.
    deny = AclBinding(
        ResourceType.GROUP,
        "readers",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.ALL,
        AclPermissionType.DENY,
    )
    for future in admin.create_acls([deny]).values():
        future.result(15)
    errors: list[KafkaError] = []
    consumer = Consumer(
        {
            **as_alice,
            "group.id": "readers",
            "error_cb": errors.append,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["feed"])
    deadline = time.monotonic() + 20
    denied = None
    while denied is None and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is not None:
            denied = message.error()
    consumer.close()
    assert denied is not None and denied.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    deleted = admin.delete_acls(
        [
            AclBindingFilter(
                ResourceType.ANY,
                None,
                ResourcePatternType.ANY,
                "User:alice",
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        ]
    )
    for future in deleted.values():
        assert len(future.result(15)) == 3
    kp_admin.close()


def test_a_transactional_id_needs_write_on_it(acl_broker: BrokerProcess) -> None:
    with login(acl_broker, "admin") as admin:
        create_topic(admin, "txn-topic")
        assert create(admin, creation(TOPIC, "txn-topic", "User:alice", WRITE)) == [(0, None)]
    request = Message(transactional_id="tx-1", transaction_timeout_ms=60000)
    with login(acl_broker, "alice") as alice:
        answer = alice.request(INIT_PRODUCER_ID, 4, request)
        assert answer.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # Idempotent (no transactional id): WRITE on some topic is enough (KIP-679).
        plain = alice.request(
            INIT_PRODUCER_ID, 4, Message(transactional_id=None, transaction_timeout_ms=1)
        )
        assert plain.error_code == 0
    with login(acl_broker, "admin") as admin:
        grant = creation(TRANSACTIONAL_ID, "tx-", "User:alice", WRITE, pattern=PREFIXED)
        assert create(admin, grant) == [(0, None)]
    with login(acl_broker, "alice") as alice:
        assert alice.request(INIT_PRODUCER_ID, 4, request).error_code == 0


def test_acl_apis_v0_close_the_connection_as_kafka_4(acl_broker: BrokerProcess) -> None:
    for api, body in (
        (DESCRIBE_ACLS, any_filter()),
        (CREATE_ACLS, Message(creations=[])),
        (DELETE_ACLS, Message(filters=[])),
    ):
        with login(acl_broker, "admin") as admin:
            admin.send(api, 0, body)
            assert admin.closed_by_peer()


def test_kip848_consumer_group_calls_need_the_group_acls(acl_broker: BrokerProcess) -> None:
    from protocol.messages.consumer_group_describe import CONSUMER_GROUP_DESCRIBE
    from protocol.messages.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT

    join = Message(
        group_id="new-style",
        member_id="",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    with login(acl_broker, "alice") as alice:
        answer = alice.request(CONSUMER_GROUP_HEARTBEAT, 0, join)
        assert answer.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        described = alice.request(
            CONSUMER_GROUP_DESCRIBE,
            0,
            Message(group_ids=["new-style"], include_authorized_operations=False),
        )
        assert described.groups[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    with login(acl_broker, "admin") as admin:
        assert create(admin, creation(GROUP, "new-style", "User:alice", READ)) == [(0, None)]
    with login(acl_broker, "alice") as alice:
        # Kafka 4.0 also needs DESCRIBE on every topic subscribed by name; the group is
        # left untouched.
        refused = alice.request(CONSUMER_GROUP_HEARTBEAT, 0, join)
        assert (refused.error_code, refused.member_id, refused.member_epoch) == (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            None,
            0,
        )
        described = alice.request(
            CONSUMER_GROUP_DESCRIBE,
            0,
            Message(group_ids=["new-style"], include_authorized_operations=False),
        )
        assert described.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    with login(acl_broker, "admin") as admin:
        assert create(admin, creation(TOPIC, "t", "User:alice", DESCRIBE)) == [(0, None)]
    with login(acl_broker, "alice") as alice:
        assert alice.request(CONSUMER_GROUP_HEARTBEAT, 0, join).error_code == 0


def test_transaction_admin_apis_check_kafkas_acls(acl_broker: BrokerProcess) -> None:
    # KafkaApis: DescribeTransactions needs DESCRIBE on each transactional id, ListTransactions
    # lists only those, WriteTxnMarkers needs CLUSTER_ACTION on the cluster.
    with login(acl_broker, "admin") as admin:
        create_topic(admin, "txa-topic")
        opened = admin.request(
            INIT_PRODUCER_ID, 4, Message(transactional_id="txa-1", transaction_timeout_ms=60000)
        )
        assert opened.error_code == 0
    with login(acl_broker, "alice") as alice:
        denied = alice.request(DESCRIBE_TRANSACTIONS, 0, Message(transactional_ids=["txa-1"]))
        listed = alice.request(LIST_TRANSACTIONS, 1, Message(duration_filter=-1))
        marker = Message(
            producer_id=opened.producer_id,
            producer_epoch=opened.producer_epoch,
            transaction_result=False,
            topics=[Message(name="txa-topic", partition_indexes=[0])],
            coordinator_epoch=0,
        )
        written = alice.request(WRITE_TXN_MARKERS, 1, Message(markers=[marker]))
    assert (
        denied.transaction_states[0].error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    )
    assert listed.transaction_states == []
    code = written.markers[0].topics[0].partitions[0].error_code
    assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with login(acl_broker, "admin") as admin:
        grant = creation(TRANSACTIONAL_ID, "txa-", "User:alice", DESCRIBE, pattern=PREFIXED)
        assert create(admin, grant) == [(0, None)]
    with login(acl_broker, "alice") as alice:
        allowed = alice.request(DESCRIBE_TRANSACTIONS, 0, Message(transactional_ids=["txa-1"]))
        listed = alice.request(LIST_TRANSACTIONS, 1, Message(duration_filter=-1))
    assert allowed.transaction_states[0].error_code == 0
    assert [s.transactional_id for s in listed.transaction_states] == ["txa-1"]
    # ALTER on the cluster also lets an admin write markers (kafka-transactions.sh abort).
    with login(acl_broker, "admin") as admin:
        assert create(admin, creation(CLUSTER, "kafka-cluster", "User:alice", 7)) == [(0, None)]
    with login(acl_broker, "alice") as alice:
        written = alice.request(WRITE_TXN_MARKERS, 1, Message(markers=[marker]))
    assert written.markers[0].topics[0].partitions[0].error_code == 0
