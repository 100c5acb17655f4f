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

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import os
import secrets
import socket
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from broker.config.listeners import is_loopback
from broker.net.acceptor import bind as bind_sockets
from broker.toolkit.faults import FaultError, FaultInjector, call_operation

if TYPE_CHECKING:
    from broker.config.model import Config

log = logging.getLogger(__name__)

TOKEN_FILE = "control.token"
MAX_BODY_BYTES = 64 * 1024
MAX_HEADERS = 64
READ_TIMEOUT_S = 10.0
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    500: "Internal Server Error",
}


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Refused(HttpError):
    """A request that is not from one of the control plane's own clients (logged)."""


class ControlledBroker(Protocol):
    """What the control plane drives (broker.toolkit.host.BrokerHost): its faults, a crash
    and restart, and a description for /v1/status."""

    config: Config

    @property
    def faults(self) -> FaultInjector: ...

    async def crash_restart(self, *, down_s: float | None = None) -> dict[str, Any]: ...

    def describe(self) -> dict[str, Any]: ...


class ControlServer:
    def __init__(self, host: ControlledBroker, bind: str, sockets: list[socket.socket]) -> None:
        self.host = host
        self.servers: list[asyncio.Server] = []
        self.sockets = sockets
        self.port: int = sockets[0].getsockname()[1]
        self.bind = bind
        self.token = secrets.token_urlsafe(32)
        self.token_path: str | None = None

    @classmethod
    def bind_to(cls, host: ControlledBroker, bind: str, port: int) -> ControlServer:
        """Bind the listener (before the broker reads its data directory: a port in use
        stops the start with nothing touched); ``serve`` starts answering."""
        sockets = bind_sockets(
            bind,
            port,
            "control plane (minikafka.control.listener)",
            f"--override minikafka.control.listener={bind or '0.0.0.0'}:<port>",
        )
        return cls(host, bind, sockets)

    async def serve(self) -> None:
        for sock in self.sockets:
            self.servers.append(
                await asyncio.start_server(self._serve, sock=sock, limit=MAX_BODY_BYTES)
            )
        self.token_path = write_token(self.host.config.log_dir, self.token)
        log.info(
            "minikafka control plane on %s/v1/ (send Authorization: Bearer %s; the token is "
            "also in %s)",
            self.url,
            self.token,
            self.token_path,
        )

    @property
    def url(self) -> str:
        return f"http://{_host_port(self.bind, self.port)}"

    async def close(self) -> None:
        for server in self.servers:
            server.close()
            await server.wait_closed()
        for sock in self.sockets:
            sock.close()
        if self.token_path is not None:
            # A stale token would only mislead: the next start makes a new one.
            with contextlib.suppress(OSError):
                os.unlink(self.token_path)
            self.token_path = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        extra: dict[str, str] = {}
        method = target = "-"
        body = b""
        try:
            if not self.host.config.control_allow_remote and not (
                peer and is_loopback(str(peer[0]))
            ):
                raise Refused(403, "the control plane answers loopback clients only")
            method, target, headers = await asyncio.wait_for(_read_head(reader), READ_TIMEOUT_S)
            self._check_caller(method, headers)
            body = await asyncio.wait_for(_read_body(reader, headers), READ_TIMEOUT_S)
            status, payload = 200, await self._route(method, target, body)
        except Refused as exc:
            status, payload = exc.status, {"error": exc.message}
            if exc.status == 401:
                extra["WWW-Authenticate"] = "Bearer"
        except HttpError as exc:
            status, payload = exc.status, {"error": exc.message}
        except TimeoutError:
            status, payload = 408, {"error": "request not complete in time"}
        except FaultError as exc:
            status, payload = 400, {"error": str(exc)}
        except Exception:
            log.exception("control plane: request from %s failed", peer)
            status, payload = 500, {"error": "internal error (see the broker log)"}
        _log_call(peer, method, target, body, status, payload)
        try:
            writer.write(_response(status, payload, extra))
            await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    def _check_caller(self, method: str, headers: dict[str, str]) -> None:
        """Refuse what a browser could send on a web page's behalf (see the module doc)."""
        host = headers.get("host", "").strip().lower()
        if not host or not self._host_allowed(host):
            raise Refused(403, f"Host {host[:100]!r} is not this control plane's address")
        origin = headers.get("origin")
        if origin is not None and origin.strip().lower() != f"http://{host}":
            raise Refused(403, f"cross-origin request (Origin {origin[:100]!r}) refused")
        scheme, _, credential = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip().encode(), self.token.encode()
        ):
            raise Refused(
                401,
                f"send Authorization: Bearer <token> (in {TOKEN_FILE} in the broker's log.dirs)",
            )
        if method == "POST":
            media = headers.get("content-type", "").partition(";")[0].strip().lower()
            if media != "application/json":
                raise Refused(415, "a POST body must be Content-Type: application/json")

    def _host_allowed(self, host: str) -> bool:
        name, sep, port = host.rpartition(":")
        if not sep or not port.isdigit() or name.endswith(":"):
            return False
        name = name.strip("[]")
        bind = self.bind.lower()
        if bind in ("0.0.0.0", "::", ""):
            # Any interface, maybe behind a published port: any port, but only names no DNS
            # can rebind (an attacker's page can only send its own name).
            return name == "localhost" or _is_ip(name)
        if int(port) != self.port:
            return False
        if name == bind:
            return True
        # On loopback, localhost and the loopback literals are one listener.
        if bind == "localhost":
            return name in ("127.0.0.1", "::1")
        return name == "localhost" and is_loopback(bind)

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


