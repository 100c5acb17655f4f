"""SASL/OAUTHBEARER (RFC 7628) with unsecured JWS tokens, for development setups: Kafka's
OAuthBearerSaslServer with its default OAuthBearerUnsecuredValidatorCallbackHandler.

The client's first message ``n,[a=<authzid>],^Aauth=Bearer <token>^A[k=v^A]...^A``; the
token ``<base64url header>.<base64url claims>.`` with ``"alg":"none"`` and no signature.
Claims checked as Kafka: the principal claim (JAAS option
``unsecuredValidatorPrincipalClaimName``, default ``sub``) a string; ``exp`` (seconds)
required and not past, ``iat`` not in the future (both with
``unsecuredValidatorAllowableClockSkewMs``), ``exp`` after ``iat``; every scope of
``unsecuredValidatorRequiredScope`` in the scope claim (``unsecuredValidatorScopeClaimName``,
default ``scope``). A bad token is answered with the JSON error challenge
``{"status":"invalid_token"}``; the client acknowledges with ^A and the exchange fails with
that JSON as message. The session lifetime ends with the token (``exp``).

The token's parts are parsed as Kafka's Jackson parses them (OAuthBearerUnsecuredJws.toMap,
Jackson's defaults): NaN and Infinity are not JSON, numbers have at most 1000 digits and
nesting at most 1000 levels (StreamReadConstraints), else the token is "malformed JSON"
(checked before parsing: Python's parser would recurse until RecursionError). Times in
seconds become milliseconds as Kafka's Math.round(seconds * 1000), saturating at the
bounds of a Java long (an ``exp`` of 1e999 never expires).
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import operator
import re
import time
from typing import Any

from broker.security.jaas import JaasEntry
from broker.security.sasl_mechanism import SaslAuthenticationError, SaslError

_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7e \t\r\n]+\x01)*"
_INITIAL = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
# Jackson's StreamReadConstraints defaults (maxNestingDepth, maxNumberLength).
MAX_NESTING_DEPTH = 1000
MAX_NUMBER_LENGTH = 1000
# JSON strings (brackets inside one do not nest).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
# Each byte's step in nesting depth, plus one (bytes cannot be negative): brackets 2 or 0,
# anything else 1; and the bytes of JSON outside strings that are no brackets, dropped.
_STEP = bytes(2 if b in b"[{" else 0 if b in b"]}" else 1 for b in range(256))
_NOT_BRACKETS = b" \t\r\n,:0123456789+-.eEtruefalsn"
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


class InvalidToken(Exception):
    pass


def _b64url_json(part: str) -> dict[str, Any]:
    try:
        text = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode("utf-8")
    except (binascii.Error, ValueError) as exc:
        raise InvalidToken(f"not base64url-encoded UTF-8: {exc}") from None
    if _nested_deeper_than(text, MAX_NESTING_DEPTH):
        raise InvalidToken(f"malformed JSON: nested deeper than {MAX_NESTING_DEPTH} levels")
    try:
        value = json.loads(
            text,
            parse_constant=_not_json,
            parse_int=_json_int,
            parse_float=_json_float,
        )
    except (ValueError, RecursionError) as exc:
        raise InvalidToken(f"malformed JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidToken("not a JSON object")
    return value


def _nested_deeper_than(text: str, limit: int) -> bool:
    if text.count("[") + text.count("{") <= limit:
        return False  # the usual token: nothing to scan
    # Without a loop in Python (a 512 KiB token of shallow brackets took 0.6 s that way).
    steps = _STRING.sub("", text).encode("utf-8", "surrogatepass").translate(_STEP, _NOT_BRACKETS)
    depths = itertools.accumulate(map(operator.sub, steps, itertools.repeat(1)))
    return max(depths, default=0) > limit


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _json_int(digits: str) -> int:
    if len(digits) > MAX_NUMBER_LENGTH:
        raise ValueError(f"a number of more than {MAX_NUMBER_LENGTH} digits")
    return int(digits)


def _json_float(digits: str) -> float:
    if len(digits) > MAX_NUMBER_LENGTH:
        raise ValueError(f"a number of more than {MAX_NUMBER_LENGTH} digits")
    return float(digits)


def _seconds_to_ms(seconds: float) -> int:
    """Kafka's Math.round(seconds.doubleValue() * 1000): saturates at a long's bounds."""
    try:
        ms = float(seconds) * 1000
    except OverflowError:  # an int beyond a double: Java's doubleValue() is infinite
        ms = float("inf") if seconds > 0 else float("-inf")
    if ms >= _LONG_MAX:
        return _LONG_MAX
    if ms <= _LONG_MIN:
        return _LONG_MIN
    return int(ms + 0.5) if ms >= 0 else -int(-ms + 0.5)


class OAuthBearerServer:
    mechanism = "OAUTHBEARER"

    def __init__(self, jaas: JaasEntry | None) -> None:
        def option(key: str, default: str) -> str:
            value = jaas.option(key) if jaas is not None else None
            return value.strip() if value and value.strip() else default

        self._principal_claim = option("unsecuredValidatorPrincipalClaimName", "sub")
        self._scope_claim = option("unsecuredValidatorScopeClaimName", "scope")
        self._required_scope = option("unsecuredValidatorRequiredScope", "").split()
        self._skew_ms = int(option("unsecuredValidatorAllowableClockSkewMs", "0"))
        self._error: str | None = None
        self._principal: str | None = None
        self._expiry_ms: int | None = None

    @property
    def complete(self) -> bool:
        return self._principal is not None

    @property
    def authorization_id(self) -> str:
        assert self._principal is not None
        return self._principal

    @property
    def credential_expiry_ms(self) -> int | None:
        return self._expiry_ms

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise SaslAuthenticationError(self._error)
        self._error = None
        match = _INITIAL.fullmatch(token.decode("utf-8", errors="replace"))
        if match is None:
            raise SaslError("Invalid OAUTHBEARER client first message")
        pairs = dict(p.split("=", 1) for p in match["kvpairs"].split("\x01") if p)
        auth = pairs.get("auth")
        if auth is None:
            raise SaslError("Invalid OAUTHBEARER client first message: 'auth' not specified")
        auth_match = _AUTH.fullmatch(auth)
        if auth_match is None:
            raise SaslError("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if auth_match["scheme"].lower() != "bearer":
            raise SaslError("Invalid scheme in OAUTHBEARER client first message")
        try:
            principal, expiry_ms = self._validate(auth_match["token"])
        except InvalidToken:
            self._error = '{"status":"invalid_token"}'
            return self._error.encode()
        authzid = match["authzid"] or ""
        if authzid and authzid != principal:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authzid}) that "
                f"is different from the token's principal name ({principal})"
            )
        self._principal, self._expiry_ms = principal, expiry_ms
        return b""

    def _validate(self, token: str) -> tuple[str, int]:
        parts = token.split(".")
        if len(parts) != 3 or parts[2]:
            raise InvalidToken("an unsecured JWS has three parts and no signature")
        header, claims = _b64url_json(parts[0]), _b64url_json(parts[1])
        if header.get("alg") != "none":
            raise InvalidToken("an unsecured JWS has alg none")
        principal = claims.get(self._principal_claim)
        if not isinstance(principal, str) or not principal:
            raise InvalidToken(f"the {self._principal_claim} claim is missing")
        now_ms = int(time.time() * 1000)
        exp, iat = claims.get("exp"), claims.get("iat")
        if not isinstance(exp, int | float) or isinstance(exp, bool):
            raise InvalidToken("the exp claim is missing or not a number")
        exp_ms = _seconds_to_ms(exp)
        if now_ms - self._skew_ms >= exp_ms:
            raise InvalidToken("the token has expired")
        if iat is not None:
            if not isinstance(iat, int | float) or isinstance(iat, bool):
                raise InvalidToken("the iat claim is not a number")
            iat_ms = _seconds_to_ms(iat)
            if iat_ms > now_ms + self._skew_ms:
                raise InvalidToken("the token is issued in the future")
            if exp_ms <= iat_ms:
                raise InvalidToken("the token expires before it was issued")
        scope = claims.get(self._scope_claim, [])
        granted = set(scope.split() if isinstance(scope, str) else scope)
        if not set(self._required_scope) <= granted:
            raise InvalidToken("the token lacks a required scope")
        return principal, exp_ms
