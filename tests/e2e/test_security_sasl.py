"""SASL_PLAINTEXT listeners: SaslHandshake/SaslAuthenticate as Kafka serves them, PLAIN from
the JAAS config, SCRAM against the credentials AlterUserScramCredentials stores, and every
way a client can get it wrong, checked on the wire bytes and on what the broker stored."""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.alter_user_scram_credentials import ALTER_USER_SCRAM_CREDENTIALS
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.messages.metadata import METADATA
from protocol.messages.sasl_authenticate import SASL_AUTHENTICATE
from protocol.messages.sasl_handshake import SASL_HANDSHAKE
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import stored_values
from tests.support.raw_client import ConnectionClosed, RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS
from tests.support.sasl import (
    authenticate,
    handshake,
    plain_login,
    salted_password,
    sasl_overrides,
    scram_login,
)

pytestmark = KAFKA_PYTHON_SCHEMA_READS

MECHANISM_TYPE = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
ENABLED = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]


@pytest.fixture
def sasl_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(tmp_path / "data", sasl_overrides()) as proc:
        yield proc


def sasl_port(broker: BrokerProcess) -> int:
    return broker.ports["SASL_PLAINTEXT"]


def add_scram_user(broker: BrokerProcess, mechanism: str, user: str, password: str) -> None:
    salt = os.urandom(16)
    upsertion = Message(
        name=user,
        mechanism=MECHANISM_TYPE[mechanism],
        iterations=4096,
        salt=salt,
        salted_password=salted_password(mechanism, password, salt, 4096),
    )
    with RawClient(broker.ports["PLAINTEXT"]) as admin:
        answer = admin.request(
            ALTER_USER_SCRAM_CREDENTIALS, 0, Message(deletions=[], upsertions=[upsertion])
        )
    assert [r.error_code for r in answer.results] == [0]


def delete_scram_user(broker: BrokerProcess, mechanism: str, user: str) -> None:
    deletion = Message(name=user, mechanism=MECHANISM_TYPE[mechanism])
    with RawClient(broker.ports["PLAINTEXT"]) as admin:
        answer = admin.request(
            ALTER_USER_SCRAM_CREDENTIALS, 0, Message(deletions=[deletion], upsertions=[])
        )
    assert [r.error_code for r in answer.results] == [0]


def metadata_ok(client: RawClient) -> bool:
    meta = client.request(METADATA, 12, Message(topics=[], allow_auto_topic_creation=False))
    return len(meta.brokers) == 1


def test_plain_login_with_jaas_user_then_requests_are_served(sasl_broker: BrokerProcess) -> None:
    with RawClient(sasl_port(sasl_broker)) as client:
        versions = client.request(API_VERSIONS, 0, Message())
        assert {17, 36} <= {k.api_key for k in versions.api_keys}
        shake = handshake(client, "PLAIN")
        assert (shake.error_code, list(shake.mechanisms)) == (0, ENABLED)
        answer = authenticate(client, b"\0alice\0alice-secret")
        assert (answer.error_code, answer.error_message, bytes(answer.auth_bytes)) == (0, None, b"")
        assert answer.session_lifetime_ms == 0
        assert metadata_ok(client)
    sasl_broker.wait_for_log(r"authenticated from .* as User:alice \(PLAIN\)")


def test_wrong_password_fails_with_kafkas_message_then_closes(sasl_broker: BrokerProcess) -> None:
    with RawClient(sasl_port(sasl_broker)) as client:
        answer = plain_login(client, "alice", "wrong")
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == "Authentication failed: Invalid username or password"
        assert client.closed_by_peer()
    with RawClient(sasl_port(sasl_broker)) as client:
        answer = plain_login(client, "nobody", "x")
        assert answer.error_message == "Authentication failed: Invalid username or password"
        assert client.closed_by_peer()
    sasl_broker.wait_for_log("failed authentication with .*Invalid username or password")


