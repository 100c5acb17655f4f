"""What every SASL mechanism's server side offers the session (Kafka's javax SaslServer)."""

from __future__ import annotations

from typing import Protocol


class SaslAuthenticationError(Exception):
    """Kafka's SaslAuthenticationException: its message is sent to the client."""


class SaslError(Exception):
    """Kafka's SaslException: the client gets only the generic "invalid credentials" message
    (SaslServerAuthenticator keeps details such as a user's existence from it)."""


class SaslServer(Protocol):
    mechanism: str

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str: ...

    @property
    def credential_expiry_ms(self) -> int | None:
        """When the credential expires (OAUTHBEARER tokens), as wall-clock ms; else None."""
        ...

    def evaluate(self, token: bytes) -> bytes:
        """The next server token; raises SaslAuthenticationError or SaslError."""
        ...