def _log_call(peer: Any, method: str, target: str, body: bytes, status: int, payload: Any) -> None:
    """One line per call, after its outcome. A change done is logged by the operation
    itself ("fault: ..."), so here only at DEBUG; a call refused or failed, as refused."""
    address = peer[0] if peer else "?"
    call = f"{method} {target[:200]}"
    if body.strip():
        call += f" {body[:500].decode('utf-8', 'replace')}"
    if status == 200:
        log.debug("control plane: %s from %s: done", call, address)
    elif status >= 500:
        log.error("control plane: %s from %s: failed (%d)", call, address, status)
    else:
        message = payload.get("error", "") if isinstance(payload, dict) else ""
        log.warning("control plane: refused %s from %s (%d): %s", call, address, status, message)


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


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# Headers whose repetition would make the checks above ambiguous.
_SINGLE = ("host", "origin", "authorization", "content-type", "content-length")


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str]]:
    try:
        line = await reader.readline()
    except (asyncio.LimitOverrunError, ValueError):
        raise HttpError(400, "request line too long") from None
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, "not an HTTP/1.x request line")
    method, target, _version = parts
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        try:
            header = await reader.readline()
        except (asyncio.LimitOverrunError, ValueError):
            raise HttpError(400, "header line too long") from None
        if header in (b"\r\n", b"\n", b""):
            break
        key, sep, value = header.decode("latin-1").partition(":")
        if not sep:
            raise HttpError(400, f"malformed header line {header[:80]!r}")
        key = key.strip().lower()
        if key in headers and key in _SINGLE:
            raise HttpError(400, f"header {key} given twice")
        headers[key] = value.strip()
    else:
        raise HttpError(400, f"more than {MAX_HEADERS} headers")
    return method, target, headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "transfer-encoding" in headers:
        raise HttpError(411, "send a Content-Length (chunked bodies are not accepted)")
    length_text = headers.get("content-length")
    if length_text is None:
        return b""
    if not length_text.isdigit():
        raise HttpError(400, "Content-Length is not a number")
    length = int(length_text)
    if length > MAX_BODY_BYTES:
        raise HttpError(413, f"body above {MAX_BODY_BYTES} bytes")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise HttpError(400, "body shorter than its Content-Length") from None


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


def _response(status: int, payload: Any, extra: dict[str, str] | None = None) -> bytes:
    body = json.dumps(payload, default=str).encode() + b"\n"
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in (extra or {}).items())
        + f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body
