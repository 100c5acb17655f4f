"""CreateTopics, versions 2-7.

Behaviour, in the order Kafka's controller checks (ControllerApis / ReplicationControlManager):
a name given twice -> INVALID_REQUEST; an illegal name -> INVALID_TOPIC_EXCEPTION (Topic.
validate's wording), a name colliding with an existing one once '.' and '_' are unified ->
INVALID_TOPIC_EXCEPTION; an existing topic -> TOPIC_ALREADY_EXISTS; a null, unknown or
invalid config -> INVALID_CONFIG (broker.config.topic_configs); then partitions and replicas:
num_partitions -1 = num.partitions, 0 or below -1 -> INVALID_PARTITIONS; replication
factor 0 or below -1 -> INVALID_REPLICATION_FACTOR, and above the registered nodes as well
(Kafka's "cannot be reached because only 1 broker(s) are registered"); a manual assignment
must number partitions 0..n-1 with registered nodes, each once, the same count for every
partition (INVALID_REPLICA_ASSIGNMENT) and needs num_partitions and replication_factor -1.
validate_only runs every check and creates nothing. v5+ answers carry the partition
count, replication factor and every config with its source; v7 the topic id (a random one
for validate_only, as Kafka).

Limits of Kafka's controller, checked for the whole request (CreateTopicsRequest.
getErrorResponse then gives every topic named, duplicates included, the same answer):
more than 10,000 partitions requested over the distinct names (num_partitions -1 counts
num.partitions) -> POLICY_VIOLATION "Excessively large number of partitions per request."
(ReplicationControlManager.validateTotalNumberOfPartitions, before any other check); the
topics that pass every check needing more than 10,000 metadata records (one per topic, one
per config, one per partition; QuorumController.MAX_RECORDS_PER_USER_OP, a BoundedList
that EventHandlerExceptionInfo turns into) -> POLICY_VIOLATION "Unable to perform
excessively large batch operation.", validate_only included. So one topic gets at most
9,999 partitions.

The directories and files of new partitions are made on a worker thread (broker.runtime.offload),
all of a request's topics in one trip with their fsyncs grouped (Store.prepare_topics): the
loop serves others meanwhile. A name being created meanwhile counts as existing.

A simulated cluster (minikafka.cluster.size) takes default.replication.factor for -1 and
refuses a factor above its running nodes as Kafka does; a manual assignment names its nodes.
Deviation: a single broker takes 1 for -1 whatever default.replication.factor says, since it
keeps one replica (the broker warns at start-up about a larger setting).
Creation completes before the answer: the topic is ready when the answer leaves.
Authorization (with an authorizer), as ControllerApis.createTopics: CREATE on the cluster or
on the topic, else TOPIC_AUTHORIZATION_FAILED "Authorization failed."; those topics, like
duplicated names and __cluster_metadata (INVALID_REQUEST "Creation of internal topic
__cluster_metadata is prohibited.", whatever the ACLs), never reach the controller's checks,
the 10,000-partition limit included. A created topic's configs, partition count and
replication factor are answered only with DESCRIBE_CONFIGS on it, else its
topic_config_error_code is TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from broker.config import topic_configs
from broker.config.topic_configs import InvalidConfigError
from broker.core.request_context import RequestContext
from broker.handlers._admin import collision, topic_name_error
from broker.handlers._assignments import manual_assignment_refusal, replica_count_refusal
from broker.runtime import offload
from broker.security.acl import CLUSTER, CLUSTER_NAME, CREATE, DESCRIBE_CONFIGS, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.primitives import ZERO_UUID
from protocol.schema import Message

API = CREATE_TOPICS
MIN_VERSION = 2
MAX_VERSION = 7

log = logging.getLogger(__name__)

# ReplicationControlManager.MAX_PARTITIONS_PER_BATCH and QuorumController.
# MAX_RECORDS_PER_USER_OP.
MAX_PARTITIONS_PER_BATCH = 10_000
# Topic.CLUSTER_METADATA_TOPIC_NAME: never created by CreateTopics.
METADATA_TOPIC = "__cluster_metadata"
MAX_RECORDS_PER_USER_OP = 10_000
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


@dataclass(frozen=True, slots=True)
class _Plan:
    """A topic that passed every check: what to create."""

    name: str
    count: int
    configs: dict[str, str]
    # The replication factor and, for a manual assignment, each partition's replicas.
    replication_factor: int = 1
    assignments: tuple[tuple[int, ...], ...] = ()

    @property
    def records(self) -> int:
        """The controller records it takes: TopicRecord, ConfigRecords, PartitionRecords."""
        return 1 + len(self.configs) + self.count


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _error(name: str, code: ErrorCode, message: str | None) -> Message:
    return Message(
        name=name,
        topic_id=ZERO_UUID,
        error_code=code,
        error_message=message,
        topic_config_error_code=0,
        num_partitions=-1,
        replication_factor=-1,
        configs=[],
    )


def _partition_count(
    ctx: RequestContext, topic: Message
) -> tuple[int, int, tuple[tuple[int, ...], ...]]:
    """The number of partitions, the replication factor and a manual assignment (by
    partition) to create; raises _Refused as Kafka's controller would."""
    node = ctx.state.node_id
    if topic.assignments:
        if topic.replication_factor != -1:
            raise _Refused(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "A manual partition assignment was specified, but replication factor was "
                "not set to -1.",
            )
        if topic.num_partitions != -1:
            raise _Refused(
                ErrorCode.INVALID_PARTITIONS,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        indexes = sorted(a.partition_index for a in topic.assignments)
        if indexes != list(range(len(indexes))):
            raise _Refused(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Partitions should be numbered 0 to {len(indexes) - 1}, got {indexes}.",
            )
        cluster = ctx.state.cluster
        nodes = (node,) if cluster is None else cluster.node_ids
        for assignment in topic.assignments:
            _check_replicas(list(assignment.broker_ids), nodes)
            count_refusal = replica_count_refusal(
                assignment.broker_ids, len(topic.assignments[0].broker_ids)
            )
            if count_refusal is not None:
                raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, count_refusal)
        by_index = sorted(topic.assignments, key=lambda a: a.partition_index)
        manual = tuple(tuple(a.broker_ids) for a in by_index)
        return len(indexes), len(manual[0]), manual
    count = ctx.state.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    cluster = ctx.state.cluster
    default = 1 if cluster is None else ctx.state.config.default_replication_factor
    replicas = default if topic.replication_factor == -1 else topic.replication_factor
    # ReplicationControlManager: the usable (unfenced) brokers bound the replication factor.
    registered = 1 if cluster is None else len(cluster.live_nodes())
    if replicas <= 0:
        raise _Refused(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if count <= 0:
        raise _Refused(
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    if replicas > registered:
        raise _Refused(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replicas} time(s): The target replication "
            f"factor of {replicas} cannot be reached because only {registered} broker(s) are "
            "registered.",
        )
    return int(count), int(replicas), ()


def _check_replicas(broker_ids: list[int], nodes: Sequence[int]) -> None:
    """A manual assignment: registered nodes, each once."""
    refusal = manual_assignment_refusal(broker_ids, nodes)
    if refusal is not None:
        raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, refusal)