def test_failed_logins_are_logged_once_per_user_and_address_a_minute(
    sasl_broker: BrokerProcess,
) -> None:
    # A client retrying with a wrong password: dozens of connections a second.
    for _ in range(30):
        with RawClient(sasl_port(sasl_broker)) as client:
            plain_login(client, "alice", "wrong")
            assert client.closed_by_peer()
    with RawClient(sasl_port(sasl_broker)) as client:
        plain_login(client, "bob", "wrong")
        assert client.closed_by_peer()
    sasl_broker.wait_for_log(r"failed authentication with .* as 'bob' \(Authentication failed")
    lines = [
        line
        for line in sasl_broker.lines
        if " INFO " in line and "failed authentication" in line and "'alice'" in line
    ]
    assert len(lines) == 1, lines
    assert "on listener SASL_PLAINTEXT as 'alice' (Authentication failed: Invalid" in lines[0]


def test_request_before_authentication_closes_without_an_answer(
    sasl_broker: BrokerProcess,
) -> None:
    with RawClient(sasl_port(sasl_broker)) as client:
        client.send(METADATA, 12, Message(topics=[], allow_auto_topic_creation=False))
        assert client.closed_by_peer()
        assert client.sock.recv(1) == b""
    with RawClient(sasl_port(sasl_broker)) as client:
        assert handshake(client, "PLAIN").error_code == 0
        # Between handshake and authentication only SaslAuthenticate is expected.
        client.send(METADATA, 12, Message(topics=[], allow_auto_topic_creation=False))
        assert client.closed_by_peer()
    sasl_broker.wait_for_log("Unexpected Kafka request of type Metadata during SASL handshake")


def test_unsupported_mechanism_answers_the_enabled_list_then_closes(
    sasl_broker: BrokerProcess,
) -> None:
    with RawClient(sasl_port(sasl_broker)) as client:
        answer = handshake(client, "GSSAPI")
        assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert list(answer.mechanisms) == ENABLED
        assert client.closed_by_peer()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_user_added_over_the_wire_logs_in_at_once_and_after_restart_not_once_deleted(
    sasl_broker: BrokerProcess, mechanism: str
) -> None:
    add_scram_user(sasl_broker, mechanism, "carol", "carol-secret")
    with RawClient(sasl_port(sasl_broker)) as client:
        assert scram_login(client, mechanism, "carol", "carol-secret").error_code == 0
        assert metadata_ok(client)
    sasl_broker.stop()
    sasl_broker.start()
    with RawClient(sasl_port(sasl_broker)) as client:
        assert scram_login(client, mechanism, "carol", "carol-secret").error_code == 0
    with RawClient(sasl_port(sasl_broker)) as client:
        answer = scram_login(client, mechanism, "carol", "not-her-password")
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == (
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {mechanism}"
        )
        assert client.closed_by_peer()
    delete_scram_user(sasl_broker, mechanism, "carol")
    with RawClient(sasl_port(sasl_broker)) as client:
        answer = scram_login(client, mechanism, "carol", "carol-secret")
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert client.closed_by_peer()


def test_sasl_handshake_v0_then_bare_tokens(sasl_broker: BrokerProcess) -> None:
    with RawClient(sasl_port(sasl_broker)) as client:
        assert handshake(client, "PLAIN", version=0).error_code == 0
        token = b"\0admin\0admin-secret"
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.read_frame() == b""  # PlainSaslServer's empty answer, size-prefixed
        assert metadata_ok(client)
    with RawClient(sasl_port(sasl_broker)) as client:
        assert handshake(client, "PLAIN", version=0).error_code == 0
        token = b"\0admin\0wrong"
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.closed_by_peer()


def test_plaintext_listener_answers_sasl_requests_with_illegal_sasl_state(
    sasl_broker: BrokerProcess,
) -> None:
    with RawClient(sasl_broker.ports["PLAINTEXT"]) as client:
        answer = client.request(SASL_HANDSHAKE, 1, Message(mechanism="PLAIN"))
        assert (answer.error_code, list(answer.mechanisms)) == (ErrorCode.ILLEGAL_SASL_STATE, [])
        answer = client.request(SASL_AUTHENTICATE, 2, Message(auth_bytes=b"\0a\0b"))
        assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert answer.error_message == (
            "SaslAuthenticate request received after successful authentication"
        )
        assert metadata_ok(client)


