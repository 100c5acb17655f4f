"""A small HTTP/1.1 server for the broker's own side listeners (the control plane, the
console): stdlib asyncio, one request per connection (``Connection: close``), bounded.

Loopback-only unless the listener is opened: each connection from a non-loopback peer is
answered 403 (a second line of defence for wildcard binds). A web page in the user's
browser can reach a loopback port too (a form POST, or a GET after DNS rebinding), so a
request must also carry a ``Host`` naming the listener (on a wildcard bind an IP literal or
``localhost``: names no DNS can rebind) and no ``Origin`` but the listener's own, else 403.
What a listener asks beyond that (a token, a content type) is its ``check_caller``.

Bounds: the request line and headers (``MAX_HEAD_BYTES``, ``MAX_HEADERS``), the body
(``max_body``), the time to read them (``READ_TIMEOUT_S``) and to answer (``answer_timeout``),
and the connections open at once (``max_connections``; more are answered 503 at once).
Bad requests get a 4xx and a log line; nothing a client sends stops the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from broker.config.listeners import is_loopback
from broker.net.acceptor import bind as bind_sockets

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 64
READ_TIMEOUT_S = 10.0
REASONS = {
    200: "OK",
    303: "See Other",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
# Headers whose repetition would make the checks ambiguous.
T = TypeVar("T")
_SINGLE = ("host", "origin", "authorization", "content-type", "content-length")


class HttpError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class Refused(HttpError):
    """A request that is not from one of the listener's own clients (logged as refused)."""


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes = b""
    peer: str = ""  # the client's address


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        head = (
            f"HTTP/1.1 {self.status} {REASONS.get(self.status, 'Error')}\r\n"
            f"Content-Type: {self.content_type}\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
            + f"Content-Length: {len(self.body)}\r\n"
            "Connection: close\r\n\r\n"
        )
        return head.encode("latin-1") + self.body


