"""Committed consumer-group offsets and group metadata, durable on disk.

Kafka keeps these in the compacted topic ``__consumer_offsets``; a single broker needs only
the same idea in one file: an append-only log of records, each ``uint32 CRC-32C`` over the
rest, ``int32 length``, then the payload, after an 8-byte file header (magic + version).
The in-memory map is the result of replaying the log in order.

Record types: offset (Kafka's OffsetCommitValue: offset, leader epoch, metadata, commit
timestamp, and the expire timestamp that OffsetCommit v2-4's retention_time_ms sets, in a
record type of its own as Kafka writes OffsetCommitValue v1 only then), offset tombstone,
group tombstone, and the group metadata record (Kafka's GroupMetadataValue: protocol type,
generation, protocol name, leader, current state timestamp and every member with its ids,
client id/host, timeouts, subscription and assignment), written when a group becomes Stable
or Empty. Older files still load and are rewritten in the current version at open: version
1 holds a group record with only the protocol type and generation (the group comes back
without members), version 2 group records without the state timestamp (Kafka's -1: offsets
of such an Empty group expire counted from their commits).
The KIP-848 consumer group record (``storage.consumer_group_records``) is written after
every change of such a group. A group id is one kind of group at a time: a record of one
kind replaces a group of the other kind (an upgrade or downgrade), keeping its offsets.

- ``commit``/``delete_*``/``put_group`` write one frame each at the log's end, at an explicit
  position (``pwrite`` at the size of the valid prefix), then update the map; they do not
  fsync. A write that fails midway is cut off again (or, if that fails too, before the next
  write), so a later record never lands behind a torn frame that replay would stop at, as
  segments are written at explicit positions. ``flush`` fsyncs; the broker calls it through
  its grouped flusher before an OffsetCommit is acknowledged, so several concurrent commits
  share one fsync.
- At open the log is replayed up to the first torn or corrupt record (a crash mid-write)
  and the file is truncated there: only unacknowledged writes can be lost.
- When the log holds many more records than live entries it is compacted: the live map is
  written to a temporary file, fsynced, renamed over the log, and the directory fsynced
  (the way Kafka's log cleaner leaves the latest value per key, here all at once). The
  broker does it in two halves (issue 13): ``prepare_compaction`` copies the live maps on
  the owner's thread (their values are immutable), ``PendingCompaction.write`` encodes and
  writes them on a worker thread while appends go on, and ``finish_compaction`` (owner)
  copies the records appended meanwhile behind them, fsyncs and renames.

- ``listener`` is told of each change after it is written here and before the maps change
  (so a listener that fails leaves them as they were).
- ``OffsetsInTopic`` is the broker's store: the same maps and writes without a file, the
  listener (broker.coordinator.offsets_topic) writing each change into
  ``__consumer_offsets`` and ``flush`` fsyncing that topic's partitions. The file is read
  only once, to move a data directory written before into the topic.

Synchronous; stdlib + crc32c only. ``flush`` may run in a worker thread while the event loop
appends: appends and fsync on one descriptor are safe together, and a lock keeps compaction
(which swaps the descriptor) from racing a flush.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from crc32c import crc32c

from storage import consumer_group_records
from storage.consumer_group_records import ConsumerGroupRecord

log = logging.getLogger(__name__)

FILE_NAME = "committed-offsets.log"
# What an older data directory's file is renamed to once its state is in the topic.
MIGRATED_SUFFIX = ".migrated"
MAGIC = b"MKCO"
VERSION = 3
_HEADER = MAGIC + struct.pack(">HH", VERSION, 0)
_VERSION_AT = len(MAGIC)
_FRAME = struct.Struct(">Ii")  # crc32c, payload length

# GROUP (protocol type + generation only) is read from version 1 files, never written.
# GROUP (protocol type + generation only) is read from version 1 files, GROUP_METADATA
# (without the state timestamp) from version 2 files; neither is written any more.
OFFSET, OFFSET_TOMBSTONE, GROUP, GROUP_TOMBSTONE, GROUP_METADATA = 1, 2, 3, 4, 5
GROUP_METADATA_STATE_TIME, OFFSET_WITH_EXPIRY, CONSUMER_GROUP = 6, 7, 8

# The temporary file of a compaction written off the owner's thread.
COMPACTING_SUFFIX = ".compacting"
# Compact when the log has this many records more than twice the live entries.
COMPACT_SLACK = 10_000
# A record larger than this is corrupt. Offsets are small; a group metadata record carries
# every member's subscription and assignment, so it may be large (Kafka bounds it by the
# __consumer_offsets max.message.bytes); ``put_group`` refuses a bigger one.
MAX_RECORD = 16 << 20


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp_ms: int
    # Set only by OffsetCommit v2-4 with a retention_time_ms (Kafka's expireTimestampMs).
    expire_timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class MemberRecord:
    """One member of a Stable group, as Kafka's GroupMetadataValue.MemberMetadata."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    # The member's metadata for the group's selected protocol only (as Kafka stores it).
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """What survives a restart of a group besides its offsets: the state after its last
    transition to Stable (with members) or Empty (without)."""

    protocol_type: str | None
    generation: int
    protocol_name: str | None = None
    leader: str | None = None
    members: tuple[MemberRecord, ...] = ()
    # Wall-clock ms of the group's last state change (Kafka's currentStateTimestamp);
    # None when unknown (records from version 2 files).
    state_timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Recovery:
    records: int
    dropped_bytes: int


