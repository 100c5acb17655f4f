"""The transaction coordinator (Kafka's TransactionCoordinator, TransactionMetadata,
TransactionStateManager and TransactionMarkerChannelManager, for one node).

One owner of every transactional id's state, on the event loop, no locks. Each change
follows Kafka's rule: set the id's pending state (other requests for it get
CONCURRENT_TRANSACTIONS meanwhile), append the new record to the coordinator's own log
(storage.txn_state_log) and fsync it, then apply it and answer.

Ending a transaction (EndTxn, a fence by InitProducerId, a timeout): PrepareCommit or
PrepareAbort is made durable first, then a COMMIT/ABORT marker goes into every partition of
the transaction (PartitionLog.append_marker, with the transaction's producer id and epoch
and this coordinator's epoch), the partitions are fsynced, the transaction's pending group
offsets are committed (COMMIT) or dropped (ABORT), and CompleteCommit/CompleteAbort is
written. Kafka answers EndTxn once the Prepare record is written and sends the markers
afterwards; on one node the markers are local appends, so they are written before the
answer and a client's next transaction never meets CONCURRENT_TRANSACTIONS for them.
At start-up a transaction found in PrepareCommit/PrepareAbort gets its markers again
(duplicates are harmless: a marker with no open transaction changes nothing but the
producer's entry); an Ongoing one waits for its timeout, as in Kafka.

Both generations side by side, chosen per request as Kafka does: transactions v1
(AddPartitionsToTxn/AddOffsetsToTxn before produce, EndTxn up to v4, the producer epoch kept
across transactions) and v2 (KIP-890 part 2: Produce v12 and TxnOffsetCommit v5 add their
partition implicitly, EndTxn v5 bumps the epoch at every end and answers the producer id and
epoch to use next; an exhausted epoch moves to a new producer id).

Deviations: the coordinator epoch is always 0 (one node never moves the coordinator);
pending transactional offsets are kept with the transaction's record instead of as
transactional records in ``__consumer_offsets``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any

from broker.coordinator.groups.coordinator import GroupCoordinator, OffsetToCommit
from broker.runtime.flusher import Flusher
from protocol.errors import ErrorCode
from storage.partition_log import PartitionLog
from storage.producer_ids import ProducerIdAllocator
from storage.store import Store
from storage.txn_state_log import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    DEAD,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    STATE_NAMES,
    PendingOffset,
    TxnRecord,
    TxnStateLog,
)

log = logging.getLogger(__name__)

# The coordinator's epoch written into markers (Kafka: the leader epoch of the transaction
# log partition; one node never moves it).
COORDINATOR_EPOCH = 0
# AddOffsetsToTxn adds __consumer_offsets-<partitionFor(group)> to the transaction.
GROUP_OFFSETS_TOPIC = "__consumer_offsets"
# offsets.topic.num.partitions' default (Kafka's groupMetadataTopicPartitionCount).
DEFAULT_OFFSETS_PARTITIONS = 50
# ProducerIdAndEpoch / TransactionMetadata.isEpochExhausted: Short.MaxValue - 1.
EPOCH_EXHAUSTED = 32766
NO_PRODUCER_ID = -1
NO_EPOCH = -1
# TransactionVersion: 0/1 keep the epoch across transactions; 2 (KIP-890 part 2) bumps it at
# every end and adds partitions implicitly.
TV1 = 0
TV2 = 2
# AddPartitionsToTxnManager's retry of CONCURRENT_TRANSACTIONS for an implicit add.
IMPLICIT_ADD_ATTEMPTS = 6
IMPLICIT_ADD_BACKOFF_S = 0.02

_PREPARE = {True: PREPARE_COMMIT, False: PREPARE_ABORT}
_COMPLETE = {True: COMPLETE_COMMIT, False: COMPLETE_ABORT}
_ENDED = (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)


def wall_ms() -> int:
    return int(time.time() * 1000)


def java_string_hash(value: str) -> int:
    """String.hashCode over UTF-16 code units, as a signed int32."""
    h = 0
    data = value.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: str, partitions: int) -> int:
    """partitionFor of both coordinators: Utils.abs(key.hashCode) % partitions
    (offsets.topic.num.partitions or transaction.state.log.num.partitions)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass(frozen=True, slots=True)
