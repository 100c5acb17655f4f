"""Fault injection: make the broker misbehave on purpose, for tests of client code (issue 15).

The same operations are offered in-process (``FaultInjector`` methods), over HTTP
(broker.toolkit.control_http) and from the command line (``minikafka fault``); ``OPERATIONS`` names
them once for all three. What they do:

- ``error``: answer the next ``count`` requests of an API with an error code, before the work
  (nothing happens) or after it (the work is done and the answer says it failed: the lost-ACK
  case idempotent producers exist for). Produce, Fetch, ListOffsets and OffsetCommit carry the
  error per partition, only on the partitions a topic/partition scope names, as Kafka's
  ReplicaManager does for a partition it does not lead; other APIs get the whole-request
  answer of Kafka's ``AbstractRequest.getErrorResponse``.
- ``drop``: do the work, send no answer, close the connection after ``close_after_ms``.
- ``delay``: hold the answer ``delay_ms`` after the work.
- ``throttle``: set ``throttle_time_ms`` in the answer (KIP-219 clients back off by it).
- ``offline``/``online``: Metadata shows the partition LEADER_NOT_AVAILABLE with no leader and
  Produce, Fetch and ListOffsets get NOT_LEADER_OR_FOLLOWER for it, as Kafka answers when the
  partition's leader is gone (KRaftMetadataCache, ReplicaManager.getPartitionOrError).
- ``broker-stop``/``broker-start``: stop a simulated cluster's node (minikafka.cluster.size)
  or start it again; see broker.cluster.state for what clients then see.
- ``broker-isolate``: a node loses the controller and its peers while its ports stay open
  (the zombie leader): fenced, it answers clients from its stale view until ``broker-start``
  (it rejoins) or ``broker-stop``.
- ``replication-delay``: a simulated cluster's followers fetch what their leaders append
  ``delay_ms`` later (0: at once), so high watermarks and acks=all answers trail by it
  (broker.cluster.replication).
- ``close_connections``: close every client connection now.
- ``refuse_connections``: accept and at once close new connections for ``duration_s``.
- ``log_requests`` / ``requests``: record each request (API, version, client id, decoded
  fields; record batches summarised) to assert on what a client sent.
- ``clear``: remove one rule or every fault; normal service resumes at once.

Rules are scoped (API, client id, topic, partition) and expire (``count`` uses, ``duration_s``).
When no fault is set and no request log is kept, ``engaged`` is False and the dispatcher
skips this module entirely. Crashing and restarting the broker is the host's job
(broker.toolkit.host.BrokerHost.crash_restart); the control plane exposes it next to these.

Deviations from Kafka: ``throttle`` sets the field but does not mute the connection after
the answer (Kafka does since KIP-219); clients that honour the field back off anyway. A
Metadata request under ``error`` is still served first (auto-creation may happen), then
answered with the error.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.cluster.state import UnknownNode
from broker.core.dispatch import CloseConnection
from broker.toolkit import fault_responses
from protocol import codec
from protocol.api_keys import ALL_APIS
from protocol.codec import Encoded
from protocol.errors import ErrorCode
from protocol.messages.metadata import METADATA
from protocol.primitives import Reader
from protocol.records import CorruptBatchError, iter_batches
from protocol.schema import Api, Message

if TYPE_CHECKING:
    from broker.cluster.replication import Replication
    from broker.core.dispatch import Dispatcher, Handler
    from broker.core.request_context import RequestContext
    from broker.core.state import BrokerState, NodeSwitch

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
ACTIONS = ("error", "drop", "delay", "throttle")
DEFAULT_LOG_ENTRIES = 10_000
# Kafka's error codes run from -1 (UNKNOWN_SERVER_ERROR) to the low hundreds (Errors.java).
_ERROR_CODE_RANGE = range(-1, 1000)


class FaultError(ValueError):
    """Arguments a fault cannot be built from; the control plane answers 400 with the text."""


def resolve_api(value: object) -> Api:
    """An API by Kafka's name (``Produce``, case and ``_`` insensitive) or key."""
    if isinstance(value, int) and not isinstance(value, bool):
        api = ALL_APIS.get(value)
        if api is None:
            raise FaultError(f"unknown api key {value}")
        return api
    if isinstance(value, str):
        wanted = value.replace("_", "").replace("-", "").lower()
        for api in ALL_APIS.values():
            if api.name.lower() == wanted:
                return api
        if value.strip().isdigit():
            return resolve_api(int(value))
    raise FaultError(f"unknown api {value!r} (a Kafka API name such as Produce, or its key)")


