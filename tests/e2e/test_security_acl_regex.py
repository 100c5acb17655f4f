"""A consumer group's regex, resolved with ACLs, as Kafka 4.0's GroupMetadataManager
(filterTopicDescribeAuthorizedTopics): the topics the member whose heartbeat started the
resolution may not DESCRIBE are left out of the group's resolved regex, so a member
subscribing ``.*`` is assigned only topics it may see. A broker process with SASL users and
ACLs, raw ConsumerGroupHeartbeats; the resolution checked in the group's stored record."""

from __future__ import annotations

from tests.e2e.test_consumer_groups_raw import assigned, heartbeat_until, join
from tests.e2e.test_security_acls import DESCRIBE, GROUP, READ, TOPIC, create, creation, login
from tests.support.broker_process import BrokerProcess
from tests.support.produce import create_partitioned_topic
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS
from tests.support.stored_groups import stored_groups

pytestmark = KAFKA_PYTHON_SCHEMA_READS


def test_a_regex_resolves_only_to_topics_the_member_may_describe(
    acl_broker: BrokerProcess,
) -> None:
    with login(acl_broker, "admin") as admin:
        visible = create_partitioned_topic(admin, "rx-visible", 2)
        other = create_partitioned_topic(admin, "other", 1)
        create_partitioned_topic(admin, "rx-hidden", 1)
        assert (
            create(
                admin,
                creation(GROUP, "rx-group", "User:alice", READ),
                creation(TOPIC, "rx-visible", "User:alice", DESCRIBE),
                creation(TOPIC, "other", "User:alice", DESCRIBE),
            )
            == [(0, None)] * 3
        )
    with login(acl_broker, "alice") as alice:
        answer = join(alice, "rx-group", "m", [], regex=".*")
        assert answer.error_code == 0, answer
        # The regex is resolved off the request path: the topics come a heartbeat or
        # more later, all in one assignment (one resolution, one member).
        _, owned = heartbeat_until(
            alice, "rx-group", "m", answer.member_epoch, assigned(answer), bool, 15
        )
        assert owned == {visible: {0, 1}, other: {0}}
    acl_broker.stop()
    stored = stored_groups(acl_broker.data_dir).consumer_groups()["rx-group"]
    assert stored.resolved_regexes == ((".*", ("other", "rx-visible")),)
