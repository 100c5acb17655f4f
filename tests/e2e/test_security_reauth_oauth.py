"""KIP-368 re-authentication (connections.max.reauth.ms) and OAUTHBEARER with unsecured JWS
tokens, on a SASL_PLAINTEXT listener, checked on the SaslAuthenticate answers and on when
the broker closes a connection."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.metadata import METADATA
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import stored_values
from tests.support.raw_client import ConnectionClosed, RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS
from tests.support.sasl import authenticate, handshake, plain_login, sasl_overrides

pytestmark = KAFKA_PYTHON_SCHEMA_READS

REAUTH_MS = 1500


@pytest.fixture
def reauth_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data", sasl_overrides(reauth_ms=REAUTH_MS)).start()
    try:
        yield proc
    finally:
        proc.stop()


def port(broker: BrokerProcess) -> int:
    return broker.ports["SASL_PLAINTEXT"]


def metadata(client: RawClient) -> Message:
    return client.request(METADATA, 12, Message(topics=[], allow_auto_topic_creation=False))


def unsecured_token(claims: dict[str, object]) -> str:
    def b64(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{b64({'alg': 'none'})}.{b64(claims)}."


def oauth_first_message(token: str, authzid: str = "") -> bytes:
    gs2 = f"n,a={authzid}," if authzid else "n,,"
    return f"{gs2}\x01auth=Bearer {token}\x01\x01".encode()


def test_session_lifetime_is_sent_and_an_expired_session_is_closed(
    reauth_broker: BrokerProcess,
) -> None:
    with RawClient(port(reauth_broker)) as client:
        started = time.monotonic()
        answer = plain_login(client, "alice", "alice-secret")
        assert (answer.error_code, answer.session_lifetime_ms) == (0, REAUTH_MS)
        closed_after = None
        deadline = started + 10
        while time.monotonic() < deadline:
            try:
                metadata(client)
            except (ConnectionClosed, ConnectionResetError):
                closed_after = time.monotonic() - started
                break
            time.sleep(0.1)  # paces the probes; the broker's clock decides
        assert closed_after is not None and closed_after >= REAUTH_MS / 1000
    reauth_broker.wait_for_log("SASL session of User:alice expired")


def test_reauthentication_before_expiry_keeps_the_connection(reauth_broker: BrokerProcess) -> None:
    with RawClient(port(reauth_broker)) as client:
        assert plain_login(client, "alice", "alice-secret").error_code == 0
        for _ in range(3):
            assert metadata(client).brokers
            answer = plain_login(client, "alice", "alice-secret")
            assert (answer.error_code, answer.session_lifetime_ms) == (0, REAUTH_MS)
        assert metadata(client).brokers
    reauth_broker.wait_for_log("re-authenticated from .* as User:alice")


def test_reauthentication_cannot_change_principal_or_mechanism(
    reauth_broker: BrokerProcess,
) -> None:
    with RawClient(port(reauth_broker)) as client:
        assert plain_login(client, "alice", "alice-secret").error_code == 0
        answer = plain_login(client, "admin", "admin-secret")
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == (
            "Cannot change principals during re-authentication from User.alice: User.admin"
        )
        assert client.closed_by_peer()
    with RawClient(port(reauth_broker)) as client:
        assert plain_login(client, "alice", "alice-secret").error_code == 0
        assert handshake(client, "SCRAM-SHA-256").error_code == 0
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            authenticate(client, b"n,,n=alice,r=abc")
    reauth_broker.wait_for_log("not supported for re-authentication of mechanism 'PLAIN'")


def test_client_without_reauthentication_gets_illegal_sasl_state_for_a_new_handshake(
    reauth_broker: BrokerProcess,
) -> None:
    with RawClient(port(reauth_broker)) as client:
        assert plain_login(client, "alice", "alice-secret", version=0).error_code == 0
        answer = handshake(client, "PLAIN")
        assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_confluent_kafka_reauthenticates_and_keeps_producing(reauth_broker: BrokerProcess) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port(reauth_broker)}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "enable.idempotence": True,
        }
    )
    producer.produce("reauth-topic", value=b"before", partition=0)
    assert producer.flush(15) == 0
    reauth_broker.wait_for_log("re-authenticated from .* as User:alice", timeout=15)
    producer.produce("reauth-topic", value=b"after", partition=0)
    assert producer.flush(15) == 0
    assert stored_values(reauth_broker.data_dir, "reauth-topic") == [b"before", b"after"]


def test_oauthbearer_unsecured_token_sets_principal_and_lifetime(tmp_path: Path) -> None:
    # exp is in whole seconds: 30 to 31 s ahead, so the token is still valid when the
    # broker reads it on a loaded machine, and expires before connections.max.reauth.ms
    # (a minute here) would end the session.
    reauth_ms = 60_000
    broker = BrokerProcess(tmp_path / "data", sasl_overrides(reauth_ms=reauth_ms)).start()
    try:
        start_ms = time.time() * 1000
        exp = int(start_ms / 1000) + 31
        with RawClient(port(broker)) as client:
            assert handshake(client, "OAUTHBEARER").error_code == 0
            token = unsecured_token({"sub": "oscar", "exp": exp, "iat": exp - 60})
            answer = authenticate(client, oauth_first_message(token))
            assert answer.error_code == 0
            # min(token expiry - now, connections.max.reauth.ms): here the token's expiry.
            assert 0 < answer.session_lifetime_ms <= exp * 1000 - start_ms < reauth_ms
            assert metadata(client).brokers
        broker.wait_for_log(r"authenticated from .* as User:oscar \(OAUTHBEARER\)")
    finally:
        broker.stop()


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": "oscar", "exp": 1},  # expired
        {"sub": "oscar"},  # no exp
        {"exp": 4_000_000_000},  # no sub
    ],
)
def test_oauthbearer_bad_token_gets_the_json_error_challenge_then_fails(
    reauth_broker: BrokerProcess, claims: dict[str, object]
) -> None:
    with RawClient(port(reauth_broker)) as client:
        assert handshake(client, "OAUTHBEARER").error_code == 0
        answer = authenticate(client, oauth_first_message(unsecured_token(claims)))
        assert answer.error_code == 0
        assert bytes(answer.auth_bytes) == b'{"status":"invalid_token"}'
        answer = authenticate(client, b"\x01")
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == '{"status":"invalid_token"}'
        assert client.closed_by_peer()


def test_confluent_kafka_oauthbearer_unsecured_jwt_produces(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    broker = BrokerProcess(tmp_path / "data", sasl_overrides()).start()
    try:
        producer = Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{port(broker)}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": "principal=oscar",
                "enable.idempotence": True,
            }
        )
        producer.produce("oauth-topic", value=b"token", partition=0)
        assert producer.flush(15) == 0
        assert stored_values(broker.data_dir, "oauth-topic") == [b"token"]
        broker.wait_for_log(r"as User:oscar \(OAUTHBEARER\)")
    finally:
        broker.stop()
