"""The durable form of a KIP-848 consumer group, one record per group.

Kafka keeps such a group in __consumer_offsets as several record types (ConsumerGroupMetadata
for the group epoch, ConsumerGroupMemberMetadata per member subscription,
ConsumerGroupTargetAssignmentMember/Metadata, ConsumerGroupCurrentMemberAssignment); a single
broker replaying its own log needs only their sum, so the committed-offsets log holds one
record with the whole group, rewritten after every change (the latest one wins on replay,
like the latest value per key after Kafka's log cleaner). Partitions are named by topic id, as
in Kafka's records, so a topic deleted and created again under the same name is another topic.

Body layout (big-endian; strings int32 length or -1 for null): format version int16, group
epoch int32, assignment epoch int32, member count int32, then per member: member id,
instance id, rack id, client id, client host, rebalance timeout int32, subscribed topic names
(int32 count + strings), regex, server assignor, member epoch int32, previous member epoch
int32, state int8, assigned partitions, partitions pending revocation, target assignment.
Partitions: int32 topic count, then per topic 16-byte id, int32 count, int32 partitions.
Version 1 adds, after each member's target, its classic-protocol metadata (Kafka's
ConsumerGroupMemberMetadataValue.ClassicMemberMetadata, set for a member that joined through
JoinGroup): session timeout int32 (-1: the member uses the consumer protocol), then int32
count of (protocol name, int32-length metadata bytes). Version 2 adds, after the members, the
group's resolved subscription regexes (Kafka's ConsumerGroupRegularExpression records): int32
count, then per regex the regex and its topic names (int32 count + strings), so a restart
needs no regex matching. Versions 0 and 1 are still read (their regexes come back unresolved).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

FORMAT_VERSION = 2

# topic id -> partitions, sorted, as stored.
Partitions = tuple[tuple[bytes, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class ConsumerMemberRecord:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    member_epoch: int
    previous_member_epoch: int
    # Kafka's MemberState: 0 stable, 1 unrevoked partitions, 2 unreleased partitions.
    state: int
    assigned: Partitions
    pending_revocation: Partitions
    target: Partitions
    # A classic-protocol member (online migration): its session timeout and JoinGroup
    # protocols (name, metadata); None / () for a consumer-protocol member.
    classic_session_timeout_ms: int | None = None
    classic_protocols: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupRecord:
    group_epoch: int
    assignment_epoch: int
    members: tuple[ConsumerMemberRecord, ...] = ()
    # regex -> the topic names it matched at its last resolution, sorted by regex.
    resolved_regexes: tuple[tuple[str, tuple[str, ...]], ...] = ()


def encode(record: ConsumerGroupRecord) -> bytes:
    out = bytearray(
        struct.pack(
            ">hiii",
            FORMAT_VERSION,
            record.group_epoch,
            record.assignment_epoch,
            len(record.members),
        )
    )
    for m in record.members:
        for text in (m.member_id, m.instance_id, m.rack_id, m.client_id, m.client_host):
            out += _enc(text)
        out += struct.pack(">ii", m.rebalance_timeout_ms, len(m.subscribed_topic_names))
        for name in m.subscribed_topic_names:
            out += _enc(name)
        out += _enc(m.subscribed_topic_regex) + _enc(m.server_assignor)
        out += struct.pack(">iib", m.member_epoch, m.previous_member_epoch, m.state)
        for parts in (m.assigned, m.pending_revocation, m.target):
            out += _enc_partitions(parts)
        session = -1 if m.classic_session_timeout_ms is None else m.classic_session_timeout_ms
        out += struct.pack(">ii", session, len(m.classic_protocols))
        for name, metadata in m.classic_protocols:
            out += _enc(name) + struct.pack(">i", len(metadata)) + metadata
    out += struct.pack(">i", len(record.resolved_regexes))
    for regex, topics in record.resolved_regexes:
        out += _enc(regex) + struct.pack(">i", len(topics))
        for name in topics:
            out += _enc(name)
    return bytes(out)


def decode(data: bytes, pos: int) -> ConsumerGroupRecord:
    """Decode a body starting at ``pos`` that must end exactly at the end of ``data``.

    Raises ValueError or struct.error on anything malformed."""
    version, group_epoch, assignment_epoch, count = struct.unpack_from(">hiii", data, pos)
    pos += 14
    if version not in (0, 1, FORMAT_VERSION):
        raise ValueError(f"consumer group record version {version}")
    if count < 0 or count > len(data):
        raise ValueError("bad member count")
    members = []
    for _ in range(count):
        member_id, pos = _str(data, pos)
        instance_id, pos = _nullable(data, pos)
        rack_id, pos = _nullable(data, pos)
        client_id, pos = _str(data, pos)
        client_host, pos = _str(data, pos)
        rebalance_timeout, names = struct.unpack_from(">ii", data, pos)
        pos += 8
        if names < 0 or names > len(data):
            raise ValueError("bad topic count")
        topics = []
        for _ in range(names):
            name, pos = _str(data, pos)
            topics.append(name)
        regex, pos = _nullable(data, pos)
        assignor, pos = _nullable(data, pos)
        epoch, previous, state = struct.unpack_from(">iib", data, pos)
        pos += 9
        assigned, pos = _partitions(data, pos)
        pending, pos = _partitions(data, pos)
        target, pos = _partitions(data, pos)
        session: int | None = None
        protocols: list[tuple[str, bytes]] = []
        if version >= 1:
            session, protocol_count = struct.unpack_from(">ii", data, pos)
            pos += 8
            if protocol_count < 0 or protocol_count > len(data):
                raise ValueError("bad protocol count")
            for _ in range(protocol_count):
                name, pos = _str(data, pos)
                (size,) = struct.unpack_from(">i", data, pos)
                pos += 4
                if size < 0 or pos + size > len(data):
                    raise ValueError("protocol metadata past the end of the record")
                protocols.append((name, bytes(data[pos : pos + size])))
                pos += size
            if session is not None and session < 0:
                session = None
        members.append(
            ConsumerMemberRecord(
                member_id,
                instance_id,
                rack_id,
                client_id,
                client_host,
                rebalance_timeout,
                tuple(topics),
                regex,
                assignor,
                epoch,
                previous,
                state,
                assigned,
                pending,
                target,
                session,
                tuple(protocols),
            )
        )
    resolved: list[tuple[str, tuple[str, ...]]] = []
    if version >= 2:
        (regex_count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if regex_count < 0 or regex_count > len(data):
            raise ValueError("bad regex count")
        for _ in range(regex_count):
            regex, pos = _str(data, pos)
            (name_count,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if name_count < 0 or name_count > len(data):
                raise ValueError("bad topic count")
            matched = []
            for _ in range(name_count):
                name, pos = _str(data, pos)
                matched.append(name)
            resolved.append((regex, tuple(matched)))
    if pos != len(data):
        raise ValueError("trailing bytes after the consumer group record")
    return ConsumerGroupRecord(group_epoch, assignment_epoch, tuple(members), tuple(resolved))


def _enc(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">i", -1)
    raw = text.encode()
    return struct.pack(">i", len(raw)) + raw


def _enc_partitions(parts: Partitions) -> bytes:
    out = bytearray(struct.pack(">i", len(parts)))
    for topic_id, partitions in parts:
        out += topic_id + struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    return bytes(out)


def _nullable(data: bytes, pos: int) -> tuple[str | None, int]:
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if n < 0:
        return None, pos
    if pos + n > len(data):
        raise ValueError("string past the end of the record")
    return data[pos : pos + n].decode(), pos + n


def _str(data: bytes, pos: int) -> tuple[str, int]:
    text, pos = _nullable(data, pos)
    if text is None:
        raise ValueError("null where a string is required")
    return text, pos


def _partitions(data: bytes, pos: int) -> tuple[Partitions, int]:
    (topics,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if topics < 0 or topics > len(data):
        raise ValueError("bad topic count")
    out = []
    for _ in range(topics):
        topic_id = data[pos : pos + 16]
        if len(topic_id) != 16:
            raise ValueError("topic id past the end of the record")
        (count,) = struct.unpack_from(">i", data, pos + 16)
        pos += 20
        if count < 0 or pos + 4 * count > len(data):
            raise ValueError("bad partition count")
        out.append((bytes(topic_id), struct.unpack_from(f">{count}i", data, pos)))
        pos += 4 * count
    return tuple(out), pos