def test_kafka_python_produces_idempotently_and_consumes_with_each_mechanism(
    sasl_broker: BrokerProcess,
) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    add_scram_user(sasl_broker, "SCRAM-SHA-256", "dave", "dave-secret")
    add_scram_user(sasl_broker, "SCRAM-SHA-512", "dave", "dave-secret")
    bootstrap = f"127.0.0.1:{sasl_port(sasl_broker)}"
    logins = [
        ("PLAIN", "alice", "alice-secret"),
        ("SCRAM-SHA-256", "dave", "dave-secret"),
        ("SCRAM-SHA-512", "dave", "dave-secret"),
    ]
    expected: list[bytes | None] = []
    for mechanism, user, password in logins:
        auth = {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": user,
            "sasl_plain_password": password,
        }
        producer = KafkaProducer(
            bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", **auth
        )
        for i in range(5):
            value = f"{mechanism}-{i}".encode()
            producer.send("sasl-topic", value=value, partition=0)
            expected.append(value)
        producer.flush(15)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, **auth)
        tp = TopicPartition("sasl-topic", 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got: list[bytes | None] = []
        deadline = time.monotonic() + 15
        while len(got) < len(expected) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [r.value for r in records]
        consumer.close()
        assert got == expected
    assert stored_values(sasl_broker.data_dir, "sasl-topic") == expected


def test_confluent_kafka_wrong_password_is_an_authentication_error(
    sasl_broker: BrokerProcess,
) -> None:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient

    errors: list[KafkaError] = []
    admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{sasl_port(sasl_broker)}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "nobody",
            "sasl.password": "nothing",
            "error_cb": errors.append,
        }
    )
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        admin.poll(0.2)
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION


def test_garbage_oversized_and_truncated_sasl_frames_never_stop_the_broker(
    sasl_broker: BrokerProcess,
) -> None:
    port = sasl_port(sasl_broker)
    cases = [
        os.urandom(64),
        struct.pack(">i", 600_000) + b"x" * 1000,  # above sasl.server.max.receive.size
        struct.pack(">i", 40) + b"\x00\x11\x00\x01",  # a truncated SaslHandshake
    ]
    for data in cases:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(data)
            if data.startswith(struct.pack(">i", 40)):
                sock.shutdown(socket.SHUT_WR)
            sock.settimeout(10)
            try:
                while sock.recv(4096):
                    pass
            except ConnectionResetError:
                pass
    with RawClient(port) as client:
        # An oversized SaslAuthenticate token after the handshake.
        assert handshake(client, "PLAIN").error_code == 0
        with pytest.raises((ConnectionClosed, ConnectionResetError, BrokenPipeError)):
            authenticate(client, b"\0admin\0" + b"p" * 600_000)
    sasl_broker.wait_for_log("frame length 600030 exceeds the limit of 524288 bytes")
    with RawClient(port) as client:
        assert plain_login(client, "admin", "admin-secret").error_code == 0
    with RawClient(sasl_broker.ports["PLAINTEXT"]) as client:
        assert metadata_ok(client)


def test_sasl_ssl_listener_authenticates_inside_tls_with_each_mechanism(tmp_path: Path) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from tests.support.certs import make_pki

    pki = make_pki(tmp_path / "pki")
    overrides = sasl_overrides("SASL_SSL")
    overrides.update(
        {
            "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
            "listener.name.sasl_ssl.ssl.keystore.location": str(pki.broker),
        }
    )
    broker = BrokerProcess(tmp_path / "data", overrides).start()
    try:
        add_scram_user(broker, "SCRAM-SHA-512", "erin", "erin-secret")
        common = {
            "bootstrap.servers": f"127.0.0.1:{broker.ports['SASL_SSL']}",
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(pki.ca),
        }
        logins = {
            "PLAIN": {"sasl.username": "alice", "sasl.password": "alice-secret"},
            "SCRAM-SHA-512": {"sasl.username": "erin", "sasl.password": "erin-secret"},
        }
        expected: list[bytes | None] = []
        for mechanism, login in logins.items():
            auth = {**common, **login, "sasl.mechanism": mechanism}
            producer = Producer({**auth, "enable.idempotence": True, "acks": "all"})
            for i in range(5):
                value = f"{mechanism}-{i}".encode()
                producer.produce("sasl-ssl-topic", value=value, partition=0)
                expected.append(value)
            assert producer.flush(15) == 0
            consumer = Consumer({**auth, "group.id": f"g-{mechanism}", "enable.auto.commit": False})
            consumer.assign([TopicPartition("sasl-ssl-topic", 0, 0)])
            got: list[bytes | None] = []
            deadline = time.monotonic() + 15
            while len(got) < len(expected) and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    got.append(message.value())
            consumer.close()
            assert got == expected
        assert stored_values(broker.data_dir, "sasl-ssl-topic") == expected
        with RawClient(broker.ports["SASL_SSL"]) as plain:
            plain.send(API_VERSIONS, 0, Message())
            assert plain.closed_by_peer(10)
    finally:
        broker.stop()