class Settings:
    max_timeout_ms: int
    id_expiration_ms: int
    abort_interval_ms: int
    expire_interval_ms: int


@dataclass(frozen=True, slots=True)
class InitResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_EPOCH


class TransactionCoordinator:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        txn_log: TxnStateLog,
        producer_ids: ProducerIdAllocator,
        flusher: Flusher,
        groups: GroupCoordinator,
    ) -> None:
        self.settings = settings
        self._store = store
        self._log = txn_log
        self._producer_ids = producer_ids
        self._flusher = flusher
        self._groups = groups
        self.txns: dict[str, TxnRecord] = dict(txn_log.records)
        # transactional id -> the state its in-flight change moves to (Kafka's pendingState).
        self.pending: dict[str, int] = {}
        # transactional id -> set when its in-flight change is written (or failed).
        self._settled: dict[str, asyncio.Event] = {}
        self._tasks: set[asyncio.Task[object]] = set()
        self._timer: asyncio.Task[None] | None = None
        self.closed = False
        # Called with the partitions that got a marker: their last stable offset moved, so
        # read_committed fetches parked on them are woken (set by the server).
        self.on_markers: Callable[[list[PartitionLog]], None] | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._timer = loop.create_task(self._run_timers(), name="transactions")
        for txn_id, meta in list(self.txns.items()):
            if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
                # TransactionStateManager.loadTransactionMetadata: finish what was prepared.
                log.info(
                    "transactional id %r was in %s at start-up: writing its markers",
                    txn_id,
                    STATE_NAMES[meta.state],
                )
                self._spawn(self._complete(txn_id, meta.state == PREPARE_COMMIT))

    def _spawn(self, coro: Coroutine[Any, Any, object]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        self._log.close()

    async def _run_timers(self) -> None:
        last_expire = wall_ms()
        while True:
            await asyncio.sleep(self.settings.abort_interval_ms / 1000)
            try:
                self.abort_timed_out(wall_ms())
                now = wall_ms()
                if now - last_expire >= self.settings.expire_interval_ms:
                    last_expire = now
                    await self.expire_ids(now)
            except Exception:
                log.exception("transaction coordinator timer failed")

    # --- persistence -----------------------------------------------------------------------

    async def _persist(self, new: TxnRecord) -> ErrorCode:
        """Pending state -> append -> fsync -> apply (TransactionStateManager's
        appendTransactionToLog)."""
        txn_id = new.transactional_id
        self.pending[txn_id] = new.state
        settled = self._settled[txn_id] = asyncio.Event()
        try:
            self._log.append(new)
            await self._flusher.flush([self._log])
        except Exception:
            log.exception("transaction log write for %r failed", txn_id)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        else:
            if new.state == DEAD:
                self.txns.pop(txn_id, None)
            else:
                self.txns[txn_id] = new
            return ErrorCode.NONE
        finally:
            # Applied before the waiters (add_pending_offsets) read the record again.
            del self.pending[txn_id]
            del self._settled[txn_id]
            settled.set()

    # --- InitProducerId --------------------------------------------------------------------

    async def init_producer_id(
        self, txn_id: str, timeout_ms: int, producer_id: int, producer_epoch: int
    ) -> InitResult:
        """TransactionCoordinator.handleInitProducerId for a transactional id."""
        if txn_id == "":
            return InitResult(ErrorCode.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.settings.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_EPOCH):
            return InitResult(ErrorCode.INVALID_REQUEST)
        now = wall_ms()
        meta = self.txns.get(txn_id)
        if meta is None:
            meta = TxnRecord(
                txn_id,
                self._producer_ids.next_id(),
                NO_PRODUCER_ID,
                NO_PRODUCER_ID,
                NO_EPOCH,
                NO_EPOCH,
                timeout_ms,
                EMPTY,
                start_ms=-1,
                last_update_ms=now,
            )
            self.txns[txn_id] = meta
        if txn_id in self.pending:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if producer_id != NO_PRODUCER_ID and not self._valid_producer(
            meta, producer_id, producer_epoch
        ):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.state == ONGOING:
            # Fence the open transaction: bump the epoch and abort it; the producer retries
            # and then gets a further bump (TransactionCoordinator: CONCURRENT_TRANSACTIONS).
            error = await self._fence_and_abort(txn_id, meta, "a new producer initialised it")
            return InitResult(error or ErrorCode.CONCURRENT_TRANSACTIONS)
        new = replace(
            meta,
            timeout_ms=timeout_ms,
            state=EMPTY,
            partitions=[],
            groups=[],
            pending_offsets=[],
            start_ms=-1,
            last_update_ms=now,
        )
        if meta.producer_epoch >= EPOCH_EXHAUSTED and producer_epoch in (
            NO_EPOCH,
            meta.producer_epoch,
        ):
            new.previous_producer_id = meta.producer_id
            new.producer_id = self._producer_ids.next_id()
            new.producer_epoch, new.last_producer_epoch = 0, NO_EPOCH
        elif producer_epoch == NO_EPOCH:
            new.producer_epoch, new.last_producer_epoch = meta.producer_epoch + 1, NO_EPOCH
        elif producer_epoch == meta.producer_epoch or meta.producer_epoch == NO_EPOCH:
            new.producer_epoch, new.last_producer_epoch = (
                meta.producer_epoch + 1,
                meta.producer_epoch,
            )
        elif producer_epoch == meta.last_producer_epoch:
            pass  # a retry of the bump that already happened
        else:
            return InitResult(ErrorCode.PRODUCER_FENCED)
        error = await self._persist(new)
        if error:
            return InitResult(error)
        return InitResult(ErrorCode.NONE, new.producer_id, new.producer_epoch)

    @staticmethod
    def _valid_producer(meta: TxnRecord, producer_id: int, producer_epoch: int) -> bool:
        """TransactionCoordinator.isValidProducerId (KIP-360 re-initialisation)."""
        if meta.producer_epoch == NO_EPOCH or producer_id == meta.producer_id:
            return True
        return producer_id == meta.previous_producer_id and producer_epoch >= EPOCH_EXHAUSTED

    # --- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------

    def _check_producer(self, txn_id: str, producer_id: int, producer_epoch: int) -> ErrorCode:
        meta = self.txns.get(txn_id)
        if meta is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if txn_id in self.pending:
            # Checked first so a pending change (an epoch bump) completes before the others.
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.NONE

    async def add_partitions(
        self,
        txn_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[tuple[str, int]],
        groups: tuple[str, ...] = (),
        client_tv: int = TV1,
    ) -> ErrorCode:
        """TransactionCoordinator.handleAddPartitionsToTransaction (one error for all).
        ``client_tv`` 2: an implicit add by Produce v12 / TxnOffsetCommit v5, which marks
        the transaction as a transactions-v2 one (TransactionMetadata.clientTransactionVersion)."""
        error = self._check_producer(txn_id, producer_id, producer_epoch)
        if error:
            return error
        meta = self.txns[txn_id]
        have = set(meta.partitions)
        if (
            meta.state == ONGOING
            and have.issuperset(partitions)
            and set(meta.groups) >= set(groups)
        ):
            return ErrorCode.NONE
        now = wall_ms()
        new = replace(
            meta,
            client_transaction_version=client_tv,
            state=ONGOING,
            partitions=meta.partitions + [p for p in dict.fromkeys(partitions) if p not in have],
            groups=meta.groups + [g for g in dict.fromkeys(groups) if g not in meta.groups],
            pending_offsets=list(meta.pending_offsets),
            start_ms=now if meta.state in _ENDED else meta.start_ms,
            last_update_ms=now,
        )
        return await self._persist(new)

    async def add_offsets(
        self,
        txn_id: str,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        client_tv: int = TV1,
        *,
        offsets_partitions: int,
    ) -> ErrorCode:
        """``offsets_partitions``: offsets.topic.num.partitions, which the group's partition
        is counted from."""
        partition = (GROUP_OFFSETS_TOPIC, partition_for(group_id, offsets_partitions))
        return await self.add_partitions(
            txn_id, producer_id, producer_epoch, [partition], (group_id,), client_tv
        )

    async def add_implicitly(
        self,
        txn_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[tuple[str, int]],
        groups: tuple[str, ...] = (),
    ) -> ErrorCode:
        """Transactions v2's implicit add (Produce v12, TxnOffsetCommit v5): Kafka's
        AddPartitionsToTxnManager sends AddPartitionsToTxn v5 and retries
        CONCURRENT_TRANSACTIONS every 20 ms for up to 100 ms (a previous transaction's
        completion in flight) before answering it."""
        for attempt in range(IMPLICIT_ADD_ATTEMPTS):
            error = await self.add_partitions(
                txn_id, producer_id, producer_epoch, partitions, groups, TV2
            )
            if error != ErrorCode.CONCURRENT_TRANSACTIONS or attempt == IMPLICIT_ADD_ATTEMPTS - 1:
                return error
            await asyncio.sleep(IMPLICIT_ADD_BACKOFF_S)
        return ErrorCode.CONCURRENT_TRANSACTIONS

    def verify(
        self, txn_id: str, producer_id: int, producer_epoch: int, partition: tuple[str, int]
    ) -> ErrorCode:
        """handleVerifyPartitionsInTransaction (KIP-890 part 1, verify-only)."""
        meta = self.txns.get(txn_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        # Kafka: "Pending state is not checked since there is a final validation on the
        # append to the log" (the producer state's epoch check). A Produce sent with an
        # AddOffsetsToTxn, as aiokafka does, is appended, not refused as concurrent.
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state != ONGOING or partition not in meta.partitions:
            return ErrorCode.TRANSACTION_ABORTABLE
        return ErrorCode.NONE

    # --- TxnOffsetCommit -------------------------------------------------------------------

    async def add_pending_offsets(self, txn_id: str, offsets: list[PendingOffset]) -> ErrorCode:
        """Keep verified transactional offsets until the transaction's marker."""
        # Kafka writes these offsets to __consumer_offsets, apart from the transaction's
        # record, so another change of the transaction being written does not refuse them:
        # here they wait for it, then join the record it wrote.
        while txn_id in self.pending:
            await self._settled[txn_id].wait()
        meta = self.txns.get(txn_id)
        if meta is None or meta.state != ONGOING:
            # Ended meanwhile (EndTxn, a timeout or a fence): as if it came after.
            return (
                ErrorCode.INVALID_TXN_STATE if meta is None else ErrorCode.CONCURRENT_TRANSACTIONS
            )
        by_group: dict[str, list[OffsetToCommit]] = {}
        for o in offsets:
            by_group.setdefault(o.group_id, []).append(_to_commit(o))
        try:
            # Kafka's group coordinator writes them to __consumer_offsets at once, as the
            # producer's transactional records, resolved by the transaction's marker.
            for group_id, items in by_group.items():
                await self._groups.commit_transactional(
                    group_id, items, meta.producer_id, meta.producer_epoch
                )
        except OSError:
            log.exception("transactional offsets of %r not written", txn_id)
            return ErrorCode.UNKNOWN_SERVER_ERROR
        while txn_id in self.pending:
            await self._settled[txn_id].wait()
        meta = self.txns.get(txn_id)
        if meta is None or meta.state != ONGOING:
            # Ended while they were written: the marker resolved them with the rest.
            return ErrorCode.CONCURRENT_TRANSACTIONS
        replaced = {(o.group_id, o.topic, o.partition) for o in offsets}
        kept = [
            o for o in meta.pending_offsets if (o.group_id, o.topic, o.partition) not in replaced
        ]
        new = replace(meta, pending_offsets=kept + offsets, last_update_ms=wall_ms())
        return await self._persist(new)

    def pending_offset_partitions(self, group_id: str) -> set[tuple[str, int]]:
        """Partitions with transactional offsets of ``group_id`` awaiting a marker
        (OffsetFetch require_stable answers UNSTABLE_OFFSET_COMMIT for them)."""
        return {
            (o.topic, o.partition)
            for meta in self.txns.values()
            for o in meta.pending_offsets
            if o.group_id == group_id
        }

    async def offsets_marker(
        self, producer_id: int, partition: int, commit: bool, offsets_partitions: int
    ) -> ErrorCode:
        """A WriteTxnMarkers marker for __consumer_offsets-<partition> (of
        ``offsets_partitions``; an admin tool's, e.g.
        `kafka-transactions.sh abort`): the producer's pending offsets of the groups that
        partition holds are committed or dropped (GroupCoordinator.onTransactionCompleted),
        the transaction's state is otherwise left alone, as Kafka's coordinator never hears
        of such markers."""
        for txn_id, meta in list(self.txns.items()):
            if meta.producer_id != producer_id:
                continue
            mine = [
                o
                for o in meta.pending_offsets
                if partition_for(o.group_id, offsets_partitions) == partition
            ]
            if not mine:
                continue
            if txn_id in self.pending:
                return ErrorCode.CONCURRENT_TRANSACTIONS
            await self._end_offsets(meta.producer_id, meta.producer_epoch, commit, [], mine)
            kept = [o for o in meta.pending_offsets if o not in mine]
            return await self._persist(
                replace(meta, pending_offsets=kept, last_update_ms=wall_ms())
            )
        return ErrorCode.NONE

    # --- EndTxn ----------------------------------------------------------------------------

    async def end_txn(
        self, txn_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        """TransactionCoordinator.endTransaction, transactions v1 (EndTxn v0-4)."""
        if txn_id == "":
            return ErrorCode.INVALID_REQUEST
        meta = self.txns.get(txn_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if txn_id in self.pending:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state == ONGOING:
            return await self._end(txn_id, meta, commit, bump=False)
        if meta.state == _COMPLETE[commit]:
            return ErrorCode.NONE
        if meta.state == _PREPARE[commit]:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.INVALID_TXN_STATE

    async def end_txn_v2(
        self, txn_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> InitResult:
        """TransactionCoordinator.endTransaction for transactions v2 (EndTxn v5): every end
        bumps the epoch, a retry is recognised by the stored epoch being the request's + 1,
        and the answer carries the producer id and epoch to use next."""
        if txn_id == "":
            return InitResult(ErrorCode.INVALID_REQUEST)
        meta = self.txns.get(txn_id)
        if meta is None:
            return InitResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if txn_id in self.pending:
            # First, so a pending change (maybe to a new producer id) completes before the rest.
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        retry_on_overflow = (
            meta.previous_producer_id == producer_id
            and producer_epoch == EPOCH_EXHAUSTED
            and meta.producer_epoch == 0
        )
        retry_on_bump = meta.producer_epoch == producer_epoch + 1
        if meta.producer_id != producer_id and not retry_on_overflow:
            return InitResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        current = producer_epoch == meta.producer_epoch
        if meta.state in (ONGOING, EMPTY):
            valid = current
        elif meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            valid = retry_on_bump
        else:
            valid = retry_on_bump or retry_on_overflow or current
        if not valid:
            return InitResult(ErrorCode.PRODUCER_FENCED)
        retry = retry_on_bump or retry_on_overflow
        stored = InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)
        invalid = InitResult(ErrorCode.INVALID_TXN_STATE)
        if meta.state == ONGOING:
            return await self._end_v2(txn_id, meta, commit, no_partitions=False)
        if meta.state == _PREPARE[commit]:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return invalid
        if meta.state == _COMPLETE[commit]:
            if retry:
                return stored
            # CompleteAbort + abort at the current epoch: an abort with nothing added.
            return invalid if commit else await self._end_v2(txn_id, meta, False, True)
        if commit or retry:
            # Commit after CompleteAbort or from Empty; an abort "retry" after CompleteCommit.
            return invalid
        # Abort from Empty or after CompleteCommit (Java TV2 sends EndTxn even when its
        # sends failed): an epoch bump, no markers.
        return await self._end_v2(txn_id, meta, False, no_partitions=True)

    async def _end_v2(
        self, txn_id: str, meta: TxnRecord, commit: bool, no_partitions: bool
    ) -> InitResult:
        """TransactionMetadata.prepareAbortOrCommit with the TV2 epoch bump, then the
        markers (with the bumped epoch) and prepareComplete (a new producer id at epoch 0
        when the epoch is exhausted)."""
        now = wall_ms()
        new = replace(
            meta,
            state=_PREPARE[commit],
            producer_epoch=meta.producer_epoch + 1,
            last_producer_epoch=meta.producer_epoch,
            partitions=list(meta.partitions),
            groups=list(meta.groups),
            pending_offsets=list(meta.pending_offsets),
            # With nothing added the start time is unknown: Kafka uses the update time.
            start_ms=now if no_partitions else meta.start_ms,
            last_update_ms=now,
            client_transaction_version=TV2,
        )
        if meta.producer_epoch >= EPOCH_EXHAUSTED:
            new.next_producer_id = self._producer_ids.next_id()
        error = await self._persist(new)
        if error:
            return InitResult(error)
        await self._complete(txn_id, commit)
        # The answer is prepareComplete's producer id and epoch, even when the markers
        # are still to be retried (Kafka answers once the Prepare record is written).
        if new.next_producer_id != NO_PRODUCER_ID:
            return InitResult(ErrorCode.NONE, new.next_producer_id, 0)
        return InitResult(ErrorCode.NONE, new.producer_id, new.producer_epoch)

    async def _fence_and_abort(self, txn_id: str, meta: TxnRecord, why: str) -> ErrorCode:
        log.info(
            "aborting the transaction of %r (producer id %d, epoch %d): %s",
            txn_id,
            meta.producer_id,
            meta.producer_epoch,
            why,
        )
        return await self._end(txn_id, meta, commit=False, bump=True)

    async def _end(self, txn_id: str, meta: TxnRecord, commit: bool, bump: bool) -> ErrorCode:
        new = replace(
            meta,
            state=_PREPARE[commit],
            partitions=list(meta.partitions),
            groups=list(meta.groups),
            pending_offsets=list(meta.pending_offsets),
            last_update_ms=wall_ms(),
        )
        if bump:
            # TransactionMetadata.prepareFenceProducerEpoch: the markers carry the bumped
            # epoch, so the fenced producer's later writes are refused everywhere.
            new.producer_epoch, new.last_producer_epoch = meta.producer_epoch + 1, NO_EPOCH
        error = await self._persist(new)
        if error:
            return error
        await self._complete(txn_id, commit)
        return ErrorCode.NONE

    async def _complete(self, txn_id: str, commit: bool) -> None:
        """Markers for a prepared transaction, then CompleteCommit/CompleteAbort."""
        meta = self.txns[txn_id]
        self.pending[txn_id] = _COMPLETE[commit]
        try:
            written = self._write_markers(meta, commit)
            if written is None:
                return
            if written:
                if self.on_markers is not None:
                    self.on_markers(written)
                await self._flusher.flush(written)
            await self._end_offsets(
                meta.producer_id, meta.producer_epoch, commit, meta.groups, meta.pending_offsets
            )
        except Exception:
            log.exception("writing the markers of %r failed; retried later", txn_id)
            return
        finally:
            del self.pending[txn_id]
        done = replace(
            meta,
            state=_COMPLETE[commit],
            partitions=[],
            groups=[],
            pending_offsets=[],
            last_update_ms=wall_ms(),
        )
        if meta.next_producer_id != NO_PRODUCER_ID:
            # TV2 epoch overflow (prepareComplete): the reserved producer id at epoch 0; the
            # old one is kept so a retry of this EndTxn is recognised.
            done.previous_producer_id, done.producer_id = meta.producer_id, meta.next_producer_id
            done.producer_epoch, done.next_producer_id = 0, NO_PRODUCER_ID
        await self._persist(done)

    def _write_markers(self, meta: TxnRecord, commit: bool) -> list[PartitionLog] | None:
        """One marker per data partition; None when a partition refused it (Kafka then
        stops sending and leaves the transaction in its Prepare state)."""
        written: list[PartitionLog] = []
        now = wall_ms()
        for topic, index in meta.partitions:
            if topic == GROUP_OFFSETS_TOPIC:
                continue  # the group offsets: applied from the pending offsets below
            plog = self._store.partition(topic, index)
            if plog is None:
                continue  # deleted meanwhile: Kafka drops the marker
            result = plog.append_marker(
                meta.producer_id,
                meta.producer_epoch,
                COORDINATOR_EPOCH,
                commit=commit,
                now_ms=now,
            )
            if result.error != ErrorCode.NONE:
                log.error(
                    "%s-%d refused the %s marker of %r: %s",
                    topic,
                    index,
                    "COMMIT" if commit else "ABORT",
                    meta.transactional_id,
                    result.error.name,
                )
                if result.error == ErrorCode.KAFKA_STORAGE_ERROR:
                    return None
                continue
            written.append(plog)
        return written

    async def _end_offsets(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        groups: list[str],
        pending: list[PendingOffset],
    ) -> None:
        """The marker in ``__consumer_offsets`` for the transaction's groups (those added by
        AddOffsetsToTxn and those with pending offsets), committing or dropping them."""
        by_group: dict[str, list[OffsetToCommit]] = {}
        for o in pending:
            by_group.setdefault(o.group_id, []).append(_to_commit(o))
        names = list(dict.fromkeys([*groups, *by_group]))
        if names:
            await self._groups.end_transaction(producer_id, producer_epoch, commit, names, by_group)

    # --- timeouts and expiration -----------------------------------------------------------

    def abort_timed_out(self, now_ms: int) -> int:
        """TransactionCoordinator.abortTimedOutTransactions: Ongoing past its timeout."""
        due = [
            (txn_id, meta)
            for txn_id, meta in self.txns.items()
            if meta.state == ONGOING
            and txn_id not in self.pending
            and meta.start_ms + meta.timeout_ms < now_ms
        ]
        for txn_id, meta in due:
            self._spawn(
                self._fence_and_abort(txn_id, meta, f"timed out after {meta.timeout_ms} ms")
            )
        for txn_id, meta in self.txns.items():
            if meta.state in (PREPARE_COMMIT, PREPARE_ABORT) and txn_id not in self.pending:
                # Markers that failed earlier are tried again.
                self._spawn(self._complete(txn_id, meta.state == PREPARE_COMMIT))
        return len(due)

    async def expire_ids(self, now_ms: int) -> int:
        """transactional.id.expiration.ms: forget ids idle in Empty/CompleteX (tombstone)."""
        expired = [
            meta
            for txn_id, meta in self.txns.items()
            if meta.state in _ENDED
            and txn_id not in self.pending
            and now_ms - meta.last_update_ms > self.settings.id_expiration_ms
        ]
        for meta in expired:
            await self._persist(replace(meta, state=DEAD, partitions=[], last_update_ms=now_ms))
        self._log.maybe_compact(list(self.txns.values()))
        return len(expired)


def _to_commit(o: PendingOffset) -> OffsetToCommit:
    return OffsetToCommit(o.topic, o.partition, o.offset, o.leader_epoch, o.metadata)