class LocalHttpServer:
    """One side listener. Subclasses name themselves (``what``, for messages and log
    lines) and fill in ``check_caller``, ``route`` and ``error_reply``."""

    what = "http listener"
    max_body = 64 * 1024
    # Whether a refused call's log line quotes its body (the control plane's JSON arguments);
    # a form's body carries its token and the user's data, so only its size is logged.
    log_bodies = True
    max_connections = 32
    answer_timeout: float | None = None

    def __init__(self, bind: str, sockets: list[socket.socket], allow_remote: bool) -> None:
        self.bind = bind
        self.sockets = sockets
        self.port: int = sockets[0].getsockname()[1]
        self.allow_remote = allow_remote
        self.servers: list[asyncio.Server] = []
        self.log = logging.getLogger(type(self).__module__)
        self._open = 0

    @staticmethod
    def bind_sockets(bind: str, port: int, what: str, setting: str) -> list[socket.socket]:
        """Bind before the broker reads its data directory: a port in use stops the start
        with nothing touched."""
        fix = f"--override {setting}={bind or '0.0.0.0'}:<port>"
        return bind_sockets(bind, port, f"{what} ({setting})", fix)

    @property
    def url(self) -> str:
        return f"http://{host_port(self.bind, self.port)}"

    async def start_serving(self) -> None:
        for sock in self.sockets:
            self.servers.append(
                await asyncio.start_server(self._serve, sock=sock, limit=MAX_HEAD_BYTES)
            )

    async def close(self) -> None:
        for server in self.servers:
            server.close()
            await server.wait_closed()
        for sock in self.sockets:
            sock.close()

    # -- to fill in ------------------------------------------------------------------------

    def check_caller(self, request: Request) -> None:
        """Raise Refused for what only the listener's own clients may send (headers read,
        body not yet)."""

    async def route(self, request: Request) -> Reply:
        raise HttpError(404, "nothing here")

    def error_reply(self, status: int, message: str) -> Reply:
        return Reply(status, message.encode() + b"\n", "text/plain; charset=utf-8")

    # -- one connection --------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        request = Request("-", "-", {})
        self._open += 1
        try:
            try:
                if self._open > self.max_connections:
                    raise HttpError(503, f"more than {self.max_connections} connections open")
                if not self.allow_remote and not (peer and is_loopback(str(peer[0]))):
                    raise Refused(403, f"the {self.what} answers loopback clients only")
                request = await _within(_read_head(reader), READ_TIMEOUT_S, 408)
                request.peer = str(peer[0]) if peer else ""
                self.check_origin(request.headers)
                self.check_caller(request)
                request.body = await _within(
                    _read_body(reader, request.headers, self.max_body), READ_TIMEOUT_S, 408
                )
                reply = await _within(self.route(request), self.answer_timeout, 504)
                refusal = ""
            except HttpError as exc:
                reply, refusal = self.error_reply(exc.status, exc.message), exc.message
                reply.headers.update(exc.headers)
            except Exception:
                self.log.exception("%s: request from %s failed", self.what, peer)
                refusal = "internal error (see the broker log)"
                reply = self.error_reply(500, refusal)
            self.log_call(peer, request, reply.status, refusal)
            with contextlib.suppress(OSError):
                writer.write(reply.encode())
                await asyncio.wait_for(writer.drain(), READ_TIMEOUT_S)
        except TimeoutError:
            pass  # a client that does not read its answer; the connection closes
        finally:
            self._open -= 1
            writer.close()

    def log_call(self, peer: Any, request: Request, status: int, refusal: str) -> None:
        """One line per call, after its outcome: a call done at DEBUG, one refused or failed
        as such."""
        address = peer[0] if peer else "?"
        call = f"{request.method} {request.target[:200]}"
        if request.body.strip():
            if self.log_bodies:
                call += f" {request.body[:500].decode('utf-8', 'replace')}"
            else:
                call += f" ({len(request.body)} bytes)"
        if status < 400:
            self.log.debug("%s: %s from %s: done", self.what, call, address)
        elif status >= 500 and status != 503:
            self.log.error("%s: %s from %s: failed (%d)", self.what, call, address, status)
        else:
            self.log.warning(
                "%s: refused %s from %s (%d): %s", self.what, call, address, status, refusal
            )

    def check_origin(self, headers: dict[str, str]) -> None:
        """Refuse what a browser sends on a foreign web page's behalf (module doc)."""
        host = headers.get("host", "").strip().lower()
        if not host or not self.host_allowed(host):
            raise Refused(403, f"Host {host[:100]!r} is not this {self.what}'s address")
        origin = headers.get("origin")
        if origin is not None and origin.strip().lower() != f"http://{host}":
            raise Refused(403, f"cross-origin request (Origin {origin[:100]!r}) refused")

    def host_allowed(self, host: str) -> bool:
        name, sep, port = host.rpartition(":")
        if not sep or not port.isdigit() or name.endswith(":"):
            return False
        name = name.strip("[]")
        bind = self.bind.lower()
        if bind in ("0.0.0.0", "::", ""):
            # Any interface, maybe behind a published port: any port, but only names no DNS
            # can rebind (an attacker's page can only send its own name).
            return name == "localhost" or is_ip(name)
        if int(port) != self.port:
            return False
        if name == bind:
            return True
        # On loopback, localhost and the loopback literals are one listener.
        if bind == "localhost":
            return name in ("127.0.0.1", "::1")
        return name == "localhost" and is_loopback(bind)


async def _within(work: Awaitable[T], seconds: float | None, status: int) -> T:
    try:
        return await asyncio.wait_for(work, seconds)
    except TimeoutError:
        what = "request not complete" if status == 408 else "no answer"
        raise HttpError(status, f"{what} within {seconds} s") from None


def is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _read_head(reader: asyncio.StreamReader) -> Request:
    read = 0

    async def line() -> bytes:
        nonlocal read
        try:
            data = await reader.readline()
        except (asyncio.LimitOverrunError, ValueError):
            raise HttpError(431, "request line or header line too long") from None
        read += len(data)
        if read > MAX_HEAD_BYTES:
            raise HttpError(431, f"request head above {MAX_HEAD_BYTES} bytes")
        return data

    parts = (await line()).decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, "not an HTTP/1.x request line")
    method, target, _version = parts
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        header = await line()
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
        raise HttpError(431, f"more than {MAX_HEADERS} headers")
    return Request(method, target, headers)


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str], limit: int) -> bytes:
    if "transfer-encoding" in headers:
        raise HttpError(411, "send a Content-Length (chunked bodies are not accepted)")
    length_text = headers.get("content-length")
    if length_text is None:
        return b""
    if not length_text.isdigit():
        raise HttpError(400, "Content-Length is not a number")
    length = int(length_text)
    if length > limit:
        raise HttpError(413, f"body above {limit} bytes")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise HttpError(400, "body shorter than its Content-Length") from None