def resolve_error(value: object) -> int:
    """An error code by Kafka's name (``NOT_LEADER_OR_FOLLOWER``) or number."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value not in _ERROR_CODE_RANGE or value == 0:
            raise FaultError(f"error code {value} is not a Kafka error")
        return value
    if isinstance(value, str):
        name = value.strip().upper()
        if name in ErrorCode.__members__ and name != "NONE":
            return int(ErrorCode[name])
        if name.lstrip("-").isdigit():
            return resolve_error(int(name))
    raise FaultError(f"unknown error {value!r} (a Kafka error name or code)")


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FaultError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise FaultError(f"{name} must be at least {minimum}, got {value}")
    return value


def check_seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FaultError(f"{name} must be a number of seconds, got {value!r}")
    if not 0 < value <= 86_400:
        raise FaultError(f"{name} must be above 0 and at most 86400, got {value}")
    return float(value)


def _optional_str(name: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise FaultError(f"{name} must be a string, got {value!r}")


@dataclass(slots=True)
class Rule:
    id: int
    action: str
    api: Api
    count: int | None
    expires_at: float | None
    client_id: str | None = None
    topic: str | None = None
    partition: int | None = None
    error_code: int = 0
    after: bool = False
    delay_ms: int = 0
    throttle_ms: int = 0
    applied: int = 0

    def matches_partition(self, tp: TopicPartition) -> bool:
        return (self.topic is None or tp[0] == self.topic) and (
            self.partition is None or tp[1] == self.partition
        )

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "action": self.action,
            "api": self.api.name,
            "count_left": self.count,
            "applied": self.applied,
        }
        if self.expires_at is not None:
            out["expires_in_s"] = round(max(0.0, self.expires_at - time.monotonic()), 3)
        for key in ("client_id", "topic", "partition"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.action == "error":
            out["error"] = error_name(self.error_code)
            out["when"] = "after" if self.after else "before"
        if self.action in ("drop", "delay"):
            out["delay_ms"] = self.delay_ms
        if self.action == "throttle":
            out["throttle_ms"] = self.throttle_ms
        return out


class FaultInjector:
    """Every fault set on one broker; survives a crash and restart of that broker."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._ids = 0
        self.rules: list[Rule] = []
        self.offline: dict[TopicPartition, float | None] = {}
        self.refuse_until = 0.0
        self._log: collections.deque[dict[str, Any]] | None = None
        self._state: BrokerState | None = None
        # The dispatcher's fast path: False means no fault and no request log.
        self.engaged = False

    def attach(self, state: BrokerState, dispatcher: Dispatcher) -> None:
        """Called by each broker that starts with these faults (again after a restart): from
        now on the dispatcher runs every handler through ``around`` while ``engaged``."""
        self._state = state
        dispatcher.wrapper = self

    def refused_connection(self) -> asyncio.BaseProtocol:
        """The protocol for a connection accepted while ``refusing()``."""
        return RefusedConnection()

    def _changed(self) -> None:
        self.engaged = bool(self.rules or self.offline or self._log is not None)

    # --- operations (in-process API; OPERATIONS exposes them to HTTP and the CLI) --------

    def error(
        self,
        api: object,
        error: object,
        *,
        count: int | None = 1,
        when: str = "before",
        client_id: str | None = None,
        topic: str | None = None,
        partition: int | None = None,
        duration_s: float | None = None,
    ) -> int:
        """Answer matching requests with ``error``, ``when`` "before" or "after" the work."""
        if when not in ("before", "after"):
            raise FaultError(f"when must be 'before' or 'after', got {when!r}")
        rule = self._rule("error", api, count, duration_s, client_id, topic, partition)
        if not fault_responses.supports_whole_error(rule.api):
            raise FaultError(f"{rule.api.name} answers have no error code to inject")
        rule.error_code = resolve_error(error)
        rule.after = when == "after"
        return self._add(rule)

    def drop(
        self,
        api: object,
        *,
        count: int | None = 1,
        close_after_ms: int = 100,
        client_id: str | None = None,
        topic: str | None = None,
        partition: int | None = None,
        duration_s: float | None = None,
    ) -> int:
        """Do the work, send no answer, close the connection ``close_after_ms`` later."""
        rule = self._rule("drop", api, count, duration_s, client_id, topic, partition)
        rule.delay_ms = _int("close_after_ms", close_after_ms, 0)
        return self._add(rule)

    def delay(
        self,
        api: object,
        delay_ms: int,
        *,
        count: int | None = None,
        client_id: str | None = None,
        topic: str | None = None,
        partition: int | None = None,
        duration_s: float | None = None,
    ) -> int:
        """Hold matching answers ``delay_ms`` after the work."""
        rule = self._rule("delay", api, count, duration_s, client_id, topic, partition)
        rule.delay_ms = _int("delay_ms", delay_ms, 0)
        return self._add(rule)

    def throttle(
        self,
        api: object,
        throttle_ms: int,
        *,
        count: int | None = None,
        client_id: str | None = None,
        duration_s: float | None = None,
    ) -> int:
        """Answer with ``throttle_time_ms`` set (versions that carry it)."""
        rule = self._rule("throttle", api, count, duration_s, client_id, None, None)
        rule.throttle_ms = _int("throttle_ms", throttle_ms, 0)
        return self._add(rule)

    def take_offline(self, topic: str, partition: int, *, duration_s: float | None = None) -> None:
        """The partition has no leader until ``bring_online`` (or ``duration_s`` passes)."""
        if not isinstance(topic, str) or not topic:
            raise FaultError(f"topic must be a topic name, got {topic!r}")
        _int("partition", partition, 0)
        if self._state is not None:
            # A typo would otherwise "take offline" nothing, and the test pass for no reason.
            info = self._state.store.topic(topic)
            if info is None:
                raise FaultError(f"no topic {topic!r} on this broker")
            if partition >= len(info.partitions):
                raise FaultError(
                    f"topic {topic!r} has {len(info.partitions)} partition(s); "
                    f"no partition {partition}"
                )
        expires = (
            None if duration_s is None else self._clock() + check_seconds("duration_s", duration_s)
        )
        self.offline[(topic, partition)] = expires
        log.info("fault: partition %s-%d is offline", topic, partition)
        self._changed()

    def bring_online(self, topic: str, partition: int) -> bool:
        gone = self.offline.pop((topic, partition), "absent") != "absent"
        log.info("fault: partition %s-%d is online", topic, partition)
        self._changed()
        return gone

    def close_connections(self) -> int:
        """Close every client connection now (call on the broker's event loop)."""
        if self._state is None:
            return 0
        conns = list(self._state.connections)
        for conn in conns:
            conn.close()
        log.info("fault: closed %d client connection(s)", len(conns))
        return len(conns)

    def broker_stop(self, node: int) -> bool:
        """Stop a simulated cluster's node: its ports close, its connections drop, the
        partitions it led elect new leaders (False if it was stopped already)."""
        return self._nodes().stop_node(_int("node", node, 0))

    def broker_start(self, node: int) -> bool:
        """Start a stopped node again on its ports; it rejoins the ISRs."""
        return self._nodes().start_node(_int("node", node, 0))

    def broker_isolate(self, node: int) -> bool:
        """Isolate a simulated cluster's node: its broker session expires (its leaderships
        move with an epoch bump, it leaves the ISRs, it stops replicating) while its ports
        stay open and it answers from its stale view; ``broker_start`` ends it (False if it
        was stopped or isolated already)."""
        return self._nodes().isolate_node(_int("node", node, 0))

    def replication_delay(self, delay_ms: int) -> int:
        """Followers trail their leaders by ``delay_ms`` from now on; the previous delay."""
        replication = self._replication()
        previous = replication.delay_ms
        replication.delay_ms = _int("delay_ms", delay_ms, 0)
        log.info("fault: followers trail their leaders by %d ms", replication.delay_ms)
        return previous

    def _replication(self) -> Replication:
        if self._state is None or self._state.replication is None:
            self._nodes()  # the reason: not running, or not a cluster
            raise FaultError("not a cluster")
        return self._state.replication

    def _nodes(self) -> NodeSwitch:
        if self._state is None or self._state.nodes is None:
            raise FaultError("the broker is not running")
        if self._state.cluster is None:
            raise FaultError("not a cluster: start it with minikafka.cluster.size above 1")
        return _CheckedNodes(self._state.nodes)

    def refuse_connections(self, duration_s: float) -> None:
        """New connections are accepted and closed at once for ``duration_s`` seconds."""
        self.refuse_until = self._clock() + check_seconds("duration_s", duration_s)
        log.info("fault: refusing connections for %ss", duration_s)

    def log_requests(self, *, max_entries: int = DEFAULT_LOG_ENTRIES) -> None:
        """Start (or restart, empty) the request log."""
        self._log = collections.deque(maxlen=_int("max_entries", max_entries, 1))
        self._changed()
        log.info("fault: logging requests (the last %d kept)", max_entries)

    def requests(self, *, api: object = None, client_id: str | None = None) -> list[dict[str, Any]]:
        """Logged requests, oldest first, optionally only one API or client id."""
        if self._log is None:
            raise FaultError(
                "the request log is off: start it first (minikafka fault log-requests, "
                "POST /v1/log-requests or faults.log_requests())"
            )
        key = None if api is None else resolve_api(api).key
        client_id = _optional_str("client_id", client_id)
        return [
            e
            for e in self._log
            if (key is None or e["api_key"] == key)
            and (client_id is None or e["client_id"] == client_id)
        ]

    def clear(self, *, id: int | None = None) -> int:
        """Remove rule ``id``, or every fault (rules, offline partitions, refusal) and the
        request log. Returns how many things were removed."""
        if id is not None:
            _int("id", id, 1)
            before = len(self.rules)
            self.rules = [r for r in self.rules if r.id != id]
            if len(self.rules) == before:
                raise FaultError(f"no fault with id {id}")
            self._changed()
            log.info("fault: cleared fault %d", id)
            return 1
        removed = len(self.rules) + len(self.offline) + (self.refuse_until > self._clock())
        self.rules = []
        self.offline = {}
        self.refuse_until = 0.0
        self._log = None
        if self._state is not None and self._state.replication is not None:
            removed += self._state.replication.delay_ms > 0
            self._state.replication.delay_ms = 0
        self._changed()
        log.info("fault: cleared every fault")
        return removed

    def status(self) -> dict[str, Any]:
        self._expire(self._clock())
        return {
            "faults": [r.describe() for r in self.rules],
            "offline": [{"topic": t, "partition": p} for t, p in sorted(self.offline)],
            "refusing_connections_s": round(max(0.0, self.refuse_until - self._clock()), 3),
            "request_log": None if self._log is None else len(self._log),
        }

    # --- rule bookkeeping -------------------------------------------------------------

    def _rule(
        self,
        action: str,
        api: object,
        count: int | None,
        duration_s: float | None,
        client_id: str | None,
        topic: str | None,
        partition: int | None,
    ) -> Rule:
        if count is not None:
            _int("count", count, 1)
        expires = (
            None if duration_s is None else self._clock() + check_seconds("duration_s", duration_s)
        )
        if partition is not None:
            _int("partition", partition, 0)
            if topic is None:
                raise FaultError("partition needs a topic")
        self._ids += 1
        return Rule(
            id=self._ids,
            action=action,
            api=resolve_api(api),
            count=count,
            expires_at=expires,
            client_id=_optional_str("client_id", client_id),
            topic=_optional_str("topic", topic),
            partition=partition,
        )

    def _add(self, rule: Rule) -> int:
        self.rules.append(rule)
        log.info("fault set: %s", rule.describe())
        self._changed()
        return rule.id

    def _expire(self, now: float) -> None:
        if any(r.expires_at is not None and r.expires_at <= now for r in self.rules):
            self.rules = [r for r in self.rules if r.expires_at is None or r.expires_at > now]
            self._changed()
        if any(t is not None and t <= now for t in self.offline.values()):
            self.offline = {k: t for k, t in self.offline.items() if t is None or t > now}
            self._changed()

    def _use(self, rule: Rule) -> None:
        rule.applied += 1
        if rule.count is not None:
            rule.count -= 1
            if rule.count <= 0:
                self.rules.remove(rule)
                self._changed()

    def refusing(self) -> bool:
        return self.refuse_until > self._clock()

    # --- the dispatcher's hook ----------------------------------------------------------

    async def around(self, handler: Handler, ctx: RequestContext, request: Message) -> Any:
        """Run ``handler`` under the faults that match this request."""
        self._expire(self._clock())
        api = handler.api
        version = ctx.version
        store = ctx.state.store
        entry = self._record(ctx, api, request) if self._log is not None else None

        outcome: Rule | None = None
        delay: Rule | None = None
        throttle: Rule | None = None
        pairs: list[TopicPartition] | None = None
        for rule in list(self.rules):
            if rule.api.key != api.key or (
                rule.client_id is not None and rule.client_id != ctx.client_id
            ):
                continue
            if rule.topic is not None:
                if api.key in fault_responses.PARTITIONED:
                    if pairs is None:
                        pairs = fault_responses.request_partitions(api, version, request, store)
                    if not any(rule.matches_partition(tp) for tp in pairs):
                        continue
                elif rule.topic not in fault_responses.request_topics(api, version, request, store):
                    continue
            if rule.action in ("error", "drop") and outcome is None:
                outcome = rule
            elif rule.action == "delay" and delay is None:
                delay = rule
            elif rule.action == "throttle" and throttle is None:
                throttle = rule
        for used in (outcome, delay, throttle):
            if used is not None:
                self._use(used)

        before: dict[TopicPartition, int] = {}
        after: dict[TopicPartition, int] = {}
        whole: int | None = None
        top_level: int | None = None
        if self.offline and api.key in fault_responses.OFFLINE_APIS:
            if pairs is None:
                pairs = fault_responses.request_partitions(api, version, request, store)
            for tp in pairs:
                if tp in self.offline:
                    before[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
        error_rule = outcome if outcome is not None and outcome.action == "error" else None
        if error_rule is not None:
            code = error_rule.error_code
            if api.key in fault_responses.PARTITIONED:
                if pairs is None:
                    pairs = fault_responses.request_partitions(api, version, request, store)
                target = after if error_rule.after else before
                for tp in pairs:
                    if error_rule.matches_partition(tp):
                        target[tp] = code
                if error_rule.topic is None:
                    # FetchRequest.getErrorResponse sets the top-level code as well.
                    top_level = code
            else:
                whole = code
            log.info(
                "fault %d: answering %s v%d (%s) with %s %s the work",
                error_rule.id,
                api.name,
                version,
                ctx.describe(),
                error_name(code),
                "after" if error_rule.after else "instead of",
            )
        if entry is not None and outcome is not None:
            entry["fault"] = outcome.describe()

        if whole is not None and error_rule is not None and not error_rule.after:
            response = fault_responses.whole_error_response(api, version, request, whole)
            if response is None:
                raise CloseConnection(
                    f"fault {error_rule.id}: {api.name} v{version} has no error field"
                )
        else:
            response = await self._run(handler, ctx, request, api, version, before, store)
            if whole is not None:
                response = fault_responses.whole_error_response(api, version, request, whole)
                if response is None:
                    raise CloseConnection(f"fault: {api.name} v{version} has no error field")
            errors = {**before, **after}
            if errors or top_level is not None:
                if response is None:
                    # acks=0: Kafka closes the connection when a partition failed.
                    raise CloseConnection(f"fault: {api.name} failed with acks=0")
                if errors:
                    fault_responses.set_partition_errors(
                        api, version, request, response, errors, store
                    )
                if top_level is not None and "error_code" in _fields_at(api, version):
                    fault_responses.put(response, error_code=top_level)
        if api.key == METADATA.key and self.offline and response is not None:
            fault_responses.mark_offline_in_metadata(
                version, response, self.offline, ctx.state.node_id
            )
        if (
            throttle is not None
            and response is not None
            and "throttle_time_ms" in _fields_at(api, version)
        ):
            fault_responses.put(
                response,
                throttle_time_ms=max(throttle.throttle_ms, response.get("throttle_time_ms") or 0),
            )
        if delay is not None:
            await asyncio.sleep(delay.delay_ms / 1000)
        if outcome is not None and outcome.action == "drop":
            log.info(
                "fault %d: dropping the answer to %s v%d (%s)",
                outcome.id,
                api.name,
                version,
                ctx.describe(),
            )
            await asyncio.sleep(outcome.delay_ms / 1000)
            raise CloseConnection(f"fault {outcome.id}: answer to {api.name} dropped")
        return response

    async def _run(
        self,
        handler: Handler,
        ctx: RequestContext,
        request: Message,
        api: Api,
        version: int,
        skip: dict[TopicPartition, int],
        store: Any,
    ) -> Any:
        if skip:
            request = fault_responses.without_partitions(api, version, request, set(skip), store)
            shape = fault_responses.PARTITIONED[api.key]
            if not request.get(shape.req_topics):
                if api.key == 0 and request.get("acks") == 0:
                    return None
                return fault_responses.empty_response(api)
        result: Any = handler.fn(ctx, request)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, Encoded):
            # A cached answer (ApiVersions): decoded, so that faults can change it.
            flexible = api.is_flexible(version)
            result = codec.decode(api.response, version, flexible, Reader(result))
        return result

    # --- the request log ----------------------------------------------------------------

    def _record(self, ctx: RequestContext, api: Api, request: Message) -> dict[str, Any]:
        entry = {
            "time": time.time(),
            "api": api.name,
            "api_key": api.key,
            "api_version": ctx.version,
            "client_id": ctx.client_id,
            "correlation_id": ctx.header.correlation_id,
            "peer": ctx.peer,
            "request": json_safe(request),
        }
        assert self._log is not None
        self._log.append(entry)
        return entry


