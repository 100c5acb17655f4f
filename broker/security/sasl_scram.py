"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's ScramSaslServer.

Credentials come from the store AlterUserScramCredentials writes (salt, stored key, server
key, iterations: never a password). Message formats follow Kafka's ScramMessages: only the
gs2 header ``n`` (no channel binding), an optional authzid that must equal the user name,
extensions accepted and ignored (delegation-token authentication, ``tokenauth``, is not
served). Errors as Kafka: an unknown user, a bad proof or a malformed message is a
SaslException (the client gets the generic "invalid credentials" message); an authzid
different from the user name a SaslAuthenticationException with Kafka's message.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable

from broker.security.sasl_mechanism import SaslAuthenticationError, SaslError
from storage.scram_credential_store import ScramCredential

# ScramMechanism: name -> (type in UserScramCredentialRecord, hash, min iterations).
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256", 4096), "SCRAM-SHA-512": (2, "sha512", 4096)}

_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_BASE64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>(?:m={_VALUE},)?n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))"
)
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS})"
    rf",p=(?P<proof>{_BASE64})"
)

CredentialLookup = Callable[[str, int], ScramCredential | None]


def username(saslname: str) -> str:
    """ScramFormatter.username: RFC 5802's =2C and =3D escapes."""
    return saslname.replace("=2C", ",").replace("=3D", "=")


def credential(mechanism: str, password: str, salt: bytes, iterations: int) -> ScramCredential:
    """ScramFormatter.generateCredential (bootstrap users and tests)."""
    digest = MECHANISMS[mechanism][1]
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(digest, client_key).digest(),
        server_key=hmac.new(salted, b"Server Key", digest).digest(),
        iterations=iterations,
    )


class ScramServer:
    credential_expiry_ms = None

    def __init__(
        self,
        mechanism: str,
        lookup: CredentialLookup,
        server_nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24),
    ) -> None:
        self.mechanism = mechanism
        self._server_nonce = server_nonce
        self._type, self._digest, self._min_iterations = MECHANISMS[mechanism]
        self._lookup = lookup
        self._state = "client-first"
        self.attempted_user: str | None = None
        self._user: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    @property
    def authorization_id(self) -> str:
        assert self._user is not None and self.complete
        return self._user

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._state == "client-first":
                return self._client_first(token)
            if self._state == "client-final":
                return self._client_final(token)
            raise SaslError(f"Unexpected challenge in Sasl server state {self._state}")
        except (SaslError, SaslAuthenticationError):
            self._state = "failed"
            self._credential = None
            raise

    def _client_first(self, token: bytes) -> bytes:
        message = token.decode("utf-8", errors="replace")
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise SaslError(f"Invalid SCRAM client first message format: {message}")
        user = username(match["saslname"])
        # Named in the failed-login log line (rate-limited per user and address).
        self.attempted_user = user
        cred = self._lookup(user, self._type)
        if cred is None:
            raise SaslError("Authentication failed: Invalid user credentials")
        authzid = match["authzid"]
        if authzid and authzid != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if cred.iterations < self._min_iterations:
            raise SaslError(
                f"Iterations {cred.iterations} is less than the minimum "
                f"{self._min_iterations} for {self.mechanism}"
            )
        self._user, self._credential = user, cred
        self._client_first_bare = match["bare"]
        # ScramFormatter.secureRandomString: a random nonce appended to the client's.
        nonce = match["nonce"] + self._server_nonce()
        salt = base64.b64encode(cred.salt).decode()
        self._server_first = f"r={nonce},s={salt},i={cred.iterations}"
        self._state = "client-final"
        return self._server_first.encode()

    def _client_final(self, token: bytes) -> bytes:
        message = token.decode("utf-8", errors="replace")
        match = _CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise SaslError(f"Invalid SCRAM client final message format: {message}")
        server_nonce = self._server_first.split(",", 1)[0][2:]
        if not match["nonce"].endswith(server_nonce):
            raise SaslError("Invalid client nonce in the final client message.")
        cred = self._credential
        assert cred is not None
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, match["without_proof"])
        ).encode()
        client_signature = hmac.new(cred.stored_key, auth_message, self._digest).digest()
        proof = base64.b64decode(match["proof"])
        if len(proof) != len(client_signature):
            raise SaslError("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._digest, client_key).digest(), cred.stored_key):
            raise SaslError("Invalid client credentials")
        server_signature = hmac.new(cred.server_key, auth_message, self._digest).digest()
        self._credential = None
        self._state = "complete"
        return b"v=" + base64.b64encode(server_signature)
