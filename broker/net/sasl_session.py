"""One connection's SASL exchange, as Kafka's SaslServerAuthenticator runs it.

Until authenticated, every frame of a SASL listener comes here:
- first ApiVersions (at most once; answered by the normal handler) and/or SaslHandshake;
  any other request -> the connection is closed without an answer ("Unexpected Kafka
  request of type X during SASL handshake", IllegalSaslStateException); a first frame that
  is no Kafka request would be a GSSAPI token from a 0.9 client: GSSAPI is not served, so
  the connection is closed;
- SaslHandshake with a mechanism not enabled -> UNSUPPORTED_SASL_MECHANISM with the enabled
  list, then close; else NONE with the list;
- handshake v1: SaslAuthenticate requests carry the tokens (KIP-152); a failure ->
  SASL_AUTHENTICATION_FAILED with Kafka's message, then close. Handshake v0: the tokens
  follow as bare size-prefixed frames (KIP-43) and a failure closes without an answer;
- a frame above ``sasl.server.max.receive.size`` closes the connection (the connection
  checks it before buffering);
- an unexpected error inside a mechanism fails the exchange like a SaslException: logged,
  SASL_AUTHENTICATION_FAILED with Kafka's generic message (v1), then close.
Once authenticated the principal is ``User:<authorization id>``. With
``connections.max.reauth.ms`` (or an expiring OAUTHBEARER token) the session lifetime goes
to v1+ clients in SaslAuthenticate; a request after the session expired closes the
connection (Kafka's SocketServer "Disconnecting expired channel"); a SaslHandshake on an
authenticated connection of a client that sent SaslAuthenticate v1+ starts KIP-368
re-authentication, which must keep the mechanism and the principal.

Deviation: a request other than SaslAuthenticate after a v1 handshake closes the
connection without Kafka's ILLEGAL_SASL_STATE error response (clients never send one).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Protocol

from broker.security.principal import KafkaPrincipal
from broker.security.sasl_mechanism import SaslAuthenticationError, SaslError, SaslServer
from broker.security.sasl_plain import PlainServer
from broker.security.sasl_scram import MECHANISMS as SCRAM_MECHANISMS
from broker.security.sasl_scram import ScramServer
from broker.security.settings import OAUTHBEARER, PLAIN, SaslSettings
from protocol import codec
from protocol.codec import Deferred
from protocol.errors import ErrorCode
from protocol.header import decode_request_header, encode_response_header
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.sasl_authenticate import SASL_AUTHENTICATE
from protocol.messages.sasl_handshake import SASL_HANDSHAKE
from protocol.primitives import INT16, INT32, DecodeError, Reader
from protocol.schema import Api, Message

if TYPE_CHECKING:
    from broker.core.dispatch import Dispatcher
    from broker.core.state import BrokerState
    from broker.net.frame_reader import Frame

log = logging.getLogger(__name__)

Parts = list[bytes | bytearray | Deferred]

# SaslServerAuthenticator.SaslState, the ones a server passes through.
INITIAL = "INITIAL_REQUEST"
HANDSHAKE = "HANDSHAKE_REQUEST"  # after ApiVersions
AUTHENTICATE = "AUTHENTICATE"
COMPLETE = "COMPLETE"
FAILED = "FAILED"


class SaslConnection(Protocol):
    """The connection an exchange runs on (broker.net.connection.KafkaConnection): the
    session answers, dispatches the requests allowed before authentication, sets the
    principal and closes it."""

    peer: str
    principal: KafkaPrincipal
    dispatcher: Dispatcher
    transport: asyncio.Transport | None

    def close(self) -> None: ...

    async def dispatch_frame(self, frame: Frame) -> list[bytes | bytearray | Deferred] | None: ...


class SaslSession:
    def __init__(self, settings: SaslSettings, state: BrokerState, listener: str) -> None:
        self.settings = settings
        self.state = state
        self.listener = listener
        self.max_receive_size = settings.max_receive_size
        self.phase = INITIAL
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal | None = None
        self._server: SaslServer | None = None
        self._raw_tokens = False  # SaslHandshake v0: tokens without Kafka headers
        self._client_supports_reauth = False  # it sent SaslAuthenticate v1+
        self._expires_at: float | None = None  # time.monotonic() deadline
        self._reauth_from: tuple[str, KafkaPrincipal] | None = None

    @property
    def authenticated(self) -> bool:
        return self.principal is not None

    def intercepts(self, frame: bytes | memoryview) -> bool:
        """Whether this frame is the session's (else the connection dispatches it)."""
        if self.phase != COMPLETE:
            return True
        if self._expires_at is not None and time.monotonic() > self._expires_at:
            return True
        return (
            self._client_supports_reauth
            and len(frame) >= 2
            and INT16.unpack_from(frame, 0)[0] == SASL_HANDSHAKE.key
        )

    async def handle(self, conn: SaslConnection, frame: bytes) -> Parts | None:
        if self.phase == COMPLETE:
            if self._expires_at is not None and time.monotonic() > self._expires_at:
                log.info(
                    "closing connection from %s: SASL session of %s expired "
                    "(connections.max.reauth.ms) and was not re-authenticated",
                    conn.peer,
                    self.principal,
                )
                conn.close()
                return None
            assert self.principal is not None and self.mechanism is not None
            self._reauth_from = (self.mechanism, self.principal)
            self.phase = HANDSHAKE
        if self.phase == FAILED:
            return None
        if self.phase == AUTHENTICATE and self._raw_tokens:
            return self._raw_token(conn, frame)
        try:
            header = decode_request_header(Reader(frame), 1)
        except DecodeError:
            # Not a Kafka request: Kafka would take it for a GSSAPI token (0.9 clients).
            return self._fail(conn, "GSSAPI is not supported by server", None)
        key = header.api_key
        if self.phase in (INITIAL, HANDSHAKE):
            if key == API_VERSIONS.key and self.phase == INITIAL and self._reauth_from is None:
                handler = conn.dispatcher.handler(key)
                if handler is not None and handler.serves(header.api_version):
                    self.phase = HANDSHAKE
                return await conn.dispatch_frame(frame)
            if key != SASL_HANDSHAKE.key:
                return self._fail(
                    conn,
                    f"Unexpected Kafka request of type {_name(key)} during SASL handshake",
                    None,
                )
            return self._handshake(conn, frame)
        if key != SASL_AUTHENTICATE.key:
            return self._fail(
                conn,
                f"Unexpected Kafka request of type {_name(key)} during SASL authentication",
                None,
            )
        return self._authenticate(conn, frame)

    # -- steps ---------------------------------------------------------------------------

    def _handshake(self, conn: SaslConnection, frame: bytes) -> Parts | None:
        decoded = _decode(SASL_HANDSHAKE, frame)
        if decoded is None:
            return self._fail(conn, "malformed or unsupported SaslHandshake", None)
        version, correlation_id, request = decoded
        enabled = list(self.settings.mechanisms)
        wanted = request.mechanism
        if wanted not in enabled:
            answer = Message(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
            return self._fail(
                conn,
                f"Unsupported SASL mechanism {wanted}",
                _frame(SASL_HANDSHAKE, version, correlation_id, answer),
            )
        reauth = self._reauth_from
        if reauth is not None and reauth[0] != wanted:
            # Kafka answers the handshake, then fails the next token (REAUTH_BAD_MECHANISM).
            self._raw_tokens = False
            self.phase = AUTHENTICATE
            self._server = None
            self.mechanism = wanted
        else:
            self._raw_tokens = version == 0
            self.mechanism = wanted
            self._server = self._new_server(wanted)
            self.phase = AUTHENTICATE
        return _frame(
            SASL_HANDSHAKE, version, correlation_id, Message(error_code=0, mechanisms=enabled)
        )

    def _authenticate(self, conn: SaslConnection, frame: bytes) -> Parts | None:
        decoded = _decode(SASL_AUTHENTICATE, frame)
        if decoded is None:
            return self._fail(conn, "malformed or unsupported SaslAuthenticate", None)
        version, correlation_id, request = decoded
        if self._server is None:
            # REAUTH_BAD_MECHANISM: Kafka fails before reading the token, with no answer.
            assert self._reauth_from is not None
            return self._fail(
                conn,
                f"SASL mechanism '{self.mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self._reauth_from[0]}'",
                None,
            )
        if version > 0:
            self._client_supports_reauth = True
        try:
            token = self._evaluate(bytes(request.auth_bytes))
        except (SaslAuthenticationError, SaslError) as exc:
            message = self._client_message(exc)
            answer = Message(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                error_message=message,
                auth_bytes=b"",
                session_lifetime_ms=0,
            )
            return self._fail(
                conn, str(exc), _frame(SASL_AUTHENTICATE, version, correlation_id, answer)
            )
        lifetime = self._complete(conn) if self.phase == COMPLETE else 0
        answer = Message(
            error_code=0, error_message=None, auth_bytes=token, session_lifetime_ms=lifetime
        )
        return _frame(SASL_AUTHENTICATE, version, correlation_id, answer)

    def _raw_token(self, conn: SaslConnection, frame: bytes) -> Parts | None:
        try:
            token = self._evaluate(frame)
        except (SaslAuthenticationError, SaslError) as exc:
            return self._fail(conn, str(exc), None)
        if self.phase == COMPLETE:
            self._complete(conn)
        return [INT32.pack(len(token)) + token]

    def _evaluate(self, token: bytes) -> bytes:
        server = self._server
        assert server is not None
        try:
            response = server.evaluate(token)
        except (SaslAuthenticationError, SaslError):
            raise
        except Exception as exc:
            # A mechanism's bug must fail the exchange, never leave the connection
            # unanswered; the client gets Kafka's message for a SaslException (no details).
            log.exception("SASL %s failed unexpectedly on a client's token", self.mechanism)
            raise SaslError(f"unexpected {type(exc).__name__} in SASL {self.mechanism}") from exc
        if server.complete:
            principal = KafkaPrincipal("User", server.authorization_id)
            reauth = self._reauth_from
            if reauth is not None and reauth[1] != principal:
                old, new = reauth[1], principal
                raise SaslAuthenticationError(
                    "Cannot change principals during re-authentication from "
                    f"{old.type}.{old.name}: {new.type}.{new.name}"
                )
            self.principal = principal
            self.phase = COMPLETE
        return response

    def _complete(self, conn: SaslConnection) -> int:
        """ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs; returns the lifetime."""
        server = self._server
        assert server is not None and self.principal is not None
        max_reauth = self.settings.reauth_ms.get(server.mechanism, 0)
        expiry = server.credential_expiry_ms
        now_ms = time.time() * 1000
        lifetime = 0
        if expiry is not None or max_reauth > 0:
            if expiry is None:
                lifetime = max(0, max_reauth)
            elif max_reauth <= 0:
                lifetime = max(0, int(expiry - now_ms))
            else:
                lifetime = max(0, min(int(expiry - now_ms), max_reauth))
            self._expires_at = time.monotonic() + lifetime / 1000
        else:
            self._expires_at = None
        conn.principal = self.principal
        log.info(
            "%s from %s on listener %s as %s (%s)",
            "re-authenticated" if self._reauth_from else "authenticated",
            conn.peer,
            self.listener,
            self.principal,
            server.mechanism,
        )
        self._reauth_from = None
        return lifetime

    def _client_message(self, exc: Exception) -> str:
        if isinstance(exc, SaslAuthenticationError):
            return str(exc)
        # SaslServerAuthenticator.handleSaslToken: no details of a SaslException go out.
        what = "re-authentication" if self._reauth_from else "authentication"
        return (
            f"Authentication failed during {what} due to invalid credentials with SASL "
            f"mechanism {self.mechanism}"
        )

    def _fail(self, conn: SaslConnection, reason: str, answer: Parts | None) -> Parts | None:
        # Kafka: "Failed authentication with /<host> (<reason>)", INFO, once per connection.
        # A client retrying with a wrong password makes dozens a second: one line per user
        # and address a minute, with the count of the ones left out.
        user = getattr(self._server, "attempted_user", None)
        host = conn.peer.rsplit(":", 1)[0]
        left_out = self.state.failed_login_log.allow((host, user))
        as_user = "" if user is None else f" as {user!r}"
        if left_out is None:
            log.debug(
                "closing connection: failed authentication with %s on listener %s%s (%s)",
                conn.peer,
                self.listener,
                as_user,
                reason,
            )
        else:
            log.info(
                "closing connection: failed authentication with %s on listener %s%s (%s)%s",
                conn.peer,
                self.listener,
                as_user,
                reason,
                f"; {left_out} more from {host}{as_user} since the last such line"
                if left_out
                else "",
            )
        self.phase = FAILED
        transport = conn.transport
        if answer is not None and transport is not None and not transport.is_closing():
            transport.write(b"".join(bytes(p) for p in answer if not isinstance(p, Deferred)))
        conn.close()
        return None

    def _new_server(self, mechanism: str) -> SaslServer:
        if mechanism == PLAIN:
            return PlainServer(self.settings.plain_users())
        if mechanism in SCRAM_MECHANISMS:
            return ScramServer(mechanism, self.state.scram_credentials.get)
        if mechanism == OAUTHBEARER:
            # Imported at the first OAUTHBEARER handshake (it brings json): most brokers
            # never see one.
            from broker.security.sasl_oauthbearer import OAuthBearerServer

            return OAuthBearerServer(self.settings.jaas.get(OAUTHBEARER))
        raise AssertionError(mechanism)


def _name(key: int) -> str:
    from protocol.api_keys import ALL_APIS

    api = ALL_APIS.get(key)
    return api.name if api is not None else f"api key {key}"


def _decode(api: Api, frame: bytes) -> tuple[int, int, Message] | None:
    """(version, correlation id, request), or None if unreadable or of a version not served."""
    try:
        reader = Reader(frame)
        version = INT16.unpack_from(frame, 2)[0]
        if version not in api.versions:
            return None
        header = decode_request_header(reader, api.request_header_version(version))
        request = codec.decode(api.request, version, api.is_flexible(version), reader, exact=False)
    except DecodeError:
        return None
    return version, header.correlation_id, request


def _frame(api: Api, version: int, correlation_id: int, answer: Message) -> Parts:
    head = bytearray(4)
    encode_response_header(head, correlation_id, api.response_header_version(version))
    head += codec.encode_response(api, version, answer)
    INT32.pack_into(head, 0, len(head) - 4)
    return [bytes(head)]