def _fields_at(api: Api, version: int) -> set[str]:
    return {fl.name for fl in api.response if version in fl.versions}


def json_safe(value: Any, name: str = "") -> Any:
    """A decoded request as JSON values: uuids as text, record batches summarised."""
    if isinstance(value, Message):
        return {k: json_safe(v, k) for k, v in value.__dict__.items()}
    if isinstance(value, list):
        return [json_safe(v, name) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        if name == "records":
            return _summarise_records(value)
        data = bytes(value)
        if len(data) == 16 and name.endswith("id"):
            return str(uuid.UUID(bytes=data))
        return data.hex()
    return value


def _summarise_records(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    batches = []
    try:
        for _pos, h in iter_batches(data):
            batches.append(
                {
                    "producer_id": h.producer_id,
                    "producer_epoch": h.producer_epoch,
                    "base_sequence": h.base_sequence,
                    "records_count": h.records_count,
                    "codec": h.compression,
                    "transactional": h.is_transactional,
                }
            )
    except CorruptBatchError:
        pass
    return {"size": len(data), "batches": batches}


def _signature_params(fn: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    return {n: p for n, p in inspect.signature(fn).parameters.items() if n != "self"}


# Operation name (HTTP path /v1/<name>, ``minikafka fault <name>``) -> FaultInjector method.
OPERATIONS: dict[str, str] = {
    "error": "error",
    "drop": "drop",
    "delay": "delay",
    "throttle": "throttle",
    "offline": "take_offline",
    "online": "bring_online",
    "close-connections": "close_connections",
    "refuse-connections": "refuse_connections",
    "broker-stop": "broker_stop",
    "broker-start": "broker_start",
    "broker-isolate": "broker_isolate",
    "replication-delay": "replication_delay",
    "log-requests": "log_requests",
    "requests": "requests",
    "clear": "clear",
    "status": "status",
}


# Operations of the broker's host rather than of FaultInjector (broker.toolkit.host.BrokerHost).
HOST_OPERATIONS = ("crash-restart",)


def operation_fields(name: str) -> dict[str, inspect.Parameter]:
    """An operation's fields (its method's parameters), for help texts."""
    return _signature_params(getattr(FaultInjector, OPERATIONS[name]))


def call_operation(faults: FaultInjector, name: str, args: dict[str, Any]) -> Any:
    """Run operation ``name`` with JSON arguments; FaultError for unknown names or fields."""
    method_name = OPERATIONS.get(name)
    if method_name is None:
        known = ", ".join([*OPERATIONS, *HOST_OPERATIONS])
        raise FaultError(f"unknown operation {name!r}; known: {known}")
    method = getattr(faults, method_name)
    params = _signature_params(method)
    unknown = sorted(set(args) - set(params))
    if unknown:
        raise FaultError(
            f"{name}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(params)}"
        )
    missing = [
        n for n, p in params.items() if p.default is inspect.Parameter.empty and n not in args
    ]
    if missing:
        raise FaultError(f"{name}: missing field(s) {', '.join(missing)}")
    positional = [args[n] for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    keywords = {n: args[n] for n, p in params.items() if p.kind is p.KEYWORD_ONLY and n in args}
    return method(*positional, **keywords)


class _CheckedNodes:
    """A node id not in the cluster is the caller's mistake: FaultError (HTTP 400)."""

    def __init__(self, nodes: NodeSwitch) -> None:
        self._nodes = nodes

    def stop_node(self, node: int) -> bool:
        try:
            return self._nodes.stop_node(node)
        except UnknownNode as exc:
            raise FaultError(str(exc)) from None

    def start_node(self, node: int) -> bool:
        try:
            return self._nodes.start_node(node)
        except UnknownNode as exc:
            raise FaultError(str(exc)) from None

    def isolate_node(self, node: int) -> bool:
        try:
            return self._nodes.isolate_node(node)
        except UnknownNode as exc:
            raise FaultError(str(exc)) from None


class RefusedConnection(asyncio.Protocol):
    """A connection accepted while ``refuse_connections`` is in force: reset at once, as a
    client sees a broker that is down (the listening socket stays bound for the restart)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        log.info("fault: refused a connection from %s", peer)
        transport.abort()  # type: ignore[attr-defined]
