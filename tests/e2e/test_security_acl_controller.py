"""The checks of Kafka 4.0's ControllerApis for CreateTopics and DeleteTopics (forwarded there
by KafkaApis): CreateTopics refuses __cluster_metadata before any ACL, keeps unauthorized
topics out of the controller's partition limit and answers a new topic's configs only with
DESCRIBE_CONFIGS on it; DeleteTopics accepts DELETE on the cluster and names a topic given by
id only to a principal that may DESCRIBE it. Raw requests against a broker process with SASL
users and ACLs; outcomes checked in the data directory."""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.delete_topics import DELETE_TOPICS
from protocol.schema import Message
from tests.e2e.test_security_acls import (
    CLUSTER,
    CREATE,
    DESCRIBE,
    LITERAL,
    PREFIXED,
    TOPIC,
    create,
    creation,
    login,
)
from tests.support.broker_process import BrokerProcess
from tests.support.produce import create_partitioned_topic
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS

DELETE, DESCRIBE_CONFIGS = 6, 10


def _creation(*topics: tuple[str, int]) -> Message:
    return Message(
        topics=[
            Message(
                name=name, num_partitions=count, replication_factor=1, assignments=[], configs=[]
            )
            for name, count in topics
        ],
        timeout_ms=10_000,
        validate_only=False,
    )


def test_create_topics_checks_as_kafkas_controller(acl_broker: BrokerProcess) -> None:
    with login(acl_broker, "admin") as admin:
        assert (
            create(
                admin,
                creation(TOPIC, "ct-", "User:alice", CREATE, pattern=PREFIXED),
                creation(TOPIC, "ct-seen", "User:alice", DESCRIBE_CONFIGS, pattern=LITERAL),
            )
            == [(0, None)] * 2
        )
    with login(acl_broker, "alice") as alice:
        answer = alice.request(
            CREATE_TOPICS,
            7,
            _creation(("ct-blind", 2), ("__cluster_metadata", 1), ("elsewhere", 20_000)),
        )
        by_name = {t.name: t for t in answer.topics}
        # Created, but without DESCRIBE_CONFIGS nothing about its configs is told.
        blind = by_name["ct-blind"]
        assert (
            blind.error_code,
            blind.topic_config_error_code,
            blind.num_partitions,
            blind.replication_factor,
            list(blind.configs),
        ) == (0, ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, [])
        # Refused before any ACL is looked at.
        metadata = by_name["__cluster_metadata"]
        assert (metadata.error_code, metadata.error_message) == (
            ErrorCode.INVALID_REQUEST,
            "Creation of internal topic __cluster_metadata is prohibited.",
        )
        # Not authorized: never counted against the controller's 10,000 partitions.
        elsewhere = by_name["elsewhere"]
        assert (elsewhere.error_code, elsewhere.error_message) == (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "Authorization failed.",
        )
        [seen] = alice.request(CREATE_TOPICS, 7, _creation(("ct-seen", 1))).topics
        assert (seen.error_code, seen.topic_config_error_code, seen.num_partitions) == (0, 0, 1)
        assert {c.name for c in seen.configs} >= {"cleanup.policy", "retention.ms"}
    data = acl_broker.data_dir
    assert sorted(p.name for p in data.glob("ct-blind-*")) == ["ct-blind-0", "ct-blind-1"]
    assert (data / "ct-seen-0").is_dir()
    assert not list(data.glob("__cluster_metadata*")) and not list(data.glob("elsewhere-*"))


def _delete_by_id(client: RawClient, *ids: bytes) -> dict[bytes, tuple[str | None, int]]:
    answer = client.request(
        DELETE_TOPICS,
        6,
        Message(topics=[Message(name=None, topic_id=i) for i in ids], timeout_ms=10_000),
    )
    return {bytes(r.topic_id): (r.name, r.error_code) for r in answer.responses}


def test_delete_topics_checks_as_kafkas_controller(acl_broker: BrokerProcess) -> None:
    with login(acl_broker, "admin") as admin:
        hidden = create_partitioned_topic(admin, "dt-hidden", 1)
        seen = create_partitioned_topic(admin, "dt-seen", 1)
        assert create(admin, creation(TOPIC, "dt-seen", "User:alice", DESCRIBE)) == [(0, None)]
    denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    with login(acl_broker, "alice") as alice:
        # By id: the name only for a topic alice may DESCRIBE.
        assert _delete_by_id(alice, hidden, seen) == {
            hidden: (None, denied),
            seen: ("dt-seen", denied),
        }
    assert (acl_broker.data_dir / "dt-hidden-0").is_dir()
    assert (acl_broker.data_dir / "dt-seen-0").is_dir()
    with login(acl_broker, "admin") as admin:
        assert create(admin, creation(CLUSTER, "kafka-cluster", "User:alice", DELETE)) == [
            (0, None)
        ]
    with login(acl_broker, "alice") as alice:
        # DELETE on the cluster: every topic, by id or by name, with no topic ACL.
        assert _delete_by_id(alice, hidden) == {hidden: ("dt-hidden", 0)}
        answer = alice.request(
            DELETE_TOPICS,
            6,
            Message(topics=[Message(name="dt-seen", topic_id=bytes(16))], timeout_ms=10_000),
        )
        assert [(r.name, r.error_code) for r in answer.responses] == [("dt-seen", 0)]
    assert not (acl_broker.data_dir / "dt-hidden-0").exists()
    assert not (acl_broker.data_dir / "dt-seen-0").exists()
