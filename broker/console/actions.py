"""Changes made from the console's forms, each sent as the Kafka request a client would send.

A form's fields become a CreateTopics, DeleteTopics, IncrementalAlterConfigs,
DeleteRecords, Produce or OffsetCommit request, encoded and run through the broker's own
dispatcher (broker.core.dispatch) as if from a connection on the first listener (in a
simulated cluster, for a partition, its leader's node's), under the console's principal
(the Basic login, else ``User:ANONYMOUS`` as a plaintext client): the same handlers, the
same ACL checks, the same fault rules and request log. Faults are set
through broker.toolkit.faults' operations, and only by a principal that may ALTER the
cluster. Every outcome is an ``Outcome``: the page shows it, a refusal as Kafka's error.

Guarding against forged requests (POST only, same Origin, the form's token) is the
server's (broker.console.server); here is only what each change does.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.core.dispatch import Dispatcher
from broker.core.request_context import RequestContext
from broker.security.acl import ALTER, CLUSTER, CLUSTER_NAME
from broker.security.client_address import java_host_address
from broker.security.principal import ANONYMOUS, KafkaPrincipal
from broker.toolkit.faults import FaultError, FaultInjector, call_operation
from protocol import codec
from protocol.errors import ErrorCode
from protocol.header import RequestHeader
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.delete_records import DELETE_RECORDS
from protocol.messages.delete_topics import DELETE_TOPICS
from protocol.messages.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.produce import PRODUCE
from protocol.primitives import ZERO_UUID
from protocol.records import Record, build_batch
from protocol.schema import Api, Message

if TYPE_CHECKING:
    from broker.config.model import Listener
    from broker.core.state import BrokerState

CLIENT_ID = "minikafka-console"
TIMEOUT_MS = 30_000
MAX_HEADERS = 64
TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC


class ActionError(ValueError):
    """A form that cannot become a request (a field missing or malformed)."""


@dataclass
class Outcome:
    ok: bool
    message: str
    back: str  # the page to return to


@dataclass
class Caller:
    state: BrokerState
    principal: str | None
    peer: str
    faults: FaultInjector | None


async def run(caller: Caller, name: str, form: dict[str, str]) -> Outcome:
    action = ACTIONS.get(name)
    if action is None:
        raise ActionError(f"no action {name!r}")
    return await action(caller, form)


async def kafka_call(
    caller: Caller,
    api: Api,
    version: int,
    request: dict[str, Any],
    leader_of: tuple[str, int] | None = None,
) -> Message:
    """``request`` run as a client's would be: encoded, decoded and handled by the
    dispatcher, under the console's principal; the decoded answer. In a simulated cluster
    a request for ``leader_of`` (topic, partition) reaches its leader's node, as a client's."""
    state = caller.state
    dispatcher = state.dispatcher
    assert isinstance(dispatcher, Dispatcher)
    handler = dispatcher.handler(api.key)
    assert handler is not None, api.name
    principal = ANONYMOUS if caller.principal is None else KafkaPrincipal.parse(caller.principal)
    ctx = RequestContext(
        RequestHeader(api.key, version, 0, CLIENT_ID),
        _listener(state, leader_of),
        f"{caller.peer}:0",
        state,
        principal,
    )
    body = codec.encode_request(api, version, request)
    parts = await dispatcher.call(handler, ctx, memoryview(body))
    if parts is None:
        raise ActionError(f"{api.name}: no answer")
    data = b"".join(bytes(p) for p in parts if isinstance(p, bytes | bytearray))
    return codec.decode_response(api, version, data)


def _listener(state: BrokerState, leader_of: tuple[str, int] | None) -> Listener:
    first = state.config.listeners[0]
    cluster = state.cluster
    if cluster is None or leader_of is None:
        return first
    info = state.store.topic(leader_of[0])
    if info is None or not 0 <= leader_of[1] < len(info.partitions):
        return first
    node = cluster.leader(info.topic_id, leader_of[1])
    nodes = cluster.listeners.get(first.name, [])
    if node not in cluster.node_ids or cluster.node_ids.index(node) >= len(nodes):
        return first  # no leader: the handler answers as to a client
    return nodes[cluster.node_ids.index(node)]


def _error(code: int, message: str | None = None) -> str:
    try:
        name = ErrorCode(code).name
    except ValueError:
        name = str(code)
    return f"{name}: {message}" if message else name


def _field(form: dict[str, str], name: str) -> str:
    value = form.get(name, "").strip()
    if not value:
        raise ActionError(f"{name} is required")
    return value


def _number(form: dict[str, str], name: str, default: int | None = None) -> int:
    text = form.get(name, "").strip()
    if not text and default is not None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ActionError(f"{name} must be an integer, got {text[:40]!r}") from None


def _pairs(text: str, what: str) -> list[tuple[str, str]]:
    """``name=value`` lines (blank lines skipped)."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise ActionError(f"{what}: {line[:60]!r} is not name=value")
        out.append((name.strip(), value))
    return out


