"""One DEBUG line per request answered (Kafka's kafka.request.logger at DEBUG): the API and
version, the client, the topics named, and the error codes the answer carries.

Built only when the ``broker.requests`` logger is enabled for DEBUG (broker.core.dispatch checks
that once per request), so a broker logging at INFO pays one level check.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.schema import Message

if TYPE_CHECKING:
    from broker.core.request_context import RequestContext
    from protocol.schema import Api

log = logging.getLogger("broker.requests")

# Topic names shown per line; the rest are counted.
MAX_TOPICS = 10
# Nodes of the answer searched for error codes (a Fetch of thousands of partitions).
MAX_NODES = 20_000


def describe(api: Api, ctx: RequestContext, request: Message, response: Any) -> str:
    topics = _topics(request)
    shown = ",".join(topics[:MAX_TOPICS])
    if len(topics) > MAX_TOPICS:
        shown += f",(+{len(topics) - MAX_TOPICS} more)"
    if response is None:
        answer = "no answer"
    else:
        errors = _errors(response)
        answer = (
            "error NONE"
            if not errors
            else "errors "
            + ",".join(f"{name} x{n}" if n > 1 else name for name, n in errors.items())
        )
    return (
        f"request {api.name} v{ctx.version} from client {ctx.client_id!r} (peer {ctx.peer}, "
        f"{ctx.principal}) topics [{shown}]: {answer}"
    )


def _get(node: Any, name: str) -> Any:
    if isinstance(node, Message):
        return node.get(name)
    if isinstance(node, dict):
        return node.get(name)
    return None


def _fields(node: Any) -> dict[str, Any]:
    if isinstance(node, Message):
        return node.__dict__
    if isinstance(node, dict):
        return node
    return {}


def _topics(request: Message) -> list[str]:
    """Names in the request's topic lists (Produce topic_data, Fetch topics, ...)."""
    names: list[str] = []
    for field, value in _fields(request).items():
        if "topic" not in field or not isinstance(value, list):
            continue
        for item in value:
            if isinstance(item, str):
                names.append(item)
                continue
            name = _get(item, "name")
            if name is None:
                name = _get(item, "topic")
            if name is None and isinstance(_get(item, "topic_id"), bytes | bytearray):
                name = "id:" + bytes(_get(item, "topic_id")).hex()[:8]
            if isinstance(name, str):
                names.append(name)
    return names


def _errors(response: Any) -> Counter[str]:
    """Non-zero error codes anywhere in the answer, by name, with how often each occurs."""
    found: Counter[str] = Counter()
    stack = [response]
    visited = 0
    while stack and visited < MAX_NODES:
        node = stack.pop()
        visited += 1
        for field, value in _fields(node).items():
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, Message | dict))
            elif isinstance(value, Message | dict):
                stack.append(value)
            elif field == "error_code" and isinstance(value, int) and value:
                try:
                    found[ErrorCode(value).name] += 1
                except ValueError:
                    found[str(value)] += 1
    return found