def _requested_partitions(ctx: RequestContext, request: Message, creatable: set[str]) -> int:
    """ReplicationControlManager.validateTotalNumberOfPartitions' upper bound."""
    total = 0
    for topic in request.topics:
        if topic.name not in creatable:
            # ControllerApis drops duplicated, refused and unauthorized names before the
            # controller sees the request.
            continue
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += ctx.state.config.num_partitions
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return int(total)


def _refuse_all(request: Message, message: str) -> Message:
    return Message(
        throttle_time_ms=0,
        topics=[_error(t.name, ErrorCode.POLICY_VIOLATION, message) for t in request.topics],
    )


def _creatable(ctx: RequestContext, counts: Counter[str]) -> set[str]:
    """ControllerApis.createTopics: the names given once, other than the metadata topic,
    that the principal may CREATE (on the cluster, else each topic; a topic's denial is
    logged, the cluster's is not)."""
    allowed = [name for name, n in counts.items() if n == 1 and name != METADATA_TOPIC]
    if ctx.authorized(CREATE, CLUSTER, CLUSTER_NAME, log_denied=False):
        return set(allowed)
    return {name for name in allowed if ctx.authorized(CREATE, TOPIC, name)}


async def handle(ctx: RequestContext, request: Message) -> Message:
    counts = Counter(t.name for t in request.topics)
    creatable = _creatable(ctx, counts)
    if _requested_partitions(ctx, request, creatable) > MAX_PARTITIONS_PER_BATCH:
        log.info("CreateTopics refused: %s (%s)", TOO_MANY_PARTITIONS, ctx.describe())
        return _refuse_all(request, TOO_MANY_PARTITIONS)
    checked = [_check(ctx, topic, counts, creatable) for topic in request.topics]
    if sum(p.records for p in checked if isinstance(p, _Plan)) > MAX_RECORDS_PER_USER_OP:
        log.info("CreateTopics refused: %s (%s)", TOO_MANY_RECORDS, ctx.describe())
        return _refuse_all(request, TOO_MANY_RECORDS)
    plans = [item for item in checked if isinstance(item, _Plan)]
    made = {} if request.validate_only else await _make(ctx, plans)
    results = [item if isinstance(item, Message) else _answer(ctx, item, made) for item in checked]
    return Message(throttle_time_ms=0, topics=results)