def _topic_page(topic: str) -> str:
    from broker.console.pages import part

    return f"/topics/{part(topic)}"


# -- topics ----------------------------------------------------------------------------------


async def create_topic(caller: Caller, form: dict[str, str]) -> Outcome:
    name = _field(form, "name")
    configs = [{"name": k, "value": v} for k, v in _pairs(form.get("configs", ""), "configs")]
    topic = {
        "name": name,
        "num_partitions": _number(form, "partitions", -1),
        "replication_factor": -1,
        "assignments": [],
        "configs": configs,
    }
    answer = await kafka_call(
        caller,
        CREATE_TOPICS,
        7,
        {"topics": [topic], "timeout_ms": TIMEOUT_MS, "validate_only": False},
    )
    result = answer.topics[0]
    if result.error_code:
        return Outcome(False, _error(result.error_code, result.error_message), "/topics")
    return Outcome(
        True, f"created topic {name} ({result.num_partitions} partitions)", _topic_page(name)
    )


async def delete_topic(caller: Caller, form: dict[str, str]) -> Outcome:
    name = _field(form, "name")
    if form.get("confirm", "").strip() != name:
        return Outcome(False, "type the topic's name to confirm its deletion", _topic_page(name))
    answer = await kafka_call(
        caller,
        DELETE_TOPICS,
        6,
        {"topics": [{"name": name, "topic_id": ZERO_UUID}], "timeout_ms": TIMEOUT_MS},
    )
    result = answer.responses[0]
    if result.error_code:
        return Outcome(False, _error(result.error_code, result.error_message), _topic_page(name))
    return Outcome(True, f"deleted topic {name}", "/topics")


async def alter_config(caller: Caller, form: dict[str, str]) -> Outcome:
    topic = _field(form, "topic")
    name = _field(form, "config")
    delete = form.get("op") == "delete"
    value = None if delete else form.get("value", "")
    answer = await kafka_call(
        caller,
        INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": TOPIC_RESOURCE,
                    "resource_name": topic,
                    "configs": [{"name": name, "config_operation": int(delete), "value": value}],
                }
            ],
            "validate_only": False,
        },
    )
    result = answer.responses[0]
    if result.error_code:
        return Outcome(False, _error(result.error_code, result.error_message), _topic_page(topic))
    done = f"removed {name}" if delete else f"set {name}={value}"
    return Outcome(True, f"{done} on topic {topic}", _topic_page(topic))


