"""Malformed SASL tokens end the exchange, never the connection's handler.

Kafka parses an unsecured OAUTHBEARER token's parts with Jackson (OAuthBearerUnsecuredJws
toMap): NaN or Infinity, numbers over 1000 digits and nesting over 1000 levels are
"malformed JSON" (Jackson's defaults and StreamReadConstraints), a non-numeric ``exp`` is
"not of type Number"; each makes the token illegal, answered with the JSON error challenge
and then SASL_AUTHENTICATION_FAILED. A token over sasl.server.max.receive.size closes the
connection. Each case is checked on the answer (or the close), well within a deadline far
below connections.max.idle.ms, on the broker's log line, and on a probe connection that
still authenticates and is served.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import pytest

from protocol.errors import ErrorCode
from protocol.messages.metadata import METADATA
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess, running
from tests.support.raw_client import ConnectionClosed, RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS
from tests.support.sasl import authenticate, handshake, plain_login, sasl_overrides

pytestmark = [pytest.mark.e2e, *KAFKA_PYTHON_SCHEMA_READS]

# Answers (or the close) must come this fast; the broker's idle timeout is far longer.
DEADLINE_S = 5.0
IDLE_MS = 120_000
INVALID_TOKEN = b'{"status":"invalid_token"}'
LATER = 4_000_000_000
DEEP = 100_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("malformed-tokens") / "data"
    overrides = {**sasl_overrides(), "connections.max.idle.ms": str(IDLE_MS)}
    with running(data, overrides) as proc:
        yield proc


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def _token(claims_json: str, header_json: str = '{"alg":"none"}') -> bytes:
    token = f"{_b64(header_json)}.{_b64(claims_json)}."
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def _port(broker: BrokerProcess) -> int:
    return broker.ports["SASL_PLAINTEXT"]


def _probe_is_served(broker: BrokerProcess) -> None:
    with RawClient(_port(broker), client_id="probe") as probe:
        probe.sock.settimeout(DEADLINE_S)
        assert plain_login(probe, "alice", "alice-secret").error_code == 0
        answer = probe.request(METADATA, 12, Message(topics=[], allow_auto_topic_creation=False))
        assert answer.brokers


ILLEGAL_CLAIMS = {
    "exp NaN": '{"sub":"oscar","exp":NaN}',
    "exp Infinity": '{"sub":"oscar","exp":Infinity}',
    "exp -Infinity": '{"sub":"oscar","exp":-Infinity}',
    "exp a string": '{"sub":"oscar","exp":"tomorrow"}',
    "exp 1200 digits": '{"sub":"oscar","exp":1' + "0" * 1200 + "}",
    "nested 100000 deep": f'{{"sub":"oscar","exp":{LATER},"x":{"[" * DEEP}{"]" * DEEP}}}',
    # 50,000 objects: 100,000 would be over sasl.server.max.receive.size once encoded.
    "nested objects 50000 deep": (
        f'{{"sub":"oscar","exp":{LATER},"x":' + '{"a":' * 50_000 + "1" + "}" * 50_000 + "}"
    ),
    "not JSON": "this is not JSON",
    "a JSON array": "[1,2,3]",
}


@pytest.mark.parametrize("claims", list(ILLEGAL_CLAIMS.values()), ids=list(ILLEGAL_CLAIMS))
def test_an_illegal_oauthbearer_token_fails_authentication(
    broker: BrokerProcess, claims: str
) -> None:
    started = time.monotonic()
    with RawClient(_port(broker), client_id="malformed") as client:
        client.sock.settimeout(DEADLINE_S)
        assert handshake(client, "OAUTHBEARER").error_code == 0
        answer = authenticate(client, _token(claims))
        assert answer.error_code == 0
        assert bytes(answer.auth_bytes) == INVALID_TOKEN
        answer = authenticate(client, b"\x01")
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == INVALID_TOKEN.decode()
        assert client.closed_by_peer(DEADLINE_S)
    assert time.monotonic() - started < DEADLINE_S
    _probe_is_served(broker)


def test_an_illegal_header_fails_authentication(broker: BrokerProcess) -> None:
    with RawClient(_port(broker), client_id="malformed") as client:
        client.sock.settimeout(DEADLINE_S)
        assert handshake(client, "OAUTHBEARER").error_code == 0
        header = f'{{"alg":"none","x":{"[" * DEEP}{"]" * DEEP}}}'
        answer = authenticate(client, _token(f'{{"sub":"oscar","exp":{LATER}}}', header))
        assert bytes(answer.auth_bytes) == INVALID_TOKEN
    _probe_is_served(broker)


def test_an_exp_beyond_any_date_is_a_token_that_never_expires(broker: BrokerProcess) -> None:
    # Jackson reads 1e999 as Infinity and Kafka rounds its milliseconds to Long.MAX_VALUE:
    # a valid token. No crash converting it.
    with RawClient(_port(broker), client_id="forever") as client:
        client.sock.settimeout(DEADLINE_S)
        assert handshake(client, "OAUTHBEARER").error_code == 0
        answer = authenticate(client, _token('{"sub":"oscar","exp":1e999}'))
        assert answer.error_code == 0 and bytes(answer.auth_bytes) == b""
        answer = client.request(METADATA, 12, Message(topics=[], allow_auto_topic_creation=False))
        assert answer.brokers
    broker.wait_for_log(r"authenticated from .* as User:oscar \(OAUTHBEARER\)", DEADLINE_S)


def test_a_token_over_the_receive_limit_closes_the_connection(broker: BrokerProcess) -> None:
    # sasl.server.max.receive.size (512 KiB by default) bounds every frame before
    # authentication: Kafka closes the connection without an answer.
    huge = f'{{"sub":"oscar","exp":{LATER},"x":"{"a" * 600_000}"}}'
    with RawClient(_port(broker), client_id="huge") as client:
        client.sock.settimeout(DEADLINE_S)
        assert handshake(client, "OAUTHBEARER").error_code == 0
        client.send(*_authenticate_args(_token(huge)))
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            client.receive()
    broker.wait_for_log(r"exceeds the limit of 524288 bytes", DEADLINE_S)
    _probe_is_served(broker)


def _authenticate_args(token: bytes) -> tuple[object, int, Message]:
    from protocol.messages.sasl_authenticate import SASL_AUTHENTICATE

    return SASL_AUTHENTICATE, 2, Message(auth_bytes=token)


def test_failures_are_logged(broker: BrokerProcess) -> None:
    with RawClient(_port(broker), client_id="malformed") as client:
        client.sock.settimeout(DEADLINE_S)
        assert handshake(client, "OAUTHBEARER").error_code == 0
        assert bytes(authenticate(client, _token('{"exp":NaN}')).auth_bytes) == INVALID_TOKEN
        authenticate(client, b"\x01")
    broker.wait_for_log(r"failed authentication with .*invalid_token", DEADLINE_S)
