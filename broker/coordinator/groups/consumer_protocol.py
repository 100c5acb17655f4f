"""The embedded consumer protocol of classic groups (Kafka's ConsumerProtocol), as far as the
coordinator reads and writes it when it migrates a group between the classic and the KIP-848
protocol: ConsumerProtocolSubscription (v0 topics and user data, v1 owned partitions, v2
generation id, v3 rack id) and ConsumerProtocolAssignment (the same layout at v0-3).

Each blob is an int16 version then the struct, non-flexible. As Kafka's
ConsumerProtocol.deserialize*, a version above the highest known is read as the highest;
anything malformed raises ``MalformedProtocol`` (Kafka's SchemaException).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

SUBSCRIPTION_HIGHEST_VERSION = 3
ASSIGNMENT_HIGHEST_VERSION = 3

# (topic name, partitions)
NamedPartitions = list[tuple[str, list[int]]]


class MalformedProtocol(ValueError):
    pass


@dataclass(slots=True)
class Subscription:
    topics: list[str]
    user_data: bytes | None
    owned_partitions: NamedPartitions
    generation_id: int
    rack_id: str | None


@dataclass(slots=True)
class Assignment:
    partitions: NamedPartitions
    user_data: bytes | None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self.data, self.pos)
        except struct.error as e:
            raise MalformedProtocol(str(e)) from None
        self.pos += struct.calcsize(fmt)
        return int(value)

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise MalformedProtocol("length past the end of the data")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def string(self) -> str:
        n = self.take(">h")
        if n < 0:
            raise MalformedProtocol("null string")
        try:
            return self.raw(n).decode()
        except UnicodeDecodeError as e:
            raise MalformedProtocol(str(e)) from None

    def nullable_string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        try:
            return self.raw(n).decode()
        except UnicodeDecodeError as e:
            raise MalformedProtocol(str(e)) from None

    def nullable_bytes(self) -> bytes | None:
        n = self.take(">i")
        return None if n < 0 else self.raw(n)

    def count(self) -> int:
        n = self.take(">i")
        if n < 0 or n > len(self.data):
            raise MalformedProtocol("bad array length")
        return n

    def partitions(self) -> NamedPartitions:
        out = []
        for _ in range(self.count()):
            topic = self.string()
            out.append((topic, [self.take(">i") for _ in range(self.count())]))
        return out


def version_of(data: bytes) -> int:
    """ConsumerProtocol.deserializeVersion."""
    return _Reader(data).take(">h")


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data)
    version = min(r.take(">h"), SUBSCRIPTION_HIGHEST_VERSION)
    if version < 0:
        raise MalformedProtocol(f"subscription version {version}")
    topics = [r.string() for _ in range(r.count())]
    user_data = r.nullable_bytes()
    owned = r.partitions() if version >= 1 else []
    generation = r.take(">i") if version >= 2 else -1
    rack = r.nullable_string() if version >= 3 else None
    return Subscription(topics, user_data, owned, generation, rack)


def decode_assignment(data: bytes) -> Assignment:
    r = _Reader(data)
    if r.take(">h") < 0:
        raise MalformedProtocol("negative assignment version")
    partitions = r.partitions()
    return Assignment(partitions, r.nullable_bytes())


def encode_assignment(partitions: NamedPartitions, version: int) -> bytes:
    """ConsumerProtocol.serializeAssignment at the member's subscription version (capped at
    the highest, as Kafka), with null user data."""
    version = max(0, min(version, ASSIGNMENT_HIGHEST_VERSION))
    out = bytearray(struct.pack(">hi", version, len(partitions)))
    for topic, ps in partitions:
        raw = topic.encode()
        out += struct.pack(">h", len(raw)) + raw
        out += struct.pack(f">i{len(ps)}i", len(ps), *ps)
    out += struct.pack(">i", -1)
    return bytes(out)