async def delete_records(caller: Caller, form: dict[str, str]) -> Outcome:
    topic = _field(form, "topic")
    partition = _number(form, "partition")
    offset = _number(form, "offset", -1)  # -1: up to the high watermark, as Kafka reads it
    answer = await kafka_call(
        caller,
        DELETE_RECORDS,
        2,
        {
            "topics": [
                {"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}
            ],
            "timeout_ms": TIMEOUT_MS,
        },
        (topic, partition),
    )
    result = answer.topics[0].partitions[0]
    if result.error_code:
        return Outcome(False, _error(result.error_code), _topic_page(topic))
    return Outcome(
        True,
        f"deleted records of {topic}-{partition}: log start now {result.low_watermark}",
        _topic_page(topic),
    )


# -- records ---------------------------------------------------------------------------------


async def produce(caller: Caller, form: dict[str, str]) -> Outcome:
    topic = _field(form, "topic")
    partition = _number(form, "partition", 0)
    back = f"{_topic_page(topic)}/{partition}"
    key = form.get("key", "").encode() if form.get("key") else None
    value = None if form.get("null_value") else form.get("value", "").encode()
    headers = [(k, v.encode()) for k, v in _pairs(form.get("headers", ""), "headers")]
    if len(headers) > MAX_HEADERS:
        raise ActionError(f"at most {MAX_HEADERS} headers")
    batch = build_batch([Record(0, 0, key, value, tuple(headers))])
    answer = await kafka_call(
        caller,
        PRODUCE,
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": TIMEOUT_MS,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        },
        (topic, partition),
    )
    result = answer.responses[0].partition_responses[0]
    if result.error_code:
        return Outcome(False, _error(result.error_code, result.error_message), back)
    return Outcome(True, f"produced to {topic}-{partition} at offset {result.base_offset}", back)


# -- groups ----------------------------------------------------------------------------------


async def reset_offsets(caller: Caller, form: dict[str, str]) -> Outcome:
    """kafka-consumer-groups --reset-offsets --execute: only for a group without members,
    to the log start, the log end or an offset (clamped to the log, as the tool does)."""
    from broker.console.pages import part

    group = _field(form, "group")
    back = f"/groups/{part(group)}"
    topic = _field(form, "topic")
    to = form.get("to", "earliest")
    if to not in ("earliest", "latest", "offset"):
        raise ActionError("to must be earliest, latest or offset")
    state = caller.state
    coordinator = state.groups
    classic = coordinator.describe(group)
    consumer = coordinator.consumer.groups.get(group)
    members = (len(classic.members) if classic else 0) + (len(consumer.members) if consumer else 0)
    if members:
        current = (consumer.state.value if consumer else None) or (
            classic.state.value if classic else ""
        )
        return Outcome(
            False,
            f"group {group} has {members} member(s) (state {current}): offsets can be reset "
            "only when the group is inactive, as kafka-consumer-groups refuses too",
            back,
        )
    info = state.store.topic(topic)
    if info is None:
        return Outcome(False, _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), back)
    wanted = form.get("partition", "").strip()
    logs = info.partitions
    if wanted:
        index = _number(form, "partition")
        if not 0 <= index < len(logs):
            return Outcome(False, _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), back)
        logs = [logs[index]]
    offset = _number(form, "offset", 0) if to == "offset" else 0
    partitions = []
    for plog in logs:
        if to == "earliest":
            target = plog.log_start_offset
        elif to == "latest":
            target = plog.high_watermark
        else:
            target = max(plog.log_start_offset, min(offset, plog.high_watermark))
        partitions.append(
            {
                "partition_index": plog.partition,
                "committed_offset": target,
                "committed_leader_epoch": -1,
                "committed_metadata": "",
            }
        )
    answer = await kafka_call(
        caller,
        OFFSET_COMMIT,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": topic, "partitions": partitions}],
        },
    )
    errors = [p.error_code for t in answer.topics for p in t.partitions if p.error_code]
    if errors:
        return Outcome(False, _error(errors[0]), back)
    shown = ", ".join(f"{p['partition_index']}: {p['committed_offset']}" for p in partitions)
    return Outcome(True, f"offsets of {group} on {topic} reset to {shown}", back)


# -- faults ----------------------------------------------------------------------------------


async def fault(caller: Caller, form: dict[str, str]) -> Outcome:
    """A fault operation (broker.toolkit.faults.OPERATIONS) with a JSON object of arguments:
    what the control plane takes, for a principal that may ALTER the cluster."""
    faults = caller.faults
    if faults is None:
        return Outcome(False, "this broker has no fault injection", "/faults")
    state = caller.state
    if state.authorizer is not None and not state.authorizer.authorize(
        caller.principal or str(ANONYMOUS),
        java_host_address(caller.peer),
        ALTER,
        CLUSTER,
        CLUSTER_NAME,
        log_denied=True,
    ):
        return Outcome(False, _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "/faults")
    operation = _field(form, "operation")
    text = form.get("args", "").strip() or "{}"
    try:
        args = json.loads(text)
    except ValueError as exc:
        raise ActionError(f"arguments are not JSON: {exc}") from None
    if not isinstance(args, dict):
        raise ActionError("arguments must be a JSON object")
    try:
        result = call_operation(faults, operation, args)
    except FaultError as exc:
        return Outcome(False, str(exc), "/faults")
    shown = "" if result is None else f": {json.dumps(result, default=str)[:500]}"
    return Outcome(True, f"{operation} done{shown}", "/faults")


def request_tail(faults: FaultInjector | None, since: float, limit: int = 200) -> dict[str, Any]:
    """Logged requests after ``since`` (their times), oldest first, at most ``limit``."""
    if faults is None:
        return {"on": False, "entries": [], "now": time.time()}
    try:
        entries = faults.requests()
    except FaultError:
        return {"on": False, "entries": [], "now": time.time()}
    newer = [e for e in entries if e["time"] > since][-limit:]
    return {
        "on": True,
        "entries": [
            {
                "time": e["time"],
                "api": e["api"],
                "version": e["api_version"],
                "client_id": e["client_id"],
                "peer": e["peer"],
                "request": json.dumps(e["request"], default=str)[:300],
            }
            for e in newer
        ],
    }


ACTIONS = {
    "create-topic": create_topic,
    "delete-topic": delete_topic,
    "alter-config": alter_config,
    "delete-records": delete_records,
    "produce": produce,
    "reset-offsets": reset_offsets,
    "fault": fault,
}
