"""``minikafka fault OPERATION [--field value]...``: the control plane from a shell.

For Docker users and clients in any language: each operation of broker.faults.OPERATIONS
(plus ``crash-restart``) becomes an HTTP request to the broker's control listener
(``minikafka.control.listener``). Field names are written ``--client-id`` or ``--client_id``;
values are read as JSON when they parse (``3``, ``0.5``, ``true``) and as text otherwise.

    minikafka fault error --api Produce --error NOT_LEADER_OR_FOLLOWER --count 2
    minikafka fault drop --api Produce --count 1
    minikafka fault crash-restart --down-s 0.5
    minikafka fault status

Exit status: 0 done, 1 the broker refused the request (4xx/5xx, message printed),
2 bad command line, 3 control plane unreachable.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from broker.faults import OPERATIONS

DEFAULT_URL = "http://127.0.0.1:9644"
URL_ENV = "MINIKAFKA_CONTROL_URL"
GET_OPERATIONS = ("status", "requests")
ALL_OPERATIONS = (*OPERATIONS, "crash-restart")

USAGE = f"""usage: minikafka fault [--url URL] OPERATION [--field value]...

operations: {", ".join(ALL_OPERATIONS)}
URL defaults to ${URL_ENV} or {DEFAULT_URL} (the broker's minikafka.control.listener).
See docs/TESTING_WITH_MINIKAFKA.md for each operation's fields."""


def parse_args(argv: list[str]) -> tuple[str, str, dict[str, Any]]:
    """(url, operation, fields); ValueError with a message for a bad command line."""
    url = os.environ.get(URL_ENV, DEFAULT_URL)
    args = list(argv)
    if args[:1] == ["--url"]:
        if len(args) < 2:
            raise ValueError("--url needs a value")
        url, args = args[1], args[2:]
    if not args or args[0].startswith("-"):
        raise ValueError("an operation is required")
    operation, rest = args[0], args[1:]
    if operation not in ALL_OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}")
    fields: dict[str, Any] = {}
    while rest:
        flag = rest.pop(0)
        if not flag.startswith("--") or len(flag) < 3:
            raise ValueError(f"expected --field, got {flag!r}")
        if not rest:
            raise ValueError(f"{flag} needs a value")
        fields[flag[2:].replace("-", "_")] = _value(rest.pop(0))
    return url.rstrip("/"), operation, fields


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def request(url: str, operation: str, fields: dict[str, Any], timeout: float = 30.0) -> Any:
    """Send one operation; returns the decoded answer or raises urllib's errors."""
    if operation in GET_OPERATIONS:
        query = urllib.parse.urlencode({k: str(v) for k, v in fields.items()})
        req = urllib.request.Request(f"{url}/v1/{operation}" + (f"?{query}" if query else ""))
    else:
        req = urllib.request.Request(
            f"{url}/v1/{operation}",
            data=json.dumps(fields).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
    with urllib.request.urlopen(req, timeout=timeout) as answer:
        return json.loads(answer.read())


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    try:
        url, operation, fields = parse_args(argv)
    except ValueError as exc:
        print(f"minikafka fault: {exc}\n{USAGE}", file=sys.stderr)
        return 2
    try:
        answer = request(url, operation, fields)
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace").strip()
        try:
            message = json.loads(body)["error"]
        except (ValueError, KeyError, TypeError):
            message = body
        print(f"minikafka fault: {exc.code}: {message}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"minikafka fault: cannot reach the control plane at {url}: {exc}", file=sys.stderr)
        return 3
    print(json.dumps(answer, indent=2))
    return 0


class FaultClient:
    """``FaultInjector``'s methods over HTTP, for a broker in another process or container:
    ``FaultClient("http://127.0.0.1:9644").error("Produce", "NOT_LEADER_OR_FOLLOWER")``.
    Raises ``urllib.error.HTTPError`` when the broker refuses a request (4xx)."""

    def __init__(self, url: str = DEFAULT_URL, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def crash_restart(self, *, down_s: float | None = None) -> Any:
        fields = {} if down_s is None else {"down_s": down_s}
        return request(self.url, "crash-restart", fields, self.timeout)

    def __getattr__(self, name: str) -> Any:
        from broker.faults import FaultInjector

        by_method = {method: op for op, method in OPERATIONS.items()}
        operation = by_method.get(name)
        if operation is None:
            raise AttributeError(name)
        signature = inspect.signature(getattr(FaultInjector, name))

        def call(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(None, *args, **kwargs)
            fields = {k: v for k, v in bound.arguments.items() if k != "self"}
            answer = request(self.url, operation, fields, self.timeout)
            if isinstance(answer, dict) and answer.get("ok") is True:
                return answer.get("result")
            return answer

        return call
