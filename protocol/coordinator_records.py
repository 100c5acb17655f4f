"""The group coordinator's records in ``__consumer_offsets``, in Kafka 4.0's formats.

Kafka writes each record as key = int16 record type + the key message (at that type as its
version), value = int16 version + the value message, or a null value for a tombstone
(CoordinatorRecordSerde, MessageUtil.toVersionPrefixedBytes). The schemas are Kafka's
group-coordinator message JSON (OffsetCommitKey/Value, GroupMetadataKey/Value and the
ConsumerGroup* records), described with this package's vocabulary; the versions written are
the ones GroupCoordinatorRecordHelpers picks: OffsetCommitValue 1 when the commit carries an
expire timestamp, else 3; GroupMetadataValue 3; ConsumerGroup* values 0.
"""

from __future__ import annotations

import struct
from typing import Any

from protocol import codec
from protocol.primitives import Reader
from protocol.schema import (
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    Array,
    Field,
    Message,
    Struct,
    f,
)

# Record types (the key's version prefix).
OFFSET_COMMIT = 1
GROUP_METADATA = 2
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_REGULAR_EXPRESSION = 16

OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3

_GROUP_KEY = (f("group", STRING),)
_GROUP_ID_KEY = (f("group_id", STRING),)
_MEMBER_KEY = (f("group_id", STRING), f("member_id", STRING))

# type -> key fields (never flexible).
KEYS: dict[int, tuple[Field, ...]] = {
    OFFSET_COMMIT: (f("group", STRING), f("topic", STRING), f("partition", INT32)),
    GROUP_METADATA: _GROUP_KEY,
    CONSUMER_GROUP_METADATA: _GROUP_ID_KEY,
    CONSUMER_GROUP_PARTITION_METADATA: _GROUP_ID_KEY,
    CONSUMER_GROUP_MEMBER_METADATA: _MEMBER_KEY,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: _GROUP_ID_KEY,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: _MEMBER_KEY,
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: _MEMBER_KEY,
    CONSUMER_GROUP_REGULAR_EXPRESSION: (f("group_id", STRING), f("regular_expression", STRING)),
}

OFFSET_COMMIT_VALUE = (
    f("offset", INT64),
    f("leader_epoch", INT32, "3+", default=-1),
    f("metadata", STRING),
    f("commit_timestamp", INT64),
    f("expire_timestamp", INT64, "1-1", default=-1),
)

_MEMBER_METADATA = Struct(
    f("member_id", STRING),
    f("group_instance_id", STRING, "3+", nullable="3+", default=None),
    f("client_id", STRING),
    f("client_host", STRING),
    f("rebalance_timeout", INT32, "1+", default=-1),
    f("session_timeout", INT32),
    f("subscription", BYTES),
    f("assignment", BYTES),
)

GROUP_METADATA_VALUE = (
    f("protocol_type", STRING),
    f("generation", INT32),
    f("protocol", STRING, nullable="0+"),
    f("leader", STRING, nullable="0+"),
    f("current_state_timestamp", INT64, "2+", default=-1),
    f("members", Array(_MEMBER_METADATA)),
)

_TOPIC_PARTITIONS = Struct(f("topic_id", UUID), f("partitions", Array(INT32)))

# Kafka 4.0's TopicMetadata keeps no racks: PartitionMetadata is written empty.
_TOPIC_METADATA = Struct(
    f("topic_id", UUID),
    f("topic_name", STRING),
    f("num_partitions", INT32),
    f("partition_metadata", Array(Struct(f("partition", INT32), f("racks", Array(STRING))))),
)

_CLASSIC_MEMBER = Struct(
    f("session_timeout_ms", INT32),
    f("supported_protocols", Array(Struct(f("name", STRING), f("metadata", BYTES)))),
)

# The ConsumerGroup* values: version 0 only, flexible.
FLEXIBLE_VALUES: dict[int, tuple[Field, ...]] = {
    CONSUMER_GROUP_METADATA: (f("epoch", INT32),),
    CONSUMER_GROUP_PARTITION_METADATA: (f("topics", Array(_TOPIC_METADATA)),),
    CONSUMER_GROUP_MEMBER_METADATA: (
        f("instance_id", STRING, nullable="0+"),
        f("rack_id", STRING, nullable="0+"),
        f("client_id", STRING),
        f("client_host", STRING),
        f("subscribed_topic_names", Array(STRING)),
        f("subscribed_topic_regex", STRING, nullable="0+"),
        f("rebalance_timeout_ms", INT32, default=-1),
        f("server_assignor", STRING, nullable="0+"),
        f("classic_member_metadata", _CLASSIC_MEMBER, nullable="0+", tag=0, default=None),
    ),
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: (f("assignment_epoch", INT32),),
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: (f("topic_partitions", Array(_TOPIC_PARTITIONS)),),
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: (
        f("member_epoch", INT32),
        f("previous_member_epoch", INT32),
        f("state", INT8),
        f("assigned_partitions", Array(_TOPIC_PARTITIONS)),
        f("partitions_pending_revocation", Array(_TOPIC_PARTITIONS)),
    ),
    CONSUMER_GROUP_REGULAR_EXPRESSION: (
        f("topics", Array(STRING)),
        f("version", INT64),
        f("timestamp", INT64),
    ),
}

_INT16 = struct.Struct(">h")


def encode_key(record_type: int, value: Any) -> bytes:
    """The key bytes: int16 type, then the key message at that version."""
    return _INT16.pack(record_type) + codec.encode(KEYS[record_type], record_type, False, value)


def encode_offset_commit_value(value: Any, version: int) -> bytes:
    return _INT16.pack(version) + codec.encode(OFFSET_COMMIT_VALUE, version, False, value)


def encode_group_metadata_value(value: Any) -> bytes:
    version = GROUP_METADATA_VALUE_VERSION
    return _INT16.pack(version) + codec.encode(GROUP_METADATA_VALUE, version, False, value)


def encode_consumer_group_value(record_type: int, value: Any) -> bytes:
    return _INT16.pack(0) + codec.encode(FLEXIBLE_VALUES[record_type], 0, True, value)


def decode_key(data: bytes) -> tuple[int, Message]:
    """The record type and key message; raises DecodeError/ValueError for other bytes."""
    if len(data) < 2:
        raise ValueError("key shorter than its type")
    (record_type,) = _INT16.unpack_from(data)
    fields = KEYS.get(record_type)
    if fields is None:
        raise ValueError(f"unknown record type {record_type}")
    return record_type, codec.decode(fields, record_type, False, Reader(memoryview(data)[2:]))


def decode_value(record_type: int, data: bytes) -> tuple[int, Message]:
    """The value's version and message for a record of ``record_type``."""
    if len(data) < 2:
        raise ValueError("value shorter than its version")
    (version,) = _INT16.unpack_from(data)
    body = Reader(memoryview(data)[2:])
    if record_type == OFFSET_COMMIT and 0 <= version <= 3:
        return version, codec.decode(OFFSET_COMMIT_VALUE, version, False, body)
    if record_type == GROUP_METADATA and 0 <= version <= 3:
        return version, codec.decode(GROUP_METADATA_VALUE, version, False, body)
    if record_type in FLEXIBLE_VALUES and version == 0:
        return version, codec.decode(FLEXIBLE_VALUES[record_type], 0, True, body)
    raise ValueError(f"record type {record_type}: value version {version}")
