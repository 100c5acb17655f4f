"""The transaction coordinator's state: ``<data dir>/transaction-state.log``.

Kafka keeps one record per transactional id in its ``__transaction_state`` topic
(TransactionLog: key = transactional id, value = producer id and epoch, timeout, state,
partitions, timestamps; tagged PreviousProducerId / NextProducerId / ClientTransactionVersion)
and replays it at start-up, the last record of an id winning and a tombstone deleting it.
This file is that log: append-only frames, each ``int32 length, uint32 CRC-32C, body``;
the body is ``int16 version`` then the fields of ``TxnRecord`` (below). minikafka also keeps
the last epoch (TransactionMetadata.lastProducerEpoch, which 4.0 does not persist) and the
transactional offsets pending in the transaction (Kafka keeps them as transactional records
in ``__consumer_offsets``; here they travel with the transaction they belong to).

Durability: the coordinator appends, then fsyncs (``flush``) before it answers, as Kafka's
acks=-1 write to the transaction log. Loading stops at the first torn or corrupt frame and
cuts the file there (a crash mid-append). When the file is mostly superseded records it is
rewritten with the latest record of each id (tmp, fsync, rename).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from .atomic_file import fsync_dir, write_atomic

log = logging.getLogger(__name__)

FILE_NAME = "transaction-state.log"
VERSION = 0
_FRAME = struct.Struct(">iI")
_MAX_BODY = 64 * 1024 * 1024
# Rewrite when the file holds this many records more than there are live ids.
_COMPACT_SLACK = 10_000

# TransactionState ids (TransactionState.java).
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD = range(7)
PREPARE_EPOCH_FENCE = 7
STATE_NAMES = {
    EMPTY: "Empty",
    ONGOING: "Ongoing",
    PREPARE_COMMIT: "PrepareCommit",
    PREPARE_ABORT: "PrepareAbort",
    COMPLETE_COMMIT: "CompleteCommit",
    COMPLETE_ABORT: "CompleteAbort",
    DEAD: "Dead",
    PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}


class CorruptRecordError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class PendingOffset:
    """A TxnOffsetCommit offset waiting for its transaction's marker."""

    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(slots=True)
class TxnRecord:
    transactional_id: str
    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: int
    partitions: list[tuple[str, int]] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    pending_offsets: list[PendingOffset] = field(default_factory=list)
    start_ms: int = -1
    last_update_ms: int = -1
    client_transaction_version: int = 0


