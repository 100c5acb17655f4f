"""The console's HTTP Basic logins, checked as the broker's SASL logins are (SASL/PLAIN users
of the listeners' JAAS entries, SCRAM credentials), and its failed ones held back.

A failed login is logged as the broker's failed SASL logins are: one INFO line per address
and user a minute, the next one counting those left out (the broker's LogLimiter). Past
``PER_USER`` failures of one user from one address, or ``PER_ADDRESS`` of any users from one
address, in a minute, the address (and user) is answered 429 with ``Retry-After`` until the
minute ends, without checking the password, so guessing on at the page's speed gets
nowhere; each refused password is answered after ``FAILED_DELAY_S``, as Kafka delays a
failed authentication (connection.failed.authentication.delay.ms, 100 ms by default). The
tables are bounded (broker.runtime.attempt_limiter, log_limiter).

A good login is remembered for ``CACHE_S``, so a page's reloads do not each pay SCRAM's
thousands of PBKDF2 rounds; a refused one never is.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.net.local_http import Refused
from broker.runtime import offload
from broker.runtime.attempt_limiter import AttemptLimiter
from broker.runtime.log_limiter import LogLimiter
from broker.security.sasl_scram import MECHANISMS, credential

if TYPE_CHECKING:
    from broker.config.model import Config
    from broker.core.state import BrokerState

log = logging.getLogger(__name__)

CACHE_S = 60.0
CACHE_SIZE = 64
PER_USER = 5
PER_ADDRESS = 20
WINDOW_S = 60.0
FAILED_DELAY_S = 0.1
CHALLENGE = {"WWW-Authenticate": 'Basic realm="minikafka console", charset="UTF-8"'}


class Logins:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._good: dict[tuple[str, bytes], float] = {}
        self._per_user = AttemptLimiter(PER_USER, WINDOW_S, clock)
        self._per_address = AttemptLimiter(PER_ADDRESS, WINDOW_S, clock)
        self._failed_log = LogLimiter(WINDOW_S, clock)
        self.failed_delay_s = FAILED_DELAY_S

    async def principal(
        self, config: Config, state: BrokerState, authorization: str, address: str
    ) -> str:
        """``User:<name>`` of a request's ``Authorization`` header, else Refused (401 with a
        Basic challenge, or 429 while the address and user are held back)."""
        refuse = Refused(
            401, "send HTTP Basic credentials of a broker user (SASL/PLAIN or SCRAM)", CHALLENGE
        )
        scheme, _, encoded = authorization.strip().partition(" ")
        if scheme.lower() != "basic":
            # A browser's first request, before it asks its user: not a failure.
            log.debug("console: no Basic credentials from %s", address)
            raise refuse
        try:
            user, sep, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            user, sep, password = "", "", ""
        name = user if sep and user else None
        wait = self._per_address.wait(address)
        if name is not None:
            wait = max(wait, self._per_user.wait((address, name)))
        if wait:
            self._log_failure(address, name, "too many failed logins: answered 429")
            raise Refused(
                429,
                f"too many failed logins from {address}: try again in {math.ceil(wait)} s",
                {"Retry-After": str(math.ceil(wait))},
            )
        if name is None:
            await self._failed(address, None, "malformed Basic credentials")
            raise refuse
        key = (user, hashlib.sha256(password.encode()).digest())
        now = self._clock()
        if self._good.get(key, 0.0) < now:
            if not await _password_ok(config, state, user, password):
                await self._failed(address, user, "invalid user name or password")
                raise refuse
            if len(self._good) >= CACHE_SIZE:
                self._good.clear()
            self._good[key] = now + CACHE_S
        return f"User:{user}"

    async def _failed(self, address: str, user: str | None, reason: str) -> None:
        self._per_address.failed(address)
        if user is not None:
            self._per_user.failed((address, user))
        self._log_failure(address, user, reason)
        if self.failed_delay_s:
            await asyncio.sleep(self.failed_delay_s)

    def _log_failure(self, address: str, user: str | None, reason: str) -> None:
        left_out = self._failed_log.allow((address, user))
        as_user = "" if user is None else f" as {user!r}"
        if left_out is None:
            log.debug("console: failed login from %s%s (%s)", address, as_user, reason)
            return
        log.info(
            "console: failed login from %s%s (%s)%s",
            address,
            as_user,
            reason,
            f"; {left_out} more from {address}{as_user} since the last such line"
            if left_out
            else "",
        )


async def _password_ok(config: Config, state: BrokerState, user: str, password: str) -> bool:
    for listener in config.listeners:
        sasl = listener.security.sasl
        if sasl is None:
            continue
        expected = sasl.plain_users().get(user)
        if expected is not None and hmac.compare_digest(expected.encode(), password.encode()):
            return True
    for mechanism, (kind, _digest, _min) in MECHANISMS.items():
        stored = state.scram_credentials.get(user, kind)
        if stored is None:
            continue
        # PBKDF2 with the stored salt and iterations: thousands of rounds, off the loop.
        made = await offload.run(credential, mechanism, password, stored.salt, stored.iterations)
        if hmac.compare_digest(made.stored_key, stored.stored_key):
            return True
    return False
