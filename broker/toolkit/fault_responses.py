"""Error answers for injected faults, shaped as Kafka shapes them.

Kafka answers a request it refuses as a whole with ``AbstractRequest.getErrorResponse``: the
response mirrors the request's topics and partitions, each carrying the error (ProduceRequest,
FetchRequest, ListOffsetsRequest, OffsetCommitRequest), or sets the top-level error code
(JoinGroup, SyncGroup, Heartbeat, InitProducerId, ...). A partition that is not led here gets
its own entry with the error while the other partitions of the same request are served
(ReplicaManager.appendRecords / fetchMessages). Both shapes are built here from the request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.messages.fetch import FETCH
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.list_offsets import LIST_OFFSETS
from protocol.messages.metadata import METADATA
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.offset_fetch import OFFSET_FETCH
from protocol.messages.produce import PRODUCE
from protocol.schema import Api, Array, Field, Message, Struct

if TYPE_CHECKING:
    from storage.store import Store

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Shape:
    """Where an API names topics and partitions, in its request and its response."""

    req_topics: str
    req_topic: str
    req_partitions: str
    req_index: str
    resp_topics: str
    resp_topic: str
    resp_partitions: str
    resp_index: str
    # Fields of an error entry that differ from the schema defaults (Kafka's INVALID_OFFSET,
    # FetchResponse.INVALID_HIGH_WATERMARK, empty records).
    error_fields: tuple[tuple[str, Any], ...] = ()


# APIs whose errors are per partition: an injected error or an offline partition answers
# only the partitions it concerns.
PARTITIONED: dict[int, Shape] = {
    PRODUCE.key: Shape(
        "topic_data",
        "name",
        "partition_data",
        "index",
        "responses",
        "name",
        "partition_responses",
        "index",
        (("base_offset", -1), ("log_append_time_ms", -1), ("log_start_offset", -1)),
    ),
    FETCH.key: Shape(
        "topics",
        "topic",
        "partitions",
        "partition",
        "responses",
        "topic",
        "partitions",
        "partition_index",
        (
            ("high_watermark", -1),
            ("last_stable_offset", -1),
            ("log_start_offset", -1),
            ("records", None),
        ),
    ),
    LIST_OFFSETS.key: Shape(
        "topics",
        "name",
        "partitions",
        "partition_index",
        "topics",
        "name",
        "partitions",
        "partition_index",
    ),
    OFFSET_COMMIT.key: Shape(
        "topics",
        "name",
        "partitions",
        "partition_index",
        "topics",
        "name",
        "partitions",
        "partition_index",
    ),
}

# What a fault on a partition that is offline answers (ReplicaManager: this broker is not the
# partition's leader).
OFFLINE_APIS = (PRODUCE.key, FETCH.key, LIST_OFFSETS.key)


def _field(fields: tuple[Field, ...], name: str) -> Field:
    for fl in fields:
        if fl.name == name:
            return fl
    raise KeyError(name)


def _struct_fields(fields: tuple[Field, ...], name: str) -> tuple[Field, ...]:
    type_ = _field(fields, name).type
    assert isinstance(type_, Array) and isinstance(type_.item, Struct)
    return type_.item.fields


def _has_field(fields: tuple[Field, ...], name: str, version: int) -> bool:
    return any(fl.name == name and version in fl.versions for fl in fields)


def _topic_key(api: Api, version: int) -> str:
    # Fetch v13+ names topics by id only.
    return "topic_id" if api.key == FETCH.key and version >= 13 else ""


def request_partitions(
    api: Api, version: int, request: Message, store: Store
) -> list[TopicPartition]:
    """(topic, partition) pairs a partitioned request names (topic ids resolved to names)."""
    shape = PARTITIONED.get(api.key)
    if shape is None:
        return []
    by_id = _topic_key(api, version) == "topic_id"
    pairs: list[TopicPartition] = []
    for topic in request.get(shape.req_topics) or []:
        name = _topic_name(topic, shape.req_topic, by_id, store)
        for part in topic.get(shape.req_partitions) or []:
            pairs.append((name, part.get(shape.req_index)))
    return pairs


def request_topics(api: Api, version: int, request: Message, store: Store) -> list[str]:
    """Topic names a request mentions (for matching a fault scoped to a topic)."""
    if api.key == METADATA.key:
        return [t.name for t in request.get("topics") or [] if t.get("name") is not None]
    shape = PARTITIONED.get(api.key)
    if shape is None:
        return []
    by_id = _topic_key(api, version) == "topic_id"
    return [
        _topic_name(topic, shape.req_topic, by_id, store)
        for topic in request.get(shape.req_topics) or []
    ]


def _topic_name(topic: Message, field: str, by_id: bool, store: Store) -> str:
    if by_id:
        info = store.topic_by_id(topic.get("topic_id"))
        return info.name if info is not None else ""
    name: str = topic.get(field) or ""
    return name


def without_partitions(
    api: Api, version: int, request: Message, drop: set[TopicPartition], store: Store
) -> Message:
    """A copy of ``request`` without the partitions in ``drop`` (the handler never sees them)."""
    shape = PARTITIONED[api.key]
    by_id = _topic_key(api, version) == "topic_id"
    topics = []
    for topic in request.get(shape.req_topics) or []:
        name = _topic_name(topic, shape.req_topic, by_id, store)
        kept = [
            p
            for p in topic.get(shape.req_partitions) or []
            if (name, p.get(shape.req_index)) not in drop
        ]
        if kept:
            topics.append(Message(**{**topic.__dict__, shape.req_partitions: kept}))
    return Message(**{**request.__dict__, shape.req_topics: topics})


def set_partition_errors(
    api: Api,
    version: int,
    request: Message,
    response: Message,
    errors: dict[TopicPartition, int],
    store: Store,
) -> None:
    """Give each partition in ``errors`` an error entry in ``response`` (replacing its answer).

    Entries are placed in the topic entry the request named them in (by name, or by id for
    Fetch v13+), created when the handler never saw the partition.
    """
    shape = PARTITIONED[api.key]
    by_id = _topic_key(api, version) == "topic_id"
    topic_fields = _struct_fields(api.response, shape.resp_topics)
    part_fields = _struct_fields(topic_fields, shape.resp_partitions)
    entries: list[Message] = response.__dict__.setdefault(shape.resp_topics, [])
    for topic in request.get(shape.req_topics) or []:
        name = _topic_name(topic, shape.req_topic, by_id, store)
        wanted = [
            p.get(shape.req_index)
            for p in topic.get(shape.req_partitions) or []
            if (name, p.get(shape.req_index)) in errors
        ]
        if not wanted:
            continue
        entry = _find_topic_entry(entries, shape, topic, by_id)
        if entry is None:
            entry = Message.defaults(topic_fields)
            if by_id:
                put(entry, topic_id=topic.get("topic_id"))
            put(entry, **{shape.resp_topic: name})
            entries.append(entry)
        parts: list[Message] = entry.__dict__.setdefault(shape.resp_partitions, [])
        for index in wanted:
            error = Message.defaults(part_fields)
            put(error, **{shape.resp_index: index}, error_code=errors[(name, index)])
            put(error, **dict(shape.error_fields))
            for i, old in enumerate(parts):
                if old.get(shape.resp_index) == index:
                    parts[i] = error
                    break
            else:
                parts.append(error)


def _find_topic_entry(
    entries: list[Message], shape: Shape, topic: Message, by_id: bool
) -> Message | None:
    for entry in entries:
        if by_id and entry.get("topic_id") == topic.get("topic_id"):
            return entry
        if not by_id and entry.get(shape.resp_topic) == topic.get(shape.req_topic):
            return entry
    return None


def empty_response(api: Api, **values: Any) -> Message:
    """Every response field at its default, then ``values``."""
    response = Message.defaults(api.response)
    put(response, **values)
    return response


def put(message: Message, **values: Any) -> None:
    """Set fields of a decoded or built message."""
    message.__dict__.update(values)


def supports_whole_error(api: Api) -> bool:
    """Whether a request of ``api`` can be refused as a whole with an error code."""
    return (
        api.key in PARTITIONED
        or api.key in _SPECIAL
        or any(fl.name == "error_code" for fl in api.response)
    )


def whole_error_response(api: Api, version: int, request: Message, code: int) -> Message | None:
    """Kafka's getErrorResponse for ``api``: None when this version has no place for an error."""
    special = _SPECIAL.get(api.key)
    if special is not None:
        return special(version, request, code)
    if _has_field(api.response, "error_code", version):
        return empty_response(api, error_code=code)
    return None


