"""``minikafka fault OPERATION [--field value]...``: the control plane from a shell.

For Docker users and clients in any language: each operation of broker.toolkit.faults.OPERATIONS
(plus ``crash-restart``) becomes an HTTP request to the broker's control listener
(``minikafka.control.listener``). Field names are written ``--client-id`` or ``--client_id``;
values are read as JSON when they parse (``3``, ``0.5``, ``true``) and as text otherwise.

    minikafka fault error --api Produce --error NOT_LEADER_OR_FOLLOWER --count 2
    minikafka fault drop --api Produce --count 1
    minikafka fault crash-restart --down-s 0.5
    minikafka fault status

Every request carries ``Authorization: Bearer <token>``: the token given with ``--token`` or
``$MINIKAFKA_CONTROL_TOKEN``, else the one the broker wrote to ``control.token`` in its data
directory (``--data-dir``, else ``$KAFKA_LOG_DIRS``, else /tmp/kafka-logs, log.dirs' default).

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

from broker.toolkit.faults import HOST_OPERATIONS, OPERATIONS, FaultInjector, operation_fields

DEFAULT_URL = "http://127.0.0.1:9644"
URL_ENV = "MINIKAFKA_CONTROL_URL"
TOKEN_ENV = "MINIKAFKA_CONTROL_TOKEN"
TOKEN_FILE = "control.token"
# log.dirs as the broker reads it from the environment, and its default.
DATA_DIR_ENV = "KAFKA_LOG_DIRS"
DEFAULT_DATA_DIR = "/tmp/kafka-logs"
GET_OPERATIONS = ("status", "requests")
ALL_OPERATIONS = (*OPERATIONS, *HOST_OPERATIONS)

USAGE = f"""usage: minikafka fault [--url URL] [--token TOKEN | --data-dir DIR] OPERATION \
[--field value]...

operations: {", ".join(ALL_OPERATIONS)}
URL defaults to ${URL_ENV} or {DEFAULT_URL} (the broker's minikafka.control.listener).
TOKEN defaults to ${TOKEN_ENV}, else DIR/{TOKEN_FILE}; DIR (the broker's log.dirs) to
${DATA_DIR_ENV} or {DEFAULT_DATA_DIR}.
'minikafka fault --help' lists each operation's fields."""


def operations_help() -> str:
    """Each operation with its fields (from FaultInjector's signatures) and its summary."""
    lines = ["operations (fields in [] are optional):"]
    for name in OPERATIONS:
        flags = []
        for field, param in operation_fields(name).items():
            flag = f"--{field.replace('_', '-')} {field.upper()}"
            flags.append(flag if param.default is param.empty else f"[{flag}]")
        lines.append(f"  {name} {' '.join(flags)}".rstrip())
        doc = inspect.getdoc(getattr(FaultInjector, OPERATIONS[name])) or ""
        summary = " ".join(doc.split("\n\n")[0].split()).replace("``", "")
        if summary:
            lines.append(f"      {summary}")
    lines.append("  crash-restart [--down-s DOWN_S]")
    lines.append("      Crash as SIGKILL would, stay down DOWN_S seconds, start again.")
    return "\n".join(lines)


def parse_args(argv: list[str]) -> tuple[str, str | None, str, dict[str, Any]]:
    """(url, token, operation, fields); ValueError with a message for a bad command line."""
    url = os.environ.get(URL_ENV, DEFAULT_URL)
    token: str | None = None
    data_dir: str | None = None
    args = list(argv)
    while args[:1] in (["--url"], ["--token"], ["--data-dir"]):
        if len(args) < 2:
            raise ValueError(f"{args[0]} needs a value")
        if args[0] == "--url":
            url = args[1]
        elif args[0] == "--token":
            token = args[1]
        else:
            data_dir = args[1]
        args = args[2:]
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
    return url.rstrip("/"), find_token(token, data_dir), operation, fields


def find_token(
    token: str | None = None, data_dir: str | os.PathLike[str] | None = None
) -> str | None:
    """The control plane's token: given, else $MINIKAFKA_CONTROL_TOKEN, else the broker's
    control.token (in data_dir, $KAFKA_LOG_DIRS or /tmp/kafka-logs); None when none is found
    (the broker then answers 401, which names the file)."""
    if token:
        return token
    if data_dir is None:
        if os.environ.get(TOKEN_ENV):
            return os.environ[TOKEN_ENV]
        data_dir = os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR
    try:
        with open(os.path.join(data_dir, TOKEN_FILE), encoding="utf-8") as file:
            return file.read().strip() or None
    except OSError:
        return None


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def request(
    url: str,
    operation: str,
    fields: dict[str, Any],
    timeout: float = 30.0,
    token: str | None = None,
) -> Any:
    """Send one operation; returns the decoded answer or raises urllib's errors."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if operation in GET_OPERATIONS:
        query = urllib.parse.urlencode({k: str(v) for k, v in fields.items()})
        req = urllib.request.Request(
            f"{url}/v1/{operation}" + (f"?{query}" if query else ""), headers=headers
        )
    else:
        req = urllib.request.Request(
            f"{url}/v1/{operation}",
            data=json.dumps(fields).encode(),
            headers={**headers, "Content-Type": "application/json"},
            method="POST",
        )
    with urllib.request.urlopen(req, timeout=timeout) as answer:
        return json.loads(answer.read())


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(f"{USAGE}\n\n{operations_help()}")
        return 0
    try:
        url, token, operation, fields = parse_args(argv)
    except ValueError as exc:
        print(f"minikafka fault: {exc}\n{USAGE}", file=sys.stderr)
        return 2
    try:
        answer = request(url, operation, fields, token=token)
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
    The token is ``token``, else found as ``minikafka fault`` finds it (``data_dir``: the
    broker's log.dirs). Raises ``urllib.error.HTTPError`` when the broker refuses a request
    (4xx)."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        timeout: float = 30.0,
        *,
        token: str | None = None,
        data_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.token = find_token(token, data_dir)

    def crash_restart(self, *, down_s: float | None = None) -> Any:
        fields = {} if down_s is None else {"down_s": down_s}
        return request(self.url, "crash-restart", fields, self.timeout, self.token)

    def __getattr__(self, name: str) -> Any:
        from broker.toolkit.faults import FaultInjector

        by_method = {method: op for op, method in OPERATIONS.items()}
        operation = by_method.get(name)
        if operation is None:
            raise AttributeError(name)
        signature = inspect.signature(getattr(FaultInjector, name))

        def call(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(None, *args, **kwargs)
            fields = {k: v for k, v in bound.arguments.items() if k != "self"}
            answer = request(self.url, operation, fields, self.timeout, self.token)
            if isinstance(answer, dict) and answer.get("ok") is True:
                return answer.get("result")
            return answer

        return call