def test_scram_users_bootstrapped_from_config_log_in_once_formatted_like_kafka_storage(
    tmp_path: Path,
) -> None:
    overrides = sasl_overrides()
    overrides["minikafka.scram.bootstrap.users"] = (
        "SCRAM-SHA-256=[name=boot,password=boot-secret];"
        "SCRAM-SHA-512=[name=boot,password=boot-secret,iterations=8192]"
    )
    broker = BrokerProcess(tmp_path / "data", overrides).start()
    try:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            with RawClient(sasl_port(broker)) as client:
                assert scram_login(client, mechanism, "boot", "boot-secret").error_code == 0
        stored = (broker.data_dir / "scram-credentials.dat").read_bytes()
        assert b"boot-secret" not in stored
        with RawClient(broker.ports["PLAINTEXT"]) as admin:
            described = admin.request(
                DESCRIBE_CONFIGS,
                4,
                Message(
                    resources=[
                        Message(
                            resource_type=4,
                            resource_name="1",
                            configuration_keys=["minikafka.scram.bootstrap.users"],
                        )
                    ],
                    include_synonyms=False,
                    include_documentation=False,
                ),
            )
        (entry,) = described.results[0].configs
        assert (entry.value, entry.is_sensitive) == (None, True)
        # Like `kafka-storage format --add-scram`: only a new data directory gets them, so a
        # user deleted over the wire stays deleted across restarts.
        delete_scram_user(broker, "SCRAM-SHA-256", "boot")
        broker.stop()
        broker.start()
        with RawClient(sasl_port(broker)) as client:
            answer = scram_login(client, "SCRAM-SHA-256", "boot", "boot-secret")
            assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        with RawClient(sasl_port(broker)) as client:
            assert scram_login(client, "SCRAM-SHA-512", "boot", "boot-secret").error_code == 0
    finally:
        broker.stop()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_aiokafka_produces_idempotently_and_consumes_over_sasl_ssl(
    tmp_path: Path, mechanism: str
) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    from tests.support.certs import make_pki

    pki = make_pki(tmp_path / "pki")
    overrides = sasl_overrides("SASL_SSL")
    overrides.update(
        {
            "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
            "listener.name.sasl_ssl.ssl.keystore.location": str(pki.broker),
            "minikafka.scram.bootstrap.users": "SCRAM-SHA-256=[name=alice,password=alice-secret]",
        }
    )
    broker = BrokerProcess(tmp_path / "data", overrides).start()
    topic = f"aio-{mechanism.lower()}"
    expected = [f"{mechanism}-{i}".encode() for i in range(10)]
    auth = {
        "bootstrap_servers": f"127.0.0.1:{broker.ports['SASL_SSL']}",
        "security_protocol": "SASL_SSL",
        "ssl_context": pki.client_context(),
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }

    async def run() -> list[bytes | None]:
        producer = AIOKafkaProducer(enable_idempotence=True, **auth)
        await producer.start()
        try:
            for value in expected:
                await producer.send_and_wait(topic, value, partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**auth)
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got: list[bytes | None] = []
            while len(got) < len(expected):
                batches = await consumer.getmany(timeout_ms=15000)
                assert batches, "no records within 15 s"
                got += [r.value for records in batches.values() for r in records]
            return got
        finally:
            await consumer.stop()

    try:
        assert asyncio.run(run()) == expected
        assert stored_values(broker.data_dir, topic) == expected
    finally:
        broker.stop()
