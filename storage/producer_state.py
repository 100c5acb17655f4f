"""Idempotent-producer state of one partition: the last five batches of each producer.

Pure logic, no I/O. The rules are Kafka's (ProducerStateManager / ProducerAppendInfo), see
KAFKA_NOTES §5. ``check`` decides without mutating so that a partition log can run
check -> write -> ``update`` as one synchronous step and leave the state untouched when the
check fails or the write raises.

Transactions (TRANSACTIONS.md §4-§5, Kafka's ProducerAppendInfo): each producer may have one
open transaction, whose first offset pins the partition's last stable offset; a COMMIT or
ABORT marker (``check_marker`` / ``end_txn``) closes it and records the coordinator epoch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from protocol.errors import ErrorCode
from protocol.value_type import value_type

# Kafka keeps metadata of the last 5 batches per producer: the most a producer may have in
# flight (max.in.flight.requests.per.connection <= 5 with idempotence).
NUM_BATCHES_TO_RETAIN = 5
# Sequences are int32 that wrap to 0 after Integer.MAX_VALUE.
MAX_SEQUENCE = 0x7FFFFFFF


@value_type(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    """NONE + no duplicate = append; NONE + duplicate = answer with the original batch."""

    error: ErrorCode
    duplicate: BatchMetadata | None = None


ACCEPT = SequenceCheck(ErrorCode.NONE)
_FENCED = SequenceCheck(ErrorCode.INVALID_PRODUCER_EPOCH)
_OUT_OF_ORDER = SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
_INVALID_TXN_STATE = SequenceCheck(ErrorCode.INVALID_TXN_STATE)
NO_OFFSET = -1


def next_sequence(seq: int) -> int:
    """The sequence that follows ``seq`` (after 2147483647 comes 0)."""
    return 0 if seq >= MAX_SEQUENCE else seq + 1


class ProducerEntry:
    """State of one producer id on one partition."""

    __slots__ = (
        "batches",
        "coordinator_epoch",
        "current_txn_first_offset",
        "epoch",
        "last_timestamp_ms",
        "producer_id",
    )

    def __init__(
        self,
        producer_id: int,
        epoch: int,
        last_timestamp_ms: int = -1,
        *,
        coordinator_epoch: int = -1,
        current_txn_first_offset: int = NO_OFFSET,
    ) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        # Epoch of the transaction coordinator that wrote the last marker (-1: none yet);
        # a marker from an older coordinator is fenced (TRANSACTION_COORDINATOR_FENCED).
        self.coordinator_epoch = coordinator_epoch
        # Offset of the open transaction's first batch (-1: none open).
        self.current_txn_first_offset = current_txn_first_offset
        # Oldest first; deque(maxlen) drops the oldest as the sixth arrives.
        self.batches: deque[BatchMetadata] = deque(maxlen=NUM_BATCHES_TO_RETAIN)
        # Max timestamp of the last batch (Kafka's ProducerStateEntry.lastTimestamp):
        # producer.id.expiration.ms counts from here. Taken from the batch rather than the
        # wall clock so that replaying the log after a crash rebuilds exactly the same value.
        self.last_timestamp_ms = last_timestamp_ms

    @property
    def last_batch(self) -> BatchMetadata | None:
        return self.batches[-1] if self.batches else None

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def __repr__(self) -> str:
        return (
            f"ProducerEntry(producer_id={self.producer_id}, epoch={self.epoch}, "
            f"batches={list(self.batches)!r}, last_timestamp_ms={self.last_timestamp_ms}, "
            f"coordinator_epoch={self.coordinator_epoch}, "
            f"current_txn_first_offset={self.current_txn_first_offset})"
        )

    @property
    def in_transaction(self) -> bool:
        return self.current_txn_first_offset >= 0


class ProducerStateManager:
    """All producers of one partition, keyed by producer id."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}
        # Bumped on every mutation, so a snapshot writer can tell whether anything changed.
        self.changes = 0

    def __len__(self) -> int:
        return len(self._producers)

    def get(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def entries(self) -> Iterable[ProducerEntry]:
        return list(self._producers.values())

    def __iter__(self) -> Iterator[ProducerEntry]:
        return iter(list(self._producers.values()))

    def check(
        self,
        producer_id: int,
        epoch: int,
        first_seq: int,
        last_seq: int,
        transactional: bool = False,
        coordinator: bool = False,
    ) -> SequenceCheck:
        """Apply KAFKA_NOTES §5 in order, without changing anything.

        Then, as ProducerAppendInfo.appendDataBatch after its epoch and sequence checks, a
        non-transactional batch while the producer's transaction is open is INVALID_TXN_STATE.
        ``coordinator``: a batch the group coordinator writes for the producer (its
        TxnOffsetCommit offsets, without sequence numbers): only the epoch is checked, as
        Kafka checks sequences for client appends only (AppendOrigin.CLIENT).
        """
        if coordinator:
            entry = self._producers.get(producer_id)
            return _FENCED if entry is not None and epoch < entry.epoch else ACCEPT
        verdict = self._check_sequence(producer_id, epoch, first_seq, last_seq)
        if verdict.error != ErrorCode.NONE or verdict.duplicate is not None:
            return verdict
        entry = self._producers.get(producer_id)
        if entry is not None and entry.in_transaction and not transactional:
            return _INVALID_TXN_STATE
        return verdict

    def has_ongoing_txn(self, producer_id: int, epoch: int) -> bool:
        """ProducerStateManager.hasOngoingTransaction: an open transaction at this epoch."""
        entry = self._producers.get(producer_id)
        return entry is not None and entry.epoch == epoch and entry.in_transaction

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction (None: none open)."""
        firsts = [e.current_txn_first_offset for e in self._producers.values() if e.in_transaction]
        return min(firsts) if firsts else None

    def first_unstable_offset_excluding(self, producer_id: int) -> int | None:
        firsts = [
            e.current_txn_first_offset
            for e in self._producers.values()
            if e.in_transaction and e.producer_id != producer_id
        ]
        return min(firsts) if firsts else None

    def open_transactions(self) -> list[ProducerEntry]:
        return [e for e in self._producers.values() if e.in_transaction]

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> ErrorCode:
        """ProducerAppendInfo.appendEndTxnMarker's checks, in its order."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return ErrorCode.NONE
        if epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if entry.coordinator_epoch > coordinator_epoch:
            return ErrorCode.TRANSACTION_COORDINATOR_FENCED
        return ErrorCode.NONE

    def end_txn(
        self, producer_id: int, epoch: int, coordinator_epoch: int, timestamp_ms: int
    ) -> int:
        """Apply a marker (after ``check_marker``); returns the closed transaction's first
        offset, -1 when none was open (a resent marker: only the entry changes)."""
        self.changes += 1
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = ProducerEntry(producer_id, epoch)
            self._producers[producer_id] = entry
        elif epoch != entry.epoch:
            # ProducerStateEntry.maybeUpdateProducerEpoch: a new epoch clears the window.
            entry.epoch = epoch
            entry.batches.clear()
        first = entry.current_txn_first_offset
        entry.current_txn_first_offset = NO_OFFSET
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp_ms = timestamp_ms
        return first

    def _check_sequence(
        self, producer_id: int, epoch: int, first_seq: int, last_seq: int
    ) -> SequenceCheck:
        entry = self._producers.get(producer_id)
        if entry is None:
            # KIP-360: an unknown producer (new, or expired) is accepted with any sequence;
            # current brokers no longer answer UNKNOWN_PRODUCER_ID.
            return ACCEPT
        duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
        if duplicate is not None:
            return SequenceCheck(ErrorCode.NONE, duplicate)
        if epoch < entry.epoch:
            return _FENCED
        if epoch > entry.epoch:
            # Java and librdkafka bump the epoch locally after a sequence gap and restart at 0.
            return ACCEPT if first_seq == 0 else _OUT_OF_ORDER
        if not entry.batches:
            # No sequence known for this epoch (e.g. restored without batches): like Kafka,
            # accept rather than guess.
            return ACCEPT
        if first_seq != next_sequence(entry.last_seq):
            # Also where a retry older than the cached window, or one overlapping a cached
            # batch without matching it exactly, ends up: Kafka refuses rather than store twice.
            return _OUT_OF_ORDER
        return ACCEPT

    def update(
        self,
        producer_id: int,
        epoch: int,
        first_seq: int,
        last_seq: int,
        base_offset: int,
        last_offset: int,
        max_timestamp: int,
        transactional: bool = False,
    ) -> ProducerEntry:
        """Record an appended batch (call only after ``check`` accepted it).

        The same call rebuilds the state when the log is replayed at open, so everything it
        records must come from the batch itself.
        """
        self.changes += 1
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = ProducerEntry(producer_id, epoch)
            self._producers[producer_id] = entry
        elif epoch != entry.epoch:
            # A new epoch starts a new sequence space: old batches can no longer match.
            entry.epoch = epoch
            entry.batches.clear()
        entry.batches.append(
            BatchMetadata(first_seq, last_seq, base_offset, last_offset, max_timestamp)
        )
        # Kafka's ProducerStateEntry.addBatch: lastTimestamp is the batch's max timestamp
        # (the broker's clock on LogAppendTime topics, whose batches are stamped before the
        # append). A batch with old CreateTime timestamps therefore expires early; Kafka's
        # too, and clients cannot tell the difference from an idle producer.
        entry.last_timestamp_ms = max_timestamp
        if transactional and not entry.in_transaction:
            # The transaction's first batch: the LSO stays at or below it until its marker.
            entry.current_txn_first_offset = base_offset
        return entry

    def restore(self, entry: ProducerEntry) -> None:
        """Install an entry as loaded from elsewhere (a snapshot loader)."""
        self.changes += 1
        self._producers[entry.producer_id] = entry

    def remove(self, producer_id: int) -> bool:
        self.changes += 1
        return self._producers.pop(producer_id, None) is not None

    def clear(self) -> None:
        self.changes += 1
        self._producers.clear()

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` (producer.id.expiration.ms).

        The only way a producer is forgotten: since KAFKA-7190 (Kafka 2.4) moving the log
        start (retention, DeleteRecords) keeps every producer, so a retry of a deleted batch
        is still a duplicate and a gap still OUT_OF_ORDER_SEQUENCE_NUMBER. Kafka's
        isProducerExpired: ``now - lastTimestamp >= producer.id.expiration.ms`` and no open
        transaction.
        """
        expired = [
            pid
            for pid, entry in self._producers.items()
            if not entry.in_transaction and now_ms - entry.last_timestamp_ms >= expiration_ms
        ]
        for pid in expired:
            del self._producers[pid]
        if expired:
            self.changes += 1
        return len(expired)
