"""SASL from the client side over a RawClient: handshake, PLAIN and SCRAM (RFC 5802)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from protocol.messages.sasl_authenticate import SASL_AUTHENTICATE
from protocol.messages.sasl_handshake import SASL_HANDSHAKE
from protocol.schema import Message
from tests.support.raw_client import RawClient

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="alice-secret";'
)
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
OAUTH_JAAS = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"


def sasl_overrides(
    listener: str = "SASL_PLAINTEXT", reauth_ms: int | None = None
) -> dict[str, str]:
    """A Kafka 4.0 SASL listener next to PLAINTEXT, configured as Kafka's docs show it."""
    prefix = f"listener.name.{listener.lower()}"
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:0,{listener}://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        f"{prefix}.plain.sasl.jaas.config": PLAIN_JAAS,
        f"{prefix}.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        f"{prefix}.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        f"{prefix}.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
    }
    if reauth_ms is not None:
        overrides["connections.max.reauth.ms"] = str(reauth_ms)
    return overrides


AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def acl_overrides(**extra: str) -> dict[str, str]:
    """sasl_overrides() with Kafka 4.0's StandardAuthorizer; admin and root are super users."""
    overrides = sasl_overrides()
    overrides.update(
        {
            "authorizer.class.name": AUTHORIZER,
            # Kafka's own example: the broker's principal is a super user.
            "super.users": "User:admin;User:root",
            **extra,
        }
    )
    return overrides


def handshake(client: RawClient, mechanism: str, version: int = 1) -> Message:
    return client.request(SASL_HANDSHAKE, version, Message(mechanism=mechanism))


def authenticate(client: RawClient, token: bytes, version: int = 2) -> Message:
    return client.request(SASL_AUTHENTICATE, version, Message(auth_bytes=token))


def plain_login(client: RawClient, user: str, password: str, version: int = 2) -> Message:
    assert handshake(client, "PLAIN").error_code == 0
    return authenticate(client, f"\0{user}\0{password}".encode(), version)


class ScramClient:
    """The client half of SCRAM-SHA-256/512."""

    def __init__(self, mechanism: str, user: str, password: str) -> None:
        self.digest = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
        self.user, self.password = user, password
        self.nonce = secrets.token_urlsafe(18)
        self.first_bare = f"n={user.replace('=', '=3D').replace(',', '=2C')},r={self.nonce}"

    def first(self) -> bytes:
        return f"n,,{self.first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
        assert fields["r"].startswith(self.nonce)
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        salted = hashlib.pbkdf2_hmac(self.digest, self.password.encode(), salt, iterations)
        client_key = hmac.new(salted, b"Client Key", self.digest).digest()
        stored_key = hashlib.new(self.digest, client_key).digest()
        without_proof = f"c=biws,r={fields['r']}"
        auth_message = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(stored_key, auth_message, self.digest).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.new(salted, b"Server Key", self.digest).digest()
        self.expected_server_final = b"v=" + base64.b64encode(
            hmac.new(server_key, auth_message, self.digest).digest()
        )
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def scram_login(client: RawClient, mechanism: str, user: str, password: str) -> Message:
    """Handshake and both rounds; returns the last SaslAuthenticate answer."""
    assert handshake(client, mechanism).error_code == 0
    scram = ScramClient(mechanism, user, password)
    first = authenticate(client, scram.first())
    if first.error_code != 0:
        return first
    final = authenticate(client, scram.final(bytes(first.auth_bytes)))
    if final.error_code == 0:
        assert bytes(final.auth_bytes) == scram.expected_server_final
    return final


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    digest = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    return hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
