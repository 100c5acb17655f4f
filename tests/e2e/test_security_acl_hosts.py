"""ACL hosts name the client's address as Java spells it (InetAddress.getHostAddress()):
a host DENY written for Kafka, ``0:0:0:0:0:0:0:1``, denies a client on IPv6 loopback, and
the groups' client host reads ``/0:0:0:0:0:0:0:1``. A broker with a SASL listener on
``[::1]``."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.create_acls import CREATE_ACLS
from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.join_group import JOIN_GROUP
from protocol.schema import Message
from tests.e2e.test_security_acls import (
    ALL,
    ALLOW,
    DENY,
    GROUP,
    LITERAL,
    TOPIC,
    WRITE,
    records,
)
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_topic, produce, stored_values
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS
from tests.support.sasl import acl_overrides, plain_login

pytestmark = KAFKA_PYTHON_SCHEMA_READS

JAVA_LOOPBACK = "0:0:0:0:0:0:0:1"


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.fixture
def ipv6_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    if not _has_ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback address ::1 to listen on")
    overrides = acl_overrides(listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://[::1]:0")
    with running(tmp_path / "data", overrides) as proc:
        yield proc


def login(broker: BrokerProcess, user: str) -> RawClient:
    client = RawClient(broker.ports["SASL_PLAINTEXT"], host="::1", client_id=user)
    assert plain_login(client, user, f"{user}-secret").error_code == 0
    return client


def acl(rtype: int, name: str, op: int, perm: int, host: str) -> Message:
    return Message(
        resource_type=rtype,
        resource_name=name,
        resource_pattern_type=LITERAL,
        principal="User:alice",
        host=host,
        operation=op,
        permission_type=perm,
    )


def join(client: RawClient, group: str, member_id: str) -> Message:
    return client.request(
        JOIN_GROUP,
        5,
        Message(
            group_id=group,
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            member_id=member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocols=[Message(name="range", metadata=b"")],
        ),
    )


def test_a_host_deny_in_javas_ipv6_spelling_denies_the_loopback_client(
    ipv6_broker: BrokerProcess,
) -> None:
    with login(ipv6_broker, "admin") as admin:
        create_topic(admin, "v6-topic")
        created = admin.request(
            CREATE_ACLS,
            3,
            Message(
                creations=[
                    acl(TOPIC, "v6-topic", ALL, ALLOW, "*"),
                    acl(TOPIC, "v6-topic", WRITE, DENY, JAVA_LOOPBACK),
                    acl(GROUP, "v6-group", ALL, ALLOW, "*"),
                ]
            ),
        )
        assert [r.error_code for r in created.results] == [0, 0, 0]
    with login(ipv6_broker, "alice") as alice:
        denied = produce(alice, "v6-topic", records("from-v6"))
        assert denied.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        joined = join(alice, "v6-group", "")
        assert joined.error_code == ErrorCode.MEMBER_ID_REQUIRED
        joined = join(alice, "v6-group", joined.member_id)
        assert joined.error_code == 0
        described = alice.request(
            DESCRIBE_GROUPS, 5, Message(groups=["v6-group"], include_authorized_operations=False)
        )
        assert [m.client_host for m in described.groups[0].members] == [f"/{JAVA_LOOPBACK}"]
    ipv6_broker.wait_for_log(f"is Denied operation = Write from host = {JAVA_LOOPBACK}")
    assert stored_values(ipv6_broker.data_dir, "v6-topic") == []
