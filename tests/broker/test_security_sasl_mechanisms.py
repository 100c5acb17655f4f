"""The SASL mechanisms' server halves on their own: RFC 7677's SCRAM-SHA-256 exchange, Kafka's
PLAIN messages, OAUTHBEARER's JSON error challenge, and the JAAS parser."""

from __future__ import annotations

import base64
import re

import pytest

from broker.security.jaas import JaasError, parse
from broker.security.sasl_mechanism import SaslAuthenticationError, SaslError
from broker.security.sasl_oauthbearer import OAuthBearerServer
from broker.security.sasl_plain import PlainServer
from broker.security.sasl_scram import ScramServer, credential
from storage.scram_credential_store import ScramCredential

RFC7677_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")


def rfc7677_server() -> ScramServer:
    cred = credential("SCRAM-SHA-256", "pencil", RFC7677_SALT, 4096)

    def lookup(user: str, mechanism: int) -> ScramCredential | None:
        return cred if (user, mechanism) == ("user", 1) else None

    return ScramServer("SCRAM-SHA-256", lookup, lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")


def test_scram_sha_256_exchange_of_rfc_7677() -> None:
    server = rfc7677_server()
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.authorization_id == "user"


def test_scram_wrong_proof_unknown_user_and_other_authzid_fail_as_kafka() -> None:
    server = rfc7677_server()
    server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    with pytest.raises(SaslError, match="Invalid client credentials"):
        server.evaluate(
            b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            b"p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
        )
    with pytest.raises(SaslError, match="Invalid user credentials"):
        rfc7677_server().evaluate(b"n,,n=nobody,r=abc")
    with pytest.raises(SaslAuthenticationError, match="authorization id that is different"):
        rfc7677_server().evaluate(b"n,a=admin,n=user,r=abc")
    with pytest.raises(SaslError, match="Invalid SCRAM client first message format"):
        rfc7677_server().evaluate(b"p=tls-server-end-point,,n=user,r=abc")
    with pytest.raises(SaslError, match="Invalid client nonce"):
        server = rfc7677_server()
        server.evaluate(b"n,,n=user,r=abc")
        server.evaluate(b"c=biws,r=other,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
        (b"\0bob\0x", "Authentication failed: Invalid username or password"),
        (b"\0\0x", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        (b"alice\0alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"a\0b\0c\0d\0e", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (
            b"bob\0alice\0alice-secret",
            "Authentication failed: Client requested an authorization id that is different "
            "from username",
        ),
    ],
)
def test_plain_refusals_carry_kafkas_messages(token: bytes, message: str) -> None:
    with pytest.raises(SaslAuthenticationError) as caught:
        PlainServer({"alice": "alice-secret"}).evaluate(token)
    assert str(caught.value) == message


def test_oauthbearer_bad_token_then_control_a_fails_with_the_json_status() -> None:
    server = OAuthBearerServer(None)
    header = base64.urlsafe_b64encode(b'{"alg":"HS256"}').rstrip(b"=").decode()
    claims = base64.urlsafe_b64encode(b'{"sub":"x","exp":9999999999}').rstrip(b"=").decode()
    token = f"n,,\x01auth=Bearer {header}.{claims}.\x01\x01".encode()
    assert server.evaluate(token) == b'{"status":"invalid_token"}'
    with pytest.raises(SaslAuthenticationError, match=re.escape('{"status":"invalid_token"}')):
        server.evaluate(b"\x01")
    with pytest.raises(SaslError, match="Invalid OAUTHBEARER client first message"):
        OAuthBearerServer(None).evaluate(b"n,,auth=Bearer x")


def test_jaas_config_is_parsed_as_kafkas_jaasconfig() -> None:
    entry = parse(
        "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '  username="admin" /* comment */ password="a\\"b" // more\n'
        "  user_admin=secret;"
    )
    assert entry.flag == "required"
    assert dict(entry.options) == {"username": "admin", "password": 'a"b', "user_admin": "secret"}
    for bad, message in [
        ("Module;", "control flag"),
        ("Module sometimes;", "Invalid login module control flag"),
        ("Module required key;", "Value not specified for key 'key'"),
        ("Module required key=v", "not terminated by semi-colon"),
        ("A required; B required;", "contains 2 login modules"),
    ]:
        with pytest.raises(JaasError, match=message):
            parse(bad)