TopicPartition = tuple[str, int]


class RecordTooLarge(ValueError):
    """A group metadata record above MAX_RECORD: it would read back as corrupt."""


class ChangeListener(Protocol):
    """Told of each change after it is written to this log (the broker mirrors them into
    ``__consumer_offsets`` in Kafka's record formats)."""

    def offsets_committed(
        self, group: str, items: list[tuple[str, int, CommittedOffset]]
    ) -> None: ...

    def offsets_deleted(self, group: str, items: list[TopicPartition]) -> None: ...

    def group_written(self, group: str, record: GroupRecord) -> None: ...

    def consumer_group_written(
        self, group: str, record: ConsumerGroupRecord, previous: ConsumerGroupRecord | None
    ) -> None: ...

    def group_deleted(
        self,
        group: str,
        offsets: list[TopicPartition],
        classic: bool,
        consumer: ConsumerGroupRecord | None,
    ) -> None: ...

    def transactional_offsets(
        self,
        group: str,
        items: list[tuple[str, int, CommittedOffset]],
        producer_id: int,
        producer_epoch: int,
    ) -> None: ...

    def transaction_ended(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        groups: list[str],
        known: dict[str, list[tuple[str, int, CommittedOffset]]],
    ) -> dict[str, list[tuple[str, int, CommittedOffset]]]: ...


