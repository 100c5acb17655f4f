"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer with PlainServerCallbackHandler: users
and passwords are the ``user_<name>="<password>"`` options of the listener's
PlainLoginModule JAAS entry; the error messages are Kafka's, word for word."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from broker.security.sasl_mechanism import SaslAuthenticationError


class PlainServer:
    mechanism = "PLAIN"
    credential_expiry_ms = None

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.attempted_user: str | None = None
        self._authorization_id: str | None = None

    @property
    def complete(self) -> bool:
        return self._authorization_id is not None

    @property
    def authorization_id(self) -> str:
        assert self._authorization_id is not None
        return self._authorization_id

    def evaluate(self, token: bytes) -> bytes:
        # Java decodes with replacement characters; so does errors="replace".
        tokens = token.decode("utf-8", errors="replace").split("\0", 3)
        if len(tokens) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(tokens), 4)}"
            )
        authzid, username, password = tokens
        # Named in the failed-login log line (rate-limited per user and address).
        self.attempted_user = username or None
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self._authorization_id = username
        return b""