def _join_group(version: int, request: Message, code: int) -> Message:
    # JoinGroupRequest.getErrorResponse: UNKNOWN_GENERATION_ID, no member id, no leader.
    return empty_response(
        JOIN_GROUP,
        error_code=code,
        generation_id=-1,
        member_id="",
        leader="",
        protocol_name=None if version >= 7 else "",
    )


def _find_coordinator(version: int, request: Message, code: int) -> Message:
    if version < 4:
        return empty_response(FIND_COORDINATOR, error_code=code, node_id=-1, port=-1)
    return empty_response(
        FIND_COORDINATOR,
        coordinators=[
            Message(key=key, node_id=-1, host="", port=-1, error_code=code, error_message=None)
            for key in request.get("coordinator_keys") or []
        ],
    )


def _init_producer_id(version: int, request: Message, code: int) -> Message:
    return empty_response(INIT_PRODUCER_ID, error_code=code, producer_id=-1, producer_epoch=-1)


def _offset_fetch(version: int, request: Message, code: int) -> Message | None:
    if version >= 8:
        groups = [
            Message(group_id=g.group_id, topics=[], error_code=code)
            for g in request.get("groups") or []
        ]
        return empty_response(OFFSET_FETCH, groups=groups)
    if version >= 2:
        return empty_response(OFFSET_FETCH, error_code=code)
    return None


