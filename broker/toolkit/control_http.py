"""The fault-injection control plane: a small JSON-over-HTTP/1.1 listener (stdlib asyncio).

Opt-in (``minikafka.control.listener=127.0.0.1:9644``) and loopback-only unless
``minikafka.control.allow.remote=true``: config refuses a non-loopback bind, and each
connection from a non-loopback peer is answered 403 (a second line of defence for wildcard
binds). One request per connection (``Connection: close``).

A web page in the user's browser can reach a loopback port too (a form POST, or a GET after
DNS rebinding), so every request must also carry:

- a ``Host`` naming the listener (``host:port`` as bound, ``localhost:port`` on loopback; on
  a wildcard bind an IP literal or ``localhost``), else 403: a rebound DNS name is refused;
- no ``Origin``, or the listener's own, else 403;
- ``Authorization: Bearer <token>``, else 401: the token is made at start-up, logged, and
  written to ``<log.dirs>/control.token`` (mode 0600), where ``minikafka fault`` reads it;
- on a POST, ``Content-Type: application/json``, else 415 (what a form cannot send).

    GET  /v1/status                     faults set, partitions offline, broker address
    GET  /v1/requests?api=&client_id=   the request log (after POST /v1/log-requests)
    POST /v1/<operation>                a JSON object of arguments
                                        (broker.toolkit.faults.OPERATIONS)
    POST /v1/crash-restart              {"down_s": 0.5}: crash (as SIGKILL) and restart

Bad requests get a 4xx with ``{"error": "..."}``; nothing a client sends stops the broker.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import socket
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from broker.net.local_http import HttpError, LocalHttpServer, Refused, Reply, Request
from broker.toolkit.faults import FaultError, FaultInjector, call_operation

if TYPE_CHECKING:
    from broker.config.model import Config

log = logging.getLogger(__name__)

TOKEN_FILE = "control.token"


class ControlledBroker(Protocol):
    """What the control plane drives (broker.toolkit.host.BrokerHost): its faults, a crash
    and restart, and a description for /v1/status."""

    config: Config

    @property
    def faults(self) -> FaultInjector: ...

    async def crash_restart(self, *, down_s: float | None = None) -> dict[str, Any]: ...

    def describe(self) -> dict[str, Any]: ...


class ControlServer(LocalHttpServer):
    what = "control plane"

    def __init__(self, host: ControlledBroker, bind: str, sockets: list[socket.socket]) -> None:
        super().__init__(bind, sockets, host.config.control_allow_remote)
        self.host = host
        self.token = secrets.token_urlsafe(32)
        self.token_path: str | None = None

    @classmethod
    def bind_to(cls, host: ControlledBroker, bind: str, port: int) -> ControlServer:
        """Bind the listener; ``serve`` starts answering."""
        sockets = cls.bind_sockets(bind, port, "control plane", "minikafka.control.listener")
        return cls(host, bind, sockets)

    async def serve(self) -> None:
        await self.start_serving()
        self.token_path = write_token(self.host.config.log_dir, self.token)
        log.info(
            "minikafka control plane on %s/v1/ (send Authorization: Bearer %s; the token is "
            "also in %s)",
            self.url,
            self.token,
            self.token_path,
        )

    async def close(self) -> None:
        await super().close()
        if self.token_path is not None:
            # A stale token would only mislead: the next start makes a new one.
            with contextlib.suppress(OSError):
                os.unlink(self.token_path)
            self.token_path = None

    def check_caller(self, request: Request) -> None:
        """The token, and on a POST a JSON body (what a form cannot send)."""
        headers = request.headers
        scheme, _, credential = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip().encode(), self.token.encode()
        ):
            raise Refused(
                401,
                f"send Authorization: Bearer <token> (in {TOKEN_FILE} in the broker's log.dirs)",
                {"WWW-Authenticate": "Bearer"},
            )
        if request.method == "POST":
            media = headers.get("content-type", "").partition(";")[0].strip().lower()
            if media != "application/json":
                raise Refused(415, "a POST body must be Content-Type: application/json")

    def error_reply(self, status: int, message: str) -> Reply:
        return _json_reply(status, {"error": message})

    async def route(self, request: Request) -> Reply:
        try:
            return _json_reply(200, await self._route(request.method, request.target, request.body))
        except FaultError as exc:
            raise HttpError(400, str(exc)) from None

    async def _route(self, method: str, target: str, body: bytes) -> Any:
        url = urlsplit(target)
        path = url.path.rstrip("/")
        if not path.startswith("/v1/"):
            raise HttpError(404, f"no such path {url.path!r}; the API lives under /v1/")
        name = path[len("/v1/") :]
        faults = self.host.faults
        if method == "GET":
            query = dict(parse_qsl(url.query))
            if name == "status":
                return {"broker": self.host.describe(), **faults.status()}
            if name == "requests":
                unknown = sorted(set(query) - {"api", "client_id"})
                if unknown:
                    raise HttpError(400, f"unknown query parameter(s) {', '.join(unknown)}")
                return faults.requests(api=query.get("api"), client_id=query.get("client_id"))
            raise HttpError(405 if name else 404, f"GET is not allowed on {url.path}; use POST")
        if method != "POST":
            raise HttpError(405, f"method {method} not allowed (GET or POST)")
        args = _json_object(body)
        if name == "crash-restart":
            unknown = sorted(set(args) - {"down_s"})
            if unknown:
                raise HttpError(400, f"crash-restart: unknown field(s) {', '.join(unknown)}")
            return await self.host.crash_restart(down_s=args.get("down_s"))
        result = call_operation(faults, name, args)
        return {"ok": True} if result is None else {"ok": True, "result": result}


def write_token(log_dir: str, token: str) -> str:
    """Write the token where only this user can read it; returns the file's path."""
    path = os.path.join(log_dir, TOKEN_FILE)
    os.makedirs(log_dir, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a file left by an earlier run may have other modes
        os.write(fd, token.encode() + b"\n")
    finally:
        os.close(fd)
    return path


def _json_object(body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HttpError(400, f"body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise HttpError(400, "body must be a JSON object of arguments")
    return value


def _json_reply(status: int, payload: Any) -> Reply:
    return Reply(status, json.dumps(payload, default=str).encode() + b"\n", "application/json")
