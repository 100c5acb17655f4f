"""Metadata, versions 0-13.

A single broker is the only node, leader of every partition, with replicas = isr = [node].
A simulated cluster (minikafka.cluster.size) lists its live nodes with their racks, a live one
picked at random as controller_id (KRaftMetadataCache.getRandomAliveBrokerId), and each
partition's leader, epoch, replicas, ISR and offline replicas; a partition without a leader
answers LEADER_NOT_AVAILABLE with leader -1.
The broker address is the advertised address of the listener the client connected
through, so a client on a Docker network and one on the host each get an address they can
reach (Kafka does the same per listener).

Auto-creation (auto.create.topics.enable, honouring v4+ allow_auto_topic_creation) creates
the topic with num.partitions. The request that creates it is answered as Kafka 4.0 answers
it, UNKNOWN_TOPIC_OR_PARTITION with no partitions and a zero topic id (KRaft creates through
the controller asynchronously; recorded in kafka-oracle/raw_metadata_variants #7 and every
client's first Metadata for a new topic); clients retry and the next request sees it ready.
An invalid topic name answers INVALID_TOPIC_EXCEPTION; Kafka logs nothing for it, we log at
DEBUG at most once a minute per client.
Authorized operations (v8+), when asked for, are the operations the caller may do (every
operation of the resource type without an authorizer): on every topic entry, errors
included (KafkaApis.handleTopicMetadataRequest), and for the cluster up to v10.
Authorization (KafkaApis.getTopicMetadata): all-topics requests list only topics the caller
may DESCRIBE; a named topic it may not DESCRIBE -> TOPIC_AUTHORIZATION_FAILED; auto-creation
needs CREATE on the cluster or the topic, else TOPIC_AUTHORIZATION_FAILED (zero topic id).
"""

from __future__ import annotations

import logging

from broker.cluster.state import INTERNAL_TOPICS, leadership_key
from broker.core import authorized_operations as ops
from broker.core.dispatch import CloseConnection
from broker.core.request_context import RequestContext
from broker.handlers._leadership import broker_entries, partition_entry
from broker.security.acl import CLUSTER, CLUSTER_NAME, CREATE, DESCRIBE, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.metadata import METADATA
from protocol.primitives import ZERO_UUID
from protocol.schema import Message
from storage.store import TopicInfo, valid_topic_name

API = METADATA
MIN_VERSION = 0
MAX_VERSION = 13

log = logging.getLogger(__name__)


def _log_not_created(ctx: RequestContext, name: str, broker_allows: bool) -> None:
    # Kafka says nothing; a newcomer whose producer waits on UNKNOWN_TOPIC_OR_PARTITION
    # learns why here. Once a minute per client and topic (clients retry every 100 ms).
    level = logging.DEBUG if broker_allows else logging.INFO
    if not log.isEnabledFor(level):
        return
    host = ctx.peer.rsplit(":", 1)[0]
    left_out = ctx.state.unknown_topic_log.allow((host, ctx.client_id, name))
    if left_out is None:
        return
    why = (
        "the client asked not to create it (allow_auto_topic_creation=false)"
        if broker_allows
        else "auto.create.topics.enable=false"
    )
    log.log(
        level,
        "Metadata for unknown topic %r from client %s: %s%s",
        name,
        ctx.client_id,
        why,
        f" ({left_out} more such requests from this client since the last line)"
        if left_out
        else "",
    )


def _log_invalid_topic(ctx: RequestContext, name: str) -> None:
    # Kafka answers INVALID_TOPIC_EXCEPTION without a line of its own (KafkaApis
    # getTopicMetadata); only its request log, at DEBUG, shows such requests. A
    # regex-subscribing client can send thousands a minute, so: DEBUG, once a minute per
    # client (address and client id), with the count of the ones left out.
    if not log.isEnabledFor(logging.DEBUG):
        return
    host = ctx.peer.rsplit(":", 1)[0]
    suppressed = ctx.state.invalid_topic_log.allow((host, ctx.client_id))
    if suppressed is not None:
        log.debug(
            "invalid topic name %r in Metadata from %s (%d more from this client in the "
            "last minute not logged)",
            name,
            ctx.describe(),
            suppressed,
        )


def led_partition(index: int, node: int) -> Message:
    """A partition as this single node reports it: leader, only replica, in sync, epoch 0.

    Also carries DescribeTopicPartitions' ELR fields (empty: no other replica exists);
    the encoder writes only the fields the answered message has.
    """
    return Message(
        error_code=ErrorCode.NONE,
        partition_index=index,
        leader_id=node,
        leader_epoch=0,
        replica_nodes=[node],
        isr_nodes=[node],
        eligible_leader_replicas=[],
        last_known_elr=[],
        offline_replicas=[],
    )