class CommittedOffsets:
    def __init__(self, path: Path, fd: int, size: int) -> None:
        self.path = path
        self.listener: ChangeListener | None = None
        self._fd = fd
        self._size = size
        self._offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        self._groups: dict[str, GroupRecord] = {}
        self._consumer_groups: dict[str, ConsumerGroupRecord] = {}
        self._records = 0
        # Bytes past ``_size`` may be the rest of a failed write that could not be cut off:
        # cut them before the next append.
        self._tail_dirty = False
        self._lock = threading.Lock()
        self.recovery = Recovery(0, 0)
        self.compactions = 0
        self._compacting: PendingCompaction | None = None

    # --- open / recovery -------------------------------------------------------------------

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> CommittedOffsets:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        path = d / FILE_NAME
        tmp = path.with_suffix(".tmp")
        leftovers = [d / n for n in os.listdir(d) if n.endswith(COMPACTING_SUFFIX)]
        for leftover in [tmp, *leftovers]:
            if leftover.exists():
                # A compaction that crashed before its rename: the old log is still whole.
                leftover.unlink()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            data = _read_all(fd)
            store = cls(path, fd, len(data))
            store._replay(data)
        except BaseException:
            os.close(fd)
            raise
        return store

    def _replay(self, data: bytes) -> None:
        if len(data) < len(_HEADER) or data[: len(MAGIC)] != MAGIC:
            if data:
                log.warning("%s: no valid header; starting an empty log", self.path)
            os.ftruncate(self._fd, 0)
            _pwrite_all(self._fd, _HEADER, 0)
            os.fsync(self._fd)
            self._size = len(_HEADER)
            self.recovery = Recovery(0, len(data))
            return
        (version,) = struct.unpack_from(">H", data, _VERSION_AT)
        if version > VERSION:
            # Written by a newer broker: refuse rather than truncate what we cannot read.
            raise ValueError(f"{self.path}: format version {version} is newer than {VERSION}")
        pos = len(_HEADER)
        records = 0
        for end, payload in _frames(data, pos):
            try:
                self._apply(payload)
            except (struct.error, UnicodeDecodeError, ValueError):
                break
            pos = end
            records += 1
        dropped = len(data) - pos
        if dropped:
            # A torn tail from a crash mid-append: those writes were never acknowledged.
            log.warning("%s: truncating %d byte(s) after %d record(s)", self.path, dropped, records)
            os.ftruncate(self._fd, pos)
            os.fsync(self._fd)
        self._size = pos
        self._records = records
        self.recovery = Recovery(records, dropped)
        if version < VERSION:
            # Rewrite under the current header, so appends of new record types never land
            # in a file that claims the older format.
            self.compact()

    # --- reads -----------------------------------------------------------------------------

    def offsets(self, group: str) -> dict[TopicPartition, CommittedOffset]:
        """The group's committed offsets (a live view: do not modify)."""
        return self._offsets.get(group, {})

    def groups(self) -> dict[str, GroupRecord | None]:
        """Every classic group known on disk: with a group record, or with offsets only
        (None). Consumer groups (``consumer_groups``) are not in it."""
        known: dict[str, GroupRecord | None] = dict.fromkeys(self._offsets)
        known.update(self._groups)
        for group in self._consumer_groups:
            known.pop(group, None)
        return known

    def consumer_groups(self) -> dict[str, ConsumerGroupRecord]:
        """Every KIP-848 consumer group known on disk (a live view: do not modify)."""
        return self._consumer_groups

    # --- writes ----------------------------------------------------------------------------

    def commit(self, group: str, offsets: Iterable[tuple[str, int, CommittedOffset]]) -> None:
        out = bytearray()
        items = list(offsets)
        for topic, partition, value in items:
            out += _frame(_offset_payload(group, topic, partition, value))
        self._append(out, len(items))
        if self.listener is not None and items:
            self.listener.offsets_committed(group, items)
        target = self._offsets.setdefault(group, {})
        for topic, partition, value in items:
            target[(topic, partition)] = value

    def delete_offsets(self, group: str, partitions: Iterable[TopicPartition]) -> None:
        items = [tp for tp in partitions if tp in self._offsets.get(group, {})]
        if not items:
            return
        out = bytearray()
        for topic, partition in items:
            out += _frame(_tombstone_payload(group, topic, partition))
        self._append(out, len(items))
        if self.listener is not None:
            self.listener.offsets_deleted(group, items)
        current = self._offsets[group]
        for tp in items:
            del current[tp]
        if not current:
            del self._offsets[group]

    def put_group(self, group: str, record: GroupRecord) -> None:
        """Append the group's metadata record (no fsync: see ``flush``).

        Raises RecordTooLarge, writing nothing, when the record exceeds MAX_RECORD."""
        if self._groups.get(group) == record:
            return
        payload = _group_payload(group, record)
        if len(payload) > MAX_RECORD:
            raise RecordTooLarge(f"group {group}: metadata record of {len(payload)} bytes")
        self._append(_frame(payload), 1)
        if self.listener is not None:
            self.listener.group_written(group, record)
        self._groups[group] = record
        self._consumer_groups.pop(group, None)

    def put_consumer_group(self, group: str, record: ConsumerGroupRecord) -> None:
        """Append the consumer group's record (no fsync: see ``flush``); it replaces a
        classic group of the same id. Raises RecordTooLarge, writing nothing, when the
        record exceeds MAX_RECORD."""
        if self._consumer_groups.get(group) == record and group not in self._groups:
            return
        payload = _str(CONSUMER_GROUP, group) + consumer_group_records.encode(record)
        if len(payload) > MAX_RECORD:
            raise RecordTooLarge(f"group {group}: consumer group record of {len(payload)} bytes")
        self._append(_frame(payload), 1)
        if self.listener is not None:
            self.listener.consumer_group_written(group, record, self._consumer_groups.get(group))
        self._consumer_groups[group] = record
        self._groups.pop(group, None)

    def delete_group(self, group: str) -> None:
        """Forget the group and all its offsets (Kafka writes tombstones for both)."""
        known = (self._groups, self._offsets, self._consumer_groups)
        if not any(group in kind for kind in known):
            return
        self._append(_frame(_str(GROUP_TOMBSTONE, group)), 1)
        if self.listener is not None:
            self.listener.group_deleted(
                group,
                list(self._offsets.get(group, {})),
                group in self._groups,
                self._consumer_groups.get(group),
            )
        self._groups.pop(group, None)
        self._consumer_groups.pop(group, None)
        self._offsets.pop(group, None)

    def commit_transactional(
        self,
        group: str,
        items: list[tuple[str, int, CommittedOffset]],
        producer_id: int,
        producer_epoch: int,
    ) -> None:
        """TxnOffsetCommit's offsets, pending until the transaction ends: only the listener
        keeps them (as Kafka's transactional records); the maps do not change."""
        if self.listener is not None and items:
            self.listener.transactional_offsets(group, items, producer_id, producer_epoch)

    def end_transaction(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        groups: list[str],
        known: dict[str, list[tuple[str, int, CommittedOffset]]],
    ) -> None:
        """The transaction's end for ``groups``: the listener writes its marker and names
        the offsets that take effect, which the maps then take. ``known`` are the pending
        offsets as the transaction coordinator kept them: without a listener they are
        committed as plain offsets when ``commit``; the listener does so with those it had
        not written as transactional records (a transaction begun before they were)."""
        if self.listener is None:
            if commit:
                for group, items in known.items():
                    self.commit(group, items)
            return
        committed = self.listener.transaction_ended(
            producer_id, producer_epoch, commit, groups, known
        )
        for group, items in committed.items():
            target = self._offsets.setdefault(group, {})
            for topic, partition, value in items:
                target[(topic, partition)] = value

    def flush(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.fsync(self._fd)

    # --- compaction ------------------------------------------------------------------------

    def live_entries(self) -> int:
        return (
            len(self._groups)
            + len(self._consumer_groups)
            + sum(len(v) for v in self._offsets.values())
        )

    def maybe_compact(self) -> bool:
        if self._compacting is not None or not self.compaction_due():
            return False
        self.compact()
        return True

    def compaction_due(self) -> bool:
        return self._records > 2 * self.live_entries() + COMPACT_SLACK

    def prepare_compaction(self) -> PendingCompaction | None:
        """The first half of a compaction off the owner's thread: the live maps as they
        are now (None when not due or one is under way)."""
        if self._compacting is not None or self._fd < 0 or not self.compaction_due():
            return None
        pending = PendingCompaction(
            # Its own name: a worker of an abandoned store (a crash-restart in the same
            # process) may still be writing an older one.
            self.path.with_suffix(f".{uuid.uuid4().hex}{COMPACTING_SUFFIX}"),
            dict(self._groups),
            dict(self._consumer_groups),
            {group: dict(offsets) for group, offsets in self._offsets.items()},
            self._size,
            self._records,
        )
        self._compacting = pending
        return pending

    def finish_compaction(self, pending: PendingCompaction) -> bool:
        """The owner's half once ``pending.write`` has ended: the records appended since
        ``prepare_compaction`` go behind the live ones, then fsync and rename. False when
        the compaction was given up (a failed write, or the store closed meanwhile)."""
        if self._compacting is pending:
            self._compacting = None
        fd = pending.fd
        if fd < 0 or self._fd < 0:
            pending.discard()
            return False
        try:
            tail = _pread_all(self._fd, self._size - pending.base_size, pending.base_size)
            _pwrite_all(fd, tail, pending.size)
            os.fsync(fd)
            with self._lock:
                os.replace(pending.tmp, self.path)
                os.close(self._fd)
                self._fd = fd
                pending.fd = -1
            _fsync_dir(self.path.parent)
        except OSError:
            pending.discard()
            raise
        self._size = pending.size + len(tail)
        self._tail_dirty = False
        self._records = pending.live + (self._records - pending.base_records)
        self.compactions += 1
        return True

    def compact(self) -> None:
        out = _encode_live(self._groups, self._consumer_groups, self._offsets)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _pwrite_all(fd, bytes(out), 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        with self._lock:
            os.replace(tmp, self.path)
            _fsync_dir(self.path.parent)
            os.close(self._fd)
            self._fd = fd
        self._size = len(out)
        self._tail_dirty = False
        self._records = self.live_entries()
        self.compactions += 1

    def close(self) -> None:
        """Compact (so the next start replays only live entries), fsync and close."""
        if self._fd < 0:
            return
        self.compact()
        os.close(self._fd)
        self._fd = -1

    def close_unclean(self) -> None:
        """Close without compacting or fsyncing (a crash)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # --- internals -------------------------------------------------------------------------

    def _append(self, data: bytes | bytearray, records: int) -> None:
        if self._tail_dirty:
            os.ftruncate(self._fd, self._size)
            self._tail_dirty = False
        try:
            _pwrite_all(self._fd, bytes(data), self._size)
        except BaseException:
            # Part of the frame may be on disk: replay would stop there and drop every record
            # written after it. Cut it now, or before the next append if this fails too.
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                log.exception("%s: cannot cut a failed write at %d", self.path, self._size)
                self._tail_dirty = True
            raise
        self._size += len(data)
        self._records += records

    def _apply(self, payload: bytes) -> None:
        kind = payload[0]
        pos = 1
        group, pos = _read_str(payload, pos)
        if kind == GROUP_TOMBSTONE:
            self._groups.pop(group, None)
            self._consumer_groups.pop(group, None)
            self._offsets.pop(group, None)
        elif kind == GROUP:
            protocol_type, pos = _read_nullable_str(payload, pos)
            (generation,) = struct.unpack_from(">i", payload, pos)
            self._groups[group] = GroupRecord(protocol_type, generation)
        elif kind == CONSUMER_GROUP:
            self._consumer_groups[group] = consumer_group_records.decode(payload, pos)
            self._groups.pop(group, None)
        elif kind in (GROUP_METADATA, GROUP_METADATA_STATE_TIME):
            self._groups[group] = _read_group(
                payload, pos, with_state_time=kind == GROUP_METADATA_STATE_TIME
            )
            self._consumer_groups.pop(group, None)
        elif kind in (OFFSET, OFFSET_TOMBSTONE, OFFSET_WITH_EXPIRY):
            topic, pos = _read_str(payload, pos)
            (partition,) = struct.unpack_from(">i", payload, pos)
            pos += 4
            if kind == OFFSET_TOMBSTONE:
                current = self._offsets.get(group, {})
                current.pop((topic, partition), None)
                if not current:
                    self._offsets.pop(group, None)
                return
            offset, epoch, timestamp = struct.unpack_from(">qiq", payload, pos)
            pos += 20
            metadata, pos = _read_nullable_str(payload, pos)
            expire: int | None = None
            if kind == OFFSET_WITH_EXPIRY:
                (expire,) = struct.unpack_from(">q", payload, pos)
            value = CommittedOffset(offset, epoch, metadata, timestamp, expire)
            self._offsets.setdefault(group, {})[(topic, partition)] = value
        else:
            raise ValueError(f"unknown record type {kind}")


# --- encoding ------------------------------------------------------------------------------


def _enc(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">i", -1)
    raw = text.encode()
    return struct.pack(">i", len(raw)) + raw


def _str(kind: int, group: str) -> bytes:
    return bytes([kind]) + _enc(group)


def _offset_payload(group: str, topic: str, partition: int, value: CommittedOffset) -> bytes:
    expire = value.expire_timestamp_ms
    payload = (
        _str(OFFSET if expire is None else OFFSET_WITH_EXPIRY, group)
        + _enc(topic)
        + struct.pack(
            ">iqiq", partition, value.offset, value.leader_epoch, value.commit_timestamp_ms
        )
        + _enc(value.metadata)
    )
    return payload if expire is None else payload + struct.pack(">q", expire)


def _tombstone_payload(group: str, topic: str, partition: int) -> bytes:
    return _str(OFFSET_TOMBSTONE, group) + _enc(topic) + struct.pack(">i", partition)


def _bytes(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def _group_payload(group: str, record: GroupRecord) -> bytes:
    out = bytearray(_str(GROUP_METADATA_STATE_TIME, group))
    out += _enc(record.protocol_type)
    out += struct.pack(">i", record.generation)
    out += _enc(record.protocol_name)
    out += _enc(record.leader)
    out += struct.pack(">i", len(record.members))
    for m in record.members:
        out += _enc(m.member_id) + _enc(m.group_instance_id)
        out += _enc(m.client_id) + _enc(m.client_host)
        out += struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms)
        out += _bytes(m.subscription) + _bytes(m.assignment)
    state_time = record.state_timestamp_ms
    out += struct.pack(">q", -1 if state_time is None else state_time)
    return bytes(out)


def _read_group(data: bytes, pos: int, *, with_state_time: bool) -> GroupRecord:
    protocol_type, pos = _read_nullable_str(data, pos)
    (generation,) = struct.unpack_from(">i", data, pos)
    protocol_name, pos = _read_nullable_str(data, pos + 4)
    leader, pos = _read_nullable_str(data, pos)
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if count < 0 or count > len(data):
        raise ValueError("bad member count")
    members = []
    for _ in range(count):
        member_id, pos = _read_str(data, pos)
        instance_id, pos = _read_nullable_str(data, pos)
        client_id, pos = _read_str(data, pos)
        client_host, pos = _read_str(data, pos)
        rebalance_timeout, session_timeout = struct.unpack_from(">ii", data, pos)
        subscription, pos = _read_bytes(data, pos + 8)
        assignment, pos = _read_bytes(data, pos)
        members.append(
            MemberRecord(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    state_time: int | None = None
    if with_state_time:
        (stamp,) = struct.unpack_from(">q", data, pos)
        pos += 8
        state_time = None if stamp == -1 else stamp
    if pos != len(data):
        raise ValueError("trailing bytes after the group record")
    return GroupRecord(protocol_type, generation, protocol_name, leader, tuple(members), state_time)


def _frame(payload: bytes) -> bytes:
    body = struct.pack(">i", len(payload)) + payload
    return struct.pack(">I", crc32c(body)) + body


def _read_nullable_str(data: bytes, pos: int) -> tuple[str | None, int]:
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if n < 0:
        return None, pos
    if pos + n > len(data):
        raise ValueError("string past the end of the record")
    return data[pos : pos + n].decode(), pos + n


def _read_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if n < 0 or pos + n > len(data):
        raise ValueError("bytes past the end of the record")
    return data[pos : pos + n], pos + n


def _read_str(data: bytes, pos: int) -> tuple[str, int]:
    text, pos = _read_nullable_str(data, pos)
    if text is None:
        raise ValueError("null where a string is required")
    return text, pos


def _frames(data: bytes, pos: int) -> Iterator[tuple[int, bytes]]:
    """(end position, payload) of each intact record from ``pos``; stops at the first bad one."""
    while pos + _FRAME.size <= len(data):
        crc, length = _FRAME.unpack_from(data, pos)
        end = pos + _FRAME.size + length
        if length <= 0 or length > MAX_RECORD or end > len(data):
            return
        if crc32c(data[pos + 4 : end]) != crc:
            return
        yield end, data[pos + _FRAME.size : end]
        pos = end


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _pwrite_all(fd: int, data: bytes, position: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view = view[written:]
        position += written


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _encode_live(
    groups: dict[str, GroupRecord],
    consumer_groups: dict[str, ConsumerGroupRecord],
    offsets: dict[str, dict[TopicPartition, CommittedOffset]],
) -> bytearray:
    out = bytearray(_HEADER)
    for group, record in groups.items():
        out += _frame(_group_payload(group, record))
    for group, consumer in consumer_groups.items():
        out += _frame(_str(CONSUMER_GROUP, group) + consumer_group_records.encode(consumer))
    for group, group_offsets in offsets.items():
        for (topic, partition), value in group_offsets.items():
            out += _frame(_offset_payload(group, topic, partition, value))
    return out


def _pread_all(fd: int, size: int, offset: int) -> bytes:
    parts: list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            raise OSError(f"short read at {offset}")
        parts.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(parts)


class PendingCompaction:
    """The live entries of a compaction, captured on the owner's thread; ``write`` (on a
    worker thread) encodes them into ``tmp`` and fsyncs it, keeping it open as ``fd``."""

    def __init__(
        self,
        tmp: Path,
        groups: dict[str, GroupRecord],
        consumer_groups: dict[str, ConsumerGroupRecord],
        offsets: dict[str, dict[TopicPartition, CommittedOffset]],
        base_size: int,
        base_records: int,
    ) -> None:
        self.tmp = tmp
        self._maps = (groups, consumer_groups, offsets)
        self.live = len(groups) + len(consumer_groups) + sum(len(o) for o in offsets.values())
        self.base_size = base_size
        self.base_records = base_records
        self.size = 0
        self.fd = -1

    def write(self) -> None:
        out = _encode_live(*self._maps)
        fd = os.open(self.tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _pwrite_all(fd, bytes(out), 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        self.size = len(out)
        self.fd = fd

    def discard(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        try:
            self.tmp.unlink(missing_ok=True)
        except OSError:
            log.exception("cannot remove %s", self.tmp)


class OffsetsInTopic(CommittedOffsets):
    """The committed offsets and groups kept in ``__consumer_offsets`` only: no file; each
    change goes to the listener (which appends it to the topic, raising when it cannot),
    and ``flush`` fsyncs what was appended (``flush_topic``), as Kafka answers an
    OffsetCommit once its records are written to the log."""

    def __init__(self, flush_topic: Callable[[], None]) -> None:
        super().__init__(Path(FILE_NAME), -1, 0)
        self._flush_topic = flush_topic

    def _append(self, data: bytes | bytearray, records: int) -> None:
        pass  # the listener writes the change into the topic

    def flush(self) -> None:
        self._flush_topic()

    def prepare_compaction(self) -> PendingCompaction | None:
        return None  # the topic's log cleaner keeps the latest record per key

    def maybe_compact(self) -> bool:
        return False

    def compact(self) -> None:
        pass

    def close(self) -> None:
        pass  # the store closes (and flushes) the topic's partitions

    def close_unclean(self) -> None:
        pass