class _Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def pack(self, fmt: str, *values: int) -> None:
        self.buf += struct.pack(fmt, *values)

    def string(self, value: str | None) -> None:
        if value is None:
            self.pack(">i", -1)
            return
        raw = value.encode()
        self.pack(">i", len(raw))
        self.buf += raw


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def unpack(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptRecordError("record cut short")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def count(self) -> int:
        (n,) = self.unpack(">i")
        if n < 0 or n > len(self.data):
            raise CorruptRecordError(f"bad count {n}")
        return n

    def string(self) -> str | None:
        (n,) = self.unpack(">i")
        if n == -1:
            return None
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptRecordError(f"bad string length {n}")
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        return raw.decode()

    def required(self) -> str:
        value = self.string()
        if value is None:
            raise CorruptRecordError("null where a string is required")
        return value


def encode(record: TxnRecord) -> bytes:
    w = _Writer()
    w.pack(">h", VERSION)
    w.string(record.transactional_id)
    w.pack(
        ">qqqhhibqqb",
        record.producer_id,
        record.previous_producer_id,
        record.next_producer_id,
        record.producer_epoch,
        record.last_producer_epoch,
        record.timeout_ms,
        record.state,
        record.start_ms,
        record.last_update_ms,
        record.client_transaction_version,
    )
    w.pack(">i", len(record.partitions))
    for topic, partition in record.partitions:
        w.string(topic)
        w.pack(">i", partition)
    w.pack(">i", len(record.groups))
    for group in record.groups:
        w.string(group)
    w.pack(">i", len(record.pending_offsets))
    for p in record.pending_offsets:
        w.string(p.group_id)
        w.string(p.topic)
        w.pack(">iqi", p.partition, p.offset, p.leader_epoch)
        w.string(p.metadata)
    body = bytes(w.buf)
    return _FRAME.pack(len(body), crc32c.crc32c(body)) + body


def decode(body: bytes) -> TxnRecord:
    r = _Reader(body)
    (version,) = r.unpack(">h")
    if version != VERSION:
        raise CorruptRecordError(f"unknown record version {version}")
    txn_id = r.required()
    pid, prev, nxt, epoch, last_epoch, timeout, state, start, update, tv = r.unpack(">qqqhhibqqb")
    if state not in STATE_NAMES:
        raise CorruptRecordError(f"unknown state {state}")
    partitions = []
    for _ in range(r.count()):
        topic = r.required()
        (partition,) = r.unpack(">i")
        partitions.append((topic, partition))
    groups = [r.required() for _ in range(r.count())]
    pending = []
    for _ in range(r.count()):
        group, topic = r.required(), r.required()
        partition, offset, leader_epoch = r.unpack(">iqi")
        pending.append(PendingOffset(group, topic, partition, offset, leader_epoch, r.string()))
    if r.pos != len(body):
        raise CorruptRecordError("bytes after the record")
    return TxnRecord(
        txn_id,
        pid,
        prev,
        nxt,
        epoch,
        last_epoch,
        timeout,
        state,
        partitions,
        groups,
        pending,
        start,
        update,
        tv,
    )


class TxnStateLog:
    """The open log file; ``records`` is what was loaded (latest record per live id)."""

    def __init__(self, path: Path, fd: int, size: int, records: dict[str, TxnRecord]) -> None:
        self.path = path
        self._fd = fd
        self._size = size
        self._written = len(records)
        self._dirty = False
        self._lock = threading.Lock()
        self.records = records
        # Told of each record once written (the broker mirrors them into __transaction_state).
        self.listener: Callable[[TxnRecord], None] | None = None

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str]) -> TxnStateLog:
        path = Path(data_dir) / FILE_NAME
        data = path.read_bytes() if path.exists() else b""
        records: dict[str, TxnRecord] = {}
        pos = 0
        count = 0
        while pos + _FRAME.size <= len(data):
            length, crc = _FRAME.unpack_from(data, pos)
            body = data[pos + _FRAME.size : pos + _FRAME.size + length]
            if not 0 <= length <= _MAX_BODY or len(body) != length or crc32c.crc32c(body) != crc:
                break
            try:
                record = decode(body)
            except (CorruptRecordError, UnicodeDecodeError):
                break
            if record.state == DEAD:
                records.pop(record.transactional_id, None)
            else:
                records[record.transactional_id] = record
            pos += _FRAME.size + length
            count += 1
        if pos != len(data):
            log.warning(
                "%s: cut %d bytes after the last whole record (offset %d)",
                path,
                len(data) - pos,
                pos,
            )
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if pos != len(data):
            os.ftruncate(fd, pos)
            os.fsync(fd)
        fsync_dir(path.parent)
        plog = cls(path, fd, pos, records)
        plog._written = count
        return plog

    def append(self, record: TxnRecord) -> None:
        """Write one record (durable after the next ``flush``). A failed write is cut off so
        no later record lands behind a torn frame."""
        frame = encode(record)
        with self._lock:
            try:
                written = 0
                while written < len(frame):
                    written += os.pwrite(self._fd, frame[written:], self._size + written)
            except OSError:
                os.ftruncate(self._fd, self._size)
                raise
            self._size += len(frame)
            self._written += 1
            self._dirty = True
        if self.listener is not None:
            self.listener(record)

    def flush(self) -> None:
        with self._lock:
            if not self._dirty or self._fd < 0:
                return
            self._dirty = False
            fd = os.dup(self._fd)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def maybe_compact(self, live: list[TxnRecord]) -> bool:
        """Rewrite the file with ``live`` (one record per id) when mostly superseded."""
        if self._written - len(live) < _COMPACT_SLACK:
            return False
        data = b"".join(encode(r) for r in live)
        with self._lock:
            write_atomic(self.path, data)
            os.close(self._fd)
            self._fd = os.open(self.path, os.O_RDWR, 0o644)
            self._size = len(data)
            self._written = len(live)
            self._dirty = False
        return True

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