def _refuse_topic_ids(version: int, requested: list[Message]) -> None:
    """v10-11 carry topic ids and nullable names but Kafka serves neither before v12
    (KafkaApis throws InvalidRequestException); answering a null name could not even be
    encoded, the response's name being non-nullable there."""
    for entry in requested:
        if entry.name is None:
            raise CloseConnection(f"Topic name can not be null for version {version}")
        if entry.topic_id != ZERO_UUID:
            raise CloseConnection(f"Topic IDs are not supported in requests for version {version}")


def handle(ctx: RequestContext, request: Message) -> Message:
    state = ctx.state
    store = state.store
    node = state.node_id
    cluster = state.cluster

    def topic_ops(name: str | None) -> int:
        if not request.include_topic_authorized_operations:
            return ops.NOT_REQUESTED
        return ops.of(ctx, ops.TOPIC, TOPIC, name or "")

    def described(name: str) -> bool:
        return ctx.authorized(DESCRIBE, TOPIC, name)

    def topic_entry(info: TopicInfo) -> Message:
        return Message(
            error_code=ErrorCode.NONE,
            name=info.name,
            topic_id=info.topic_id,
            is_internal=info.name in INTERNAL_TOPICS,
            partitions=[led_partition(i, node) for i in range(len(info.partitions))]
            if cluster is None
            else [
                partition_entry(cluster, leadership_key(info.name, info.topic_id), i)
                for i in range(len(info.partitions))
            ],
            topic_authorized_operations=topic_ops(info.name),
        )

    def error_entry(name: str | None, code: ErrorCode, topic_id: bytes = ZERO_UUID) -> Message:
        return Message(
            error_code=code,
            name=name,
            topic_id=topic_id,
            is_internal=False,
            partitions=[],
            topic_authorized_operations=topic_ops(name),
        )

    def may_create(name: str) -> bool:
        return ctx.authorized(CREATE, CLUSTER, CLUSTER_NAME, log_denied=False) or ctx.authorized(
            CREATE, TOPIC, name
        )

    topics: list[Message] = []
    requested = request.topics
    # v0: an empty list means all topics; v1+: null means all topics.
    if requested is None or (ctx.version == 0 and not requested):
        topics = [
            topic_entry(t)
            for t in sorted(store.topics(), key=lambda t: t.name)
            if ctx.authorized(DESCRIBE, TOPIC, t.name, log_denied=False)
        ]
    else:
        if ctx.version < 12:
            _refuse_topic_ids(ctx.version, requested)
        allow_create = state.config.auto_create_topics_enable and request.allow_auto_topic_creation
        by_id = (
            {t.topic_id: t for t in store.topics()}
            if any(t.name is None for t in requested)
            else {}
        )
        # Kafka collects the requested names (and ids) into sets: a name asked for twice
        # gets one entry (kafka-oracle/raw_metadata_variants #9).
        seen: set[str | bytes] = set()
        # KafkaApis answers these after the others: not creatable, then not describable.
        denied_create: list[Message] = []
        denied_describe: list[Message] = []
        for entry in requested:
            name = entry.name
            key = entry.topic_id if name is None else name
            if key in seen:
                continue
            seen.add(key)
            if name is None:
                found = by_id.get(entry.topic_id)
                if found is None:
                    topics.append(error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, entry.topic_id))
                elif not described(found.name):
                    topics.append(
                        error_entry(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, entry.topic_id)
                    )
                else:
                    topics.append(topic_entry(found))
                continue
            if not described(name):
                denied_describe.append(error_entry(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            info = store.topic(name)
            if info is None:
                if not valid_topic_name(name):
                    _log_invalid_topic(ctx, name)
                    topics.append(error_entry(name, ErrorCode.INVALID_TOPIC_EXCEPTION))
                    continue
                if not allow_create:
                    _log_not_created(ctx, name, state.config.auto_create_topics_enable)
                    topics.append(error_entry(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                if not may_create(name):
                    denied_create.append(error_entry(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
                if name not in store.preparing:  # else CreateTopics is making it right now
                    state.auto_create_topic(name)
                topics.append(error_entry(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            topics.append(topic_entry(info))
        topics += denied_create + denied_describe

    listener = ctx.listener
    return Message(
        throttle_time_ms=0,
        brokers=[
            Message(
                node_id=node,
                host=listener.advertised_host,
                port=listener.advertised_port,
                rack=None,
            )
        ]
        if cluster is None
        else broker_entries(ctx, cluster),
        cluster_id=state.cluster_id,
        controller_id=node if cluster is None else cluster.random_live_node(),
        topics=topics,
        cluster_authorized_operations=ops.of(ctx, ops.CLUSTER, CLUSTER, CLUSTER_NAME)
        if request.include_cluster_authorized_operations
        else ops.NOT_REQUESTED,
        error_code=ErrorCode.NONE,
    )
