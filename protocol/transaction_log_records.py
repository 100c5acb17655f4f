"""The transaction coordinator's records in ``__transaction_state``, in Kafka 4.0's formats.

Key: int16 version 0 + TransactionLogKey (the transactional id). Value: int16 version +
TransactionLogValue, or null for a tombstone (an expired id). Kafka 4.0 writes value
version 1 (flexible, ClientTransactionVersion as tagged field 2) once transaction.version 1+
is finalized, as it is here (TransactionLog.valueToBytes); the partitions are null in the
Empty state.
"""

from __future__ import annotations

import struct
from typing import Any

from protocol import codec
from protocol.primitives import Reader
from protocol.schema import INT8, INT16, INT32, INT64, STRING, Array, Message, array, f

KEY_VERSION = 0
VALUE_VERSION = 1

KEY = (f("transactional_id", STRING),)
VALUE = (
    f("producer_id", INT64),
    f("previous_producer_id", INT64, "1+", tag=0, default=-1),
    f("next_producer_id", INT64, "1+", tag=1, default=-1),
    f("producer_epoch", INT16),
    f("transaction_timeout_ms", INT32),
    f("transaction_status", INT8),
    f(
        "transaction_partitions",
        array(f("topic", STRING), f("partition_ids", Array(INT32))),
        nullable="0+",
    ),
    f("transaction_last_update_timestamp_ms", INT64),
    f("transaction_start_timestamp_ms", INT64),
    f("client_transaction_version", INT16, "1+", tag=2, default=0),
)

_INT16 = struct.Struct(">h")


def encode_key(transactional_id: str) -> bytes:
    body = codec.encode(KEY, KEY_VERSION, False, {"transactional_id": transactional_id})
    return _INT16.pack(KEY_VERSION) + body


def encode_value(value: Any) -> bytes:
    return _INT16.pack(VALUE_VERSION) + codec.encode(VALUE, VALUE_VERSION, True, value)


def decode_key(data: bytes) -> Message:
    if len(data) < 2 or _INT16.unpack_from(data)[0] != KEY_VERSION:
        raise ValueError("not a TransactionLogKey")
    return codec.decode(KEY, KEY_VERSION, False, Reader(memoryview(data)[2:]))


def decode_value(data: bytes) -> tuple[int, Message]:
    if len(data) < 2:
        raise ValueError("value shorter than its version")
    (version,) = _INT16.unpack_from(data)
    if version not in (0, 1):
        raise ValueError(f"TransactionLogValue version {version}")
    return version, codec.decode(VALUE, version, version >= 1, Reader(memoryview(data)[2:]))