def _check(
    ctx: RequestContext, topic: Message, counts: Counter[str], creatable: set[str]
) -> Message | _Plan:
    """Every check of one topic: its error answer, or what to create."""
    state = ctx.state
    name = topic.name
    if counts[name] > 1:
        return _error(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
    if name == METADATA_TOPIC:
        # ControllerApis.createTopics, before authorization.
        return _error(
            name,
            ErrorCode.INVALID_REQUEST,
            f"Creation of internal topic {METADATA_TOPIC} is prohibited.",
        )
    if name not in creatable:
        # ControllerApis.createTopics: CREATE on the cluster or on the topic.
        return _error(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
    reason = topic_name_error(name)
    if reason is not None:
        log.info("CreateTopics %r refused: %s (%s)", name, reason, ctx.describe())
        return _error(name, ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
    if state.store.topic(name) is not None or name in state.store.preparing:
        return _error(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    other = collision(name, state.store.topics())
    if other is not None:
        return _error(
            name,
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic '{name}' collides with existing topic: {other}",
        )
    overrides = {c.name: c.value for c in topic.configs}
    try:
        null = [c.name for c in topic.configs if c.value is None]
        if null:
            raise InvalidConfigError(
                f"Null value not supported for topic configs: {','.join(null)}"
            )
        if len(overrides) != len(topic.configs):
            raise InvalidConfigError("Duplicate config name.", ErrorCode.INVALID_REQUEST)
        topic_configs.validate(overrides)
        count, replication_factor, manual = _partition_count(ctx, topic)
    except (InvalidConfigError, _Refused) as exc:
        log.info("CreateTopics %r refused: %s (%s)", name, exc.message, ctx.describe())
        return _error(name, exc.code, exc.message)
    return _Plan(
        name,
        count,
        {k: v for k, v in overrides.items() if v is not None},
        replication_factor,
        manual,
    )


async def _make(ctx: RequestContext, plans: list[_Plan]) -> dict[str, bytes | None]:
    """Create the request's topics together, in one trip to a worker thread, so that their
    files' and directories' fsyncs are grouped (storage.store.Store.prepare_topics): each
    topic id by name, None for a name another request took meanwhile."""
    state = ctx.state
    store = state.store
    made: dict[str, bytes | None] = {}
    todo: list[_Plan] = []
    for plan in plans:
        if store.topic(plan.name) is not None or plan.name in store.preparing:
            made[plan.name] = None
        else:
            todo.append(plan)
    if not todo:
        return made
    names = {plan.name for plan in todo}
    store.preparing.update(names)
    try:
        infos = await offload.run(store.prepare_topics, [(p.name, p.count) for p in todo])
    finally:
        store.preparing.difference_update(names)
    for plan, info in zip(todo, infos, strict=True):
        store.add_prepared_topic(info)
        if state.cluster is not None:
            state.cluster.record_topic(
                info.topic_id, plan.replication_factor, dict(enumerate(plan.assignments))
            )
        if plan.configs:
            state.set_topic_configs(info, plan.configs)
        made[plan.name] = info.topic_id
        log.info(
            "created topic %r with %d partition(s)%s (%s)",
            plan.name,
            plan.count,
            f", configs {plan.configs}" if plan.configs else "",
            ctx.describe(),
        )
    return made


def _answer(ctx: RequestContext, plan: _Plan, made: dict[str, bytes | None]) -> Message:
    state = ctx.state
    name, count, valid = plan.name, plan.count, plan.configs
    # Kafka's ReplicationControlManager.createTopic draws the id before it knows the
    # request is validate_only, so a dry run answers a (throwaway) id too.
    topic_id = made.get(name, uuid.uuid4().bytes)
    if topic_id is None:
        # Created by another request while this one's checks waited.
        return _error(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    if not ctx.authorized(DESCRIBE_CONFIGS, TOPIC, name, log_denied=False):
        # ReplicationControlManager.createTopic: the configs, partition count and
        # replication factor only with DESCRIBE_CONFIGS on the topic, else the config
        # error TOPIC_AUTHORIZATION_FAILED (ControllerApis.createTopics, denials not logged).
        return Message(
            name=name,
            topic_id=topic_id,
            error_code=ErrorCode.NONE,
            error_message=None,
            topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            num_partitions=-1,
            replication_factor=-1,
            configs=[],
        )
    entries = topic_configs.describe_topic(state.config, valid)
    return Message(
        name=name,
        topic_id=topic_id,
        error_code=ErrorCode.NONE,
        error_message=None,
        topic_config_error_code=0,
        num_partitions=count,
        replication_factor=plan.replication_factor,
        configs=[
            Message(
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                config_source=int(e.source),
                is_sensitive=False,
            )
            for e in entries
        ],
    )
