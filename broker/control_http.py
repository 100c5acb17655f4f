"""The fault-injection control plane: a small JSON-over-HTTP/1.1 listener (stdlib asyncio).

Opt-in (``minikafka.control.listener=127.0.0.1:9644``) and loopback-only unless
``minikafka.control.allow.remote=true``: config refuses a non-loopback bind, and each
connection from a non-loopback peer is answered 403 (a second line of defence for wildcard
binds). One request per connection (``Connection: close``).

    GET  /v1/status                     faults set, partitions offline, broker address
    GET  /v1/requests?api=&client_id=   the request log (after POST /v1/log-requests)
    POST /v1/<operation>                a JSON object of arguments (broker.faults.OPERATIONS)
    POST /v1/crash-restart              {"down_s": 0.5}: crash (as SIGKILL) and restart

Bad requests get a 4xx with ``{"error": "..."}``; nothing a client sends stops the broker.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from broker.config import is_loopback
from broker.faults import FaultError, call_operation

if TYPE_CHECKING:
    from broker.host import BrokerHost

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
MAX_HEADERS = 64
READ_TIMEOUT_S = 10.0
_REASONS = {
    200: "OK",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Content Too Large",
    500: "Internal Server Error",
}


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ControlServer:
    def __init__(self, host: BrokerHost) -> None:
        self.host = host
        self.server: asyncio.Server | None = None
        self.port = 0

    @classmethod
    async def start(cls, host: BrokerHost, bind: str, port: int) -> ControlServer:
        control = cls(host)
        control.server = await asyncio.start_server(
            control._serve, host=bind, port=port, reuse_address=True, limit=MAX_BODY_BYTES
        )
        control.port = control.server.sockets[0].getsockname()[1]
        log.info("minikafka control plane on http://%s:%d/v1/", bind, control.port)
        return control

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            if not self.host.config.control_allow_remote and not (
                peer and is_loopback(str(peer[0]))
            ):
                log.warning("control plane: refused a request from non-loopback %s", peer)
                raise HttpError(403, "the control plane answers loopback clients only")
            method, target, body = await asyncio.wait_for(_read_request(reader), READ_TIMEOUT_S)
            status, payload = 200, await self._route(method, target, body)
        except HttpError as exc:
            status, payload = exc.status, {"error": exc.message}
        except TimeoutError:
            status, payload = 408, {"error": "request not complete in time"}
        except FaultError as exc:
            status, payload = 400, {"error": str(exc)}
        except Exception:
            log.exception("control plane: request from %s failed", peer)
            status, payload = 500, {"error": "internal error (see the broker log)"}
        try:
            writer.write(_response(status, payload))
            await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

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
        log.info("control plane: %s %s", name, json.dumps(args))
        if name == "crash-restart":
            unknown = sorted(set(args) - {"down_s"})
            if unknown:
                raise HttpError(400, f"crash-restart: unknown field(s) {', '.join(unknown)}")
            return await self.host.crash_restart(down_s=args.get("down_s"))
        result = call_operation(faults, name, args)
        return {"ok": True} if result is None else {"ok": True, "result": result}


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
    try:
        line = await reader.readline()
    except (asyncio.LimitOverrunError, ValueError):
        raise HttpError(400, "request line too long") from None
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, "not an HTTP/1.x request line")
    method, target, _version = parts
    length: int | None = None
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
        if key.strip().lower() == "content-length":
            if not value.strip().isdigit():
                raise HttpError(400, "Content-Length is not a number")
            length = int(value.strip())
        elif key.strip().lower() == "transfer-encoding":
            raise HttpError(411, "send a Content-Length (chunked bodies are not accepted)")
    else:
        raise HttpError(400, f"more than {MAX_HEADERS} headers")
    if length is None:
        return method, target, b""
    if length > MAX_BODY_BYTES:
        raise HttpError(413, f"body above {MAX_BODY_BYTES} bytes")
    try:
        body = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise HttpError(400, "body shorter than its Content-Length") from None
    return method, target, body


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


def _response(status: int, payload: Any) -> bytes:
    body = json.dumps(payload, default=str).encode() + b"\n"
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body