def _metadata(version: int, request: Message, code: int) -> Message:
    # MetadataRequest.getErrorResponse: every topic asked for, with the error.
    topic_fields = _struct_fields(METADATA.response, "topics")
    topics = []
    for asked in request.get("topics") or []:
        entry = Message.defaults(topic_fields)
        put(
            entry,
            name=asked.get("name"),
            topic_id=asked.get("topic_id") or b"\x00" * 16,
            error_code=code,
        )
        topics.append(entry)
    return empty_response(METADATA, topics=topics)


_SPECIAL: dict[int, Callable[[int, Message, int], Message | None]] = {
    JOIN_GROUP.key: _join_group,
    FIND_COORDINATOR.key: _find_coordinator,
    INIT_PRODUCER_ID.key: _init_producer_id,
    OFFSET_FETCH.key: _offset_fetch,
    METADATA.key: _metadata,
}


def mark_offline_in_metadata(
    version: int, response: Message, offline: Iterable[TopicPartition], node_id: int
) -> None:
    """Show partitions as Kafka's metadata cache shows a partition without a live leader:
    LEADER_NOT_AVAILABLE, leader -1, this broker among the offline replicas and out of the
    ISR (KRaftMetadataCache.partitionMetadata)."""
    down = set(offline)
    if not down:
        return
    for topic in response.get("topics") or []:
        for part in topic.get("partitions") or []:
            if (topic.get("name"), part.get("partition_index")) in down:
                put(part, error_code=ErrorCode.LEADER_NOT_AVAILABLE, leader_id=-1, isr_nodes=[])
                if version >= 5:
                    put(part, offline_replicas=[node_id])
