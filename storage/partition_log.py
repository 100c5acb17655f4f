"""The log of one partition: a directory ``<topic>-<partition>`` of ordered segments.

``append`` is the heart of Produce: producer-state check, offset assignment, segment write
and producer-state update run as one synchronous step, so no other append can slip between
the idempotence check and the state it guards (KAFKA_NOTES §5, DESIGN "no await between a
check and the state change it guards").

Here, as in Kafka's UnifiedLog and LocalLog: append and roll by size and time, reads (whole
batches, zero-copy slices, by timestamp), the log start and end, the flush policy and
``flush``, closing. Beside it, each a job of its own:

- ``log_recovery``: opening the directory after a clean shutdown or a crash (KAFKA_NOTES §6).
- ``producer_snapshots``: when producer state is snapshotted, in line or on a worker thread,
  and which snapshots stay.
- ``log_retention``: retention by time and size and DeleteRecords, which move the log start
  and retire whole segments.
- ``aborted_txns``: the aborted transactions and their ``.txnindex`` files.

Transactions (TRANSACTIONS.md §4-§6, §8): a transactional batch is accepted only while its
producer's transaction is open here or when the caller verified it with the coordinator
(UnifiedLog.analyzeAndValidateProducerState); ``append_marker`` writes a COMMIT/ABORT control
batch (ProducerAppendInfo.appendEndTxnMarker's checks), an abort adds an entry to the
``.txnindex`` of the segment the marker landed in (LogSegment.updateTxnIndex), and
``last_stable_offset`` is the first offset of the earliest open transaction (else the high
watermark), never below the log start (UnifiedLog's firstUnstableOffset handling).

Threads: everything runs on the owner's thread except ``flush``, which may run in a worker
thread while appends continue. The shared bookkeeping (segment list, recovery point) is
guarded by a lock that is never held across an fsync.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from protocol.errors import ErrorCode
from protocol.records import (
    BatchHeader,
    build_end_txn_marker,
    set_base_offset,
    set_partition_leader_epoch,
)
from protocol.value_type import value_type

from . import cleaned_swap, log_recovery, log_retention
from .aborted_txns import AbortedTxns
from .atomic_file import fsync_dir
from .cleaner_selection import LogToClean
from .delayed_delete import DelayedDeletes
from .log_cleaner import CleanedGroup, CleaningJob, LastRecord
from .log_config import LogConfig
from .log_recovery import RecoveryInfo, RecoveryMode
from .producer_snapshots import PendingSnapshot, ProducerSnapshots
from .producer_state import ProducerStateManager
from .segment import INT32_MAX, Segment
from .time_index import TimestampOffset
from .transient import out_of_descriptors
from .txn_index import AbortedTxn

__all__ = [
    "NO_TIMESTAMP",
    "AppendResult",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "PendingSnapshot",
    "RecoveryInfo",
    "RecoveryMode",
    "SegmentSlice",
]

log = logging.getLogger(__name__)

# Kafka answers log_append_time = -1 unless the topic uses LogAppendTime; only CreateTime
# topics exist so far.
NO_TIMESTAMP = -1


def _wall_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class SegmentSlice:
    """``length`` bytes of a segment's log file from ``position``.

    ``first_entry_incomplete``: the read was limited below the size of the batch it starts
    at, so it returned nothing (Kafka's FetchDataInfo.firstEntryIncomplete).
    """

    segment: Segment
    position: int
    length: int
    first_entry_incomplete: bool = False

    def read(self) -> bytes:
        return self.segment.read_at(self.position, self.length)


class OffsetOutOfRangeError(ValueError):
    """A read below the log start or beyond the log end (Fetch: OFFSET_OUT_OF_RANGE)."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


@value_type(frozen=True, slots=True)
class AppendResult:
    error: ErrorCode
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int


class PartitionLog:
    # Where segments that leave the log wait file.delete.delay.ms before their files go (the
    # store sets it); None: they go at once, as Kafka's deleteSegmentFiles without asyncDelete.
    file_deleter: DelayedDeletes | None = None

    def __init__(
        self,
        path: Path,
        topic: str,
        partition: int,
        segments: list[Segment],
        config: LogConfig,
    ) -> None:
        self.path = path
        self.topic = topic
        self.partition = partition
        self.config = config
        self.recovery: RecoveryInfo = RecoveryInfo("clean")
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._log_start_offset = segments[0].base_offset
        self._producers = ProducerStateManager()
        # Kafka's recovery point: every batch below it is known to be on disk.
        self._recovery_point = self._log_start_offset
        # None: the log end (one replica); else set by a simulated cluster's replication.
        self._high_watermark: int | None = None
        self._last_flush_ms = _wall_ms()
        self._lock = threading.Lock()
        # The log's aborted transactions, each in its segment's .txnindex.
        self.aborted_txns = AbortedTxns(path)
        # When producer state is snapshotted, and which snapshots stay.
        self.producer_snapshots = ProducerSnapshots(self, self._producers, self.aborted_txns)
        # Set by the owner to have a roll's snapshot written on a worker thread (it calls
        # PendingSnapshot.write there, then finish_snapshot); None: written in the roll.
        self.snapshot_writer: Callable[[PendingSnapshot], None] | None = None
        # A roll created files whose names the next flush makes durable (fsync of the dir).
        self._dir_unsynced = False
        self._closed = False
        # Why the partition is offline (a write or fsync failed), None while it is online.
        self.offline: str | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def segment_bytes(self) -> int:
        return self.config.segment_bytes

    @property
    def index_interval_bytes(self) -> int:
        return self.config.index_interval_bytes

    # -- opening and recovery (log_recovery) ---------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        topic: str,
        partition: int,
        *,
        config: LogConfig | None = None,
        segment_bytes: int | None = None,
        index_interval_bytes: int | None = None,
        mode: RecoveryMode = "crash",
        sync_dir: bool = True,
    ) -> PartitionLog:
        """Open (creating if needed) the partition directory and recover its state.

        ``segment_bytes`` and ``index_interval_bytes`` override ``config`` when given.
        ``sync_dir=False``: the first segment's new names in a new directory are made durable
        by the caller (one fsync of the directory for all of a new partition's files).
        """
        started = time.monotonic()
        config = config or LogConfig()
        if segment_bytes is not None:
            config = replace(config, segment_bytes=segment_bytes)
        if index_interval_bytes is not None:
            config = replace(config, index_interval_bytes=index_interval_bytes)
        d = Path(path)
        d.mkdir(parents=True, exist_ok=True)
        name = f"{topic}-{partition}"
        info = RecoveryInfo(mode)
        bases = log_recovery.tidy_directory(d, name)
        candidates = log_recovery.valid_snapshots(d, name, info)
        newest = next(candidates, None)
        # Crash: segments wholly below the newest snapshot's recovery point were fsynced
        # before it was written, so only the rest need a full check (Kafka's recovery point).
        recovery_point = newest.recovery_point if newest is not None else 0
        segments = log_recovery.open_segments(
            d, name, bases, config, mode, recovery_point, info, sync_dir=sync_dir
        )
        plog = cls(d, topic, partition, segments, config)
        plog.recovery = info
        try:
            # Inactive segments end their time index with their max timestamp (added at the
            # roll; again here when recovery rebuilt the index or it predates time indexes).
            for seg in segments[:-1]:
                seg.seal_time_index()
            plog.aborted_txns.load(segments)
            restored = log_recovery.recover_producer_state(
                d, name, segments, plog._producers, plog.aborted_txns, info, newest, candidates
            )
            if restored is not None:
                plog.producer_snapshots.restored(restored, info.replayed_batches)
            if info.checked_segments:
                # What was read back may sit only in the page cache (the process died, not
                # the machine): make it durable before a snapshot vouches for it.
                for seg in segments[-info.checked_segments :]:
                    seg.force_flush()
            plog._recovery_point = plog.log_end_offset
            plog.take_snapshot()
        except BaseException:
            plog.close_unclean()
            raise
        info.elapsed_ms = (time.monotonic() - started) * 1000
        return plog

    # -- properties ----------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        # Single node, no followers: everything appended is committed. A simulated cluster's
        # replication sets it (the ISR's minimum log end offset), never above the log end.
        if self._high_watermark is None:
            return self.log_end_offset
        return min(self._high_watermark, self.log_end_offset)

    def set_high_watermark(self, offset: int | None) -> None:
        """The offset below which records are committed (None: the log end, one replica)."""
        self._high_watermark = offset

    @property
    def last_stable_offset(self) -> int:
        """UnifiedLog.lastStableOffset: the earliest open transaction's first offset, else
        the high watermark; never below the log start (a first unstable offset below it
        is moved up to it, as UnifiedLog.maybeIncrementFirstUnstableOffset does)."""
        first = self._producers.first_unstable_offset()
        if first is None:
            return self.high_watermark
        return max(min(first, self.high_watermark), self._log_start_offset)

    def has_ongoing_txn(self, producer_id: int, epoch: int) -> bool:
        return self._producers.has_ongoing_txn(producer_id, epoch)

    @property
    def recovery_point(self) -> int:
        """Every batch below this offset is known to be on disk."""
        return self._recovery_point

    @property
    def producers(self) -> ProducerStateManager:
        return self._producers

    @property
    def segments(self) -> list[Segment]:
        return list(self._segments)

    @property
    def active_segment(self) -> Segment:
        return self._segments[-1]

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.name}, start={self._log_start_offset}, "
            f"end={self.log_end_offset}, segments={len(self._segments)})"
        )

    # -- append --------------------------------------------------------------------------

    def append(
        self,
        batch: bytearray | memoryview,
        header: BatchHeader,
        now_ms: int,
        leader_epoch: int = 0,
        *,
        verified: bool = False,
        coordinator: bool = False,
    ) -> AppendResult:
        """Append one validated batch; ``batch`` is patched in place (base offset, epoch).

        ``verified``: the transaction coordinator confirmed that this partition is part of
        the producer's ongoing transaction (KIP-890's verification; without it a
        transactional batch needs a transaction already open here). ``coordinator``: a
        coordinator's own write for a producer (no sequence numbers to check).
        """
        if self.offline is not None:
            # Kafka: a partition in an offline log dir answers KAFKA_STORAGE_ERROR.
            return AppendResult(
                ErrorCode.KAFKA_STORAGE_ERROR, -1, NO_TIMESTAMP, self._log_start_offset
            )
        pid = header.producer_id
        if pid >= 0:
            if (
                header.is_transactional
                and not verified
                and not self._producers.has_ongoing_txn(pid, header.producer_epoch)
                and not self._is_duplicate(pid, header)
            ):
                # UnifiedLog.analyzeAndValidateProducerState: after the duplicate check,
                # before the epoch and sequence checks.
                return AppendResult(
                    ErrorCode.INVALID_TXN_STATE, -1, NO_TIMESTAMP, self._log_start_offset
                )
            check = self._producers.check(
                pid,
                header.producer_epoch,
                header.base_sequence,
                header.last_sequence,
                header.is_transactional,
                coordinator,
            )
            if check.error != ErrorCode.NONE:
                return AppendResult(check.error, -1, NO_TIMESTAMP, self._log_start_offset)
            if check.duplicate is not None:
                # Nothing written: answer with where the original batch went. Kafka reports
                # the cached batch's timestamp as log_append_time here, even on CreateTime
                # topics (UnifiedLog: LogAppendInfo built from the duplicate's metadata).
                return AppendResult(
                    ErrorCode.NONE,
                    check.duplicate.base_offset,
                    check.duplicate.max_timestamp,
                    self._log_start_offset,
                )
        base_offset = self.log_end_offset
        last_offset = base_offset + header.last_offset_delta
        set_base_offset(batch, base_offset)
        set_partition_leader_epoch(batch, leader_epoch)
        try:
            segment = self._segment_for_append(
                len(batch), last_offset, header.max_timestamp, now_ms
            )
            segment.append(batch, base_offset, last_offset, header.max_timestamp)
        except OSError as exc:
            if out_of_descriptors(exc):
                # Transient (storage.transient): nothing of the batch was written and the log
                # end, indexes and producer state are as before, so the partition stays
                # online and the producer's retry goes where this batch would have. A
                # retriable error, as Kafka answers a produce it could not complete in time.
                log.warning("%s: append refused for now: %s", self.name, exc)
                return AppendResult(
                    ErrorCode.REQUEST_TIMED_OUT, -1, NO_TIMESTAMP, self._log_start_offset
                )
            # Kafka answers KAFKA_STORAGE_ERROR and takes the log dir offline
            # (LogDirFailureChannel.maybeAddOfflineLogDir): whatever part of the batch reached
            # the file is unacknowledged, and the index may not match it any more, so no
            # further append is accepted until a restart has recovered the log.
            self.go_offline(f"append failed: {exc}")
            return AppendResult(
                ErrorCode.KAFKA_STORAGE_ERROR, -1, NO_TIMESTAMP, self._log_start_offset
            )
        if pid >= 0:
            self._producers.update(
                pid,
                header.producer_epoch,
                header.base_sequence,
                header.last_sequence,
                base_offset,
                last_offset,
                header.max_timestamp,
                transactional=header.is_transactional,
            )
        return AppendResult(ErrorCode.NONE, base_offset, NO_TIMESTAMP, self._log_start_offset)

    def _is_duplicate(self, producer_id: int, header: BatchHeader) -> bool:
        entry = self._producers.get(producer_id)
        return (
            entry is not None
            and entry.find_duplicate(
                header.producer_epoch, header.base_sequence, header.last_sequence
            )
            is not None
        )

    def append_marker(
        self,
        producer_id: int,
        epoch: int,
        coordinator_epoch: int,
        *,
        commit: bool,
        now_ms: int,
        leader_epoch: int = 0,
    ) -> AppendResult:
        """Write a COMMIT or ABORT marker for the producer's transaction (WriteTxnMarkers).

        Checks as ProducerAppendInfo.appendEndTxnMarker: an epoch below the producer's ->
        INVALID_PRODUCER_EPOCH; a coordinator epoch below the last marker's ->
        TRANSACTION_COORDINATOR_FENCED. With no open transaction (a resent marker) the batch
        is still written and only the producer's entry changes, as in Kafka.
        """
        if self.offline is not None:
            # As append: an offline log dir answers KAFKA_STORAGE_ERROR (the coordinator
            # leaves the transaction prepared and retries after a restart).
            return AppendResult(
                ErrorCode.KAFKA_STORAGE_ERROR, -1, NO_TIMESTAMP, self._log_start_offset
            )
        error = self._producers.check_marker(producer_id, epoch, coordinator_epoch)
        if error != ErrorCode.NONE:
            return AppendResult(error, -1, NO_TIMESTAMP, self._log_start_offset)
        batch = bytearray(
            build_end_txn_marker(producer_id, epoch, coordinator_epoch, commit, now_ms)
        )
        offset = self.log_end_offset
        set_base_offset(batch, offset)
        set_partition_leader_epoch(batch, leader_epoch)
        try:
            segment = self._segment_for_append(len(batch), offset, now_ms, now_ms)
            segment.append(batch, offset, offset, now_ms)
        except OSError:
            log.exception("%s: marker append failed", self.name)
            return AppendResult(
                ErrorCode.KAFKA_STORAGE_ERROR, -1, NO_TIMESTAMP, self._log_start_offset
            )
        self.aborted_txns.complete_txn(
            self._producers, producer_id, epoch, coordinator_epoch, commit, offset, now_ms, segment
        )
        return AppendResult(ErrorCode.NONE, offset, NO_TIMESTAMP, self._log_start_offset)

    def _segment_for_append(
        self, size: int, last_offset: int, max_timestamp: int, now_ms: int
    ) -> Segment:
        """Kafka's LogSegment.shouldRoll: full, offsets too far, or old enough."""
        active = self._segments[-1]
        if active.size == 0:
            return active
        too_big = active.size + size > self.config.segment_bytes
        # Relative offsets in the index are int32: Kafka rolls before they would overflow.
        too_far = last_offset - active.base_offset > INT32_MAX
        if too_big or too_far or self._time_to_roll(active, max_timestamp, now_ms):
            return self.roll(now_ms)
        return active

    def _time_to_roll(self, active: Segment, max_timestamp: int, now_ms: int) -> bool:
        # Kafka's timeWaitedForRoll: the incoming batch's timestamp against the first batch's,
        # or wall time against the segment's creation when the first batch has none.
        first = active.first_batch_timestamp()
        waited = max_timestamp - first if first >= 0 else now_ms - active.created_ms
        return waited > self.config.segment_ms

    def roll(self, now_ms: int | None = None) -> Segment:
        """Start a new segment at the log end and snapshot producer state there.

        The old segment is not fsynced here (that would stall the append that triggered the
        roll); like Kafka, which flushes it from a background task, ``needs_flush`` reports
        it until ``flush`` has made it durable.
        """
        active = self._segments[-1]
        if active.size == 0:
            return active
        # Kafka's onBecomeInactiveSegment: the time index's last entry becomes the old
        # segment's max timestamp, which retention and ListOffsets then read from it. Done
        # before the new segment exists: should either step fail (no file descriptor free),
        # the old segment stays the active one, its sealing entry as valid as any other.
        active.seal_time_index()
        segment = Segment.create(
            self.path, active.next_offset, self.config.index_interval_bytes, now_ms, sync_dir=False
        )
        self._dir_unsynced = True
        with self._lock:
            self._segments.append(segment)
            self._bases.append(segment.base_offset)
        self.producer_snapshots.at_roll(self.snapshot_writer)
        return segment

    # -- reading -------------------------------------------------------------------------

    def _segment_index(self, offset: int) -> int:
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``, at least one if any exists.

        Raises OffsetOutOfRangeError below the log start or above the log end; the log end
        itself reads as empty (a consumer that is caught up).
        """
        if offset < self._log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside {self._log_start_offset}..{self.log_end_offset}"
            )
        for segment in self._segments[self._segment_index(offset) :]:
            data = segment.read(offset, max_bytes)
            if data:
                return data
        return b""

    def read_slice(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one_message: bool = True,
        max_offset: int | None = None,
    ) -> SegmentSlice:
        """Where the bytes a fetch at ``offset`` returns lie, for a zero-copy send.

        Same range rules as ``read`` except that the slice may end inside a batch, as Kafka's
        fetch responses do. With ``min_one_message`` the first batch is returned whole even
        above ``max_bytes``; without it a first batch larger than ``max_bytes`` gives an empty
        slice marked ``first_entry_incomplete`` (LogSegment.read). Raises
        OffsetOutOfRangeError like ``read``. ``max_offset`` (read_committed: the last stable
        offset, a batch boundary) ends the read before the batch there, as LocalLog.read's
        maxOffsetMetadata; at or past it the slice is empty.
        """
        if offset < self._log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside {self._log_start_offset}..{self.log_end_offset}"
            )
        segment = self._segments[-1]
        if max_offset is not None and offset >= max_offset:
            return SegmentSlice(self._segments[self._segment_index(offset)], 0, 0)
        for segment in self._segments[self._segment_index(offset) :]:
            position, length, first_size = segment.locate(offset, max_bytes, min_one_message)
            if first_size and max_offset is not None and max_offset < segment.next_offset:
                # LogSegment.read: fetchSize = min(maxPosition - startPosition, adjusted).
                length = min(length, segment.lookup(max_offset) - position)
            if first_size:
                if length < first_size and length > 0:
                    return SegmentSlice(segment, position, 0, first_entry_incomplete=True)
                return SegmentSlice(segment, position, length)
        return SegmentSlice(segment, 0, 0)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """TransactionIndex.collectAbortedTxns over the log: every aborted transaction whose
        marker is at or after ``fetch_offset`` and whose first offset is below
        ``upper_bound``, in marker order."""
        return [
            a
            for a in self.aborted_txns.entries
            if a.last_offset >= fetch_offset and a.first_offset < upper_bound
        ]

    def fetch_upper_bound(self, where: SegmentSlice) -> int:
        """LocalLog.addAbortedTransactions' upper bound for a read: the offset of the first
        index entry at or after the read's end, else the next segment's base, else the log
        end."""
        found = where.segment.index.upper_bound_offset(where.position + where.length)
        if found is not None:
            return found
        i = bisect.bisect_right(self._bases, where.segment.base_offset)
        return self._bases[i] if i < len(self._bases) else self.log_end_offset

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """The first record whose timestamp is >= ``timestamp``, with that timestamp.

        Kafka's UnifiedLog.fetchOffsetByTimestamp: the first segment whose max timestamp
        reaches the target (known from its time index, no log read), then the segment's
        lookup. None when no record is that recent (ListOffsets answers -1 / -1).
        """
        start = self._log_start_offset
        for segment in list(self._segments):
            if segment.max_timestamp() >= timestamp:
                found = segment.find_offset_by_timestamp(timestamp, start)
                if found is not None:
                    return found
        return None

    def max_timestamp_offset(self) -> TimestampOffset | None:
        """(largest timestamp, offset of the first record carrying it), None if none.

        ListOffsets' MAX_TIMESTAMP (-3, KIP-734): the segment with the largest max timestamp
        (the first of equals, as Kafka's maxBy), then the record inside its batch.
        """
        best: Segment | None = None
        for segment in list(self._segments):
            if best is None or segment.max_timestamp() > best.max_timestamp():
                best = segment
        return best.find_max_timestamp() if best is not None else None

    def batches(self, from_offset: int = 0) -> Iterator[tuple[BatchHeader, bytes]]:
        """(header, bytes) of every batch holding ``from_offset`` or later."""
        for segment in self._segments[self._segment_index(from_offset) :]:
            start = segment.lookup(from_offset) if from_offset > segment.base_offset else 0
            for _, header, data in segment.batches(start):
                yield header, data

    def headers(self, from_offset: int = 0) -> Iterator[BatchHeader]:
        """Like ``batches`` but reads only the headers."""
        for segment in self._segments[self._segment_index(from_offset) :]:
            start = segment.lookup(from_offset) if from_offset > segment.base_offset else 0
            for _, header in segment.headers(start):
                yield header

    # -- producer state snapshots (producer_snapshots) -----------------------------------

    def take_snapshot(self) -> bool:
        """Snapshot producer state at the log end; False if that snapshot already exists."""
        return self.producer_snapshots.take()

    def prepare_snapshot(self) -> PendingSnapshot | None:
        """The periodic snapshot, encoded here, to be written by ``PendingSnapshot.write`` on
        a worker thread and settled by ``finish_snapshot``; None when nothing changed or a
        write is still in flight (``ProducerSnapshots.prepare``)."""
        return self.producer_snapshots.prepare()

    def finish_snapshot(self, pending: PendingSnapshot) -> None:
        """On the owner's thread once ``pending.write`` has ended (idempotent)."""
        self.producer_snapshots.finish(pending)

    def maybe_snapshot(self, now_ms: int) -> bool:
        """The periodic snapshot: taken only when something changed since the last one.

        "Something" is the log end, the producer state or the recovery point (a newer one
        shortens crash recovery). The caller owns the schedule (snapshot_interval_ms).
        """
        del now_ms  # part of the interface for schedulers; the decision needs no clock
        return self.take_snapshot()

    # -- retention and producer expiration (log_retention) -------------------------------

    def apply_retention(
        self,
        now_ms: int,
        retention_ms: int | None = None,
        retention_bytes: int | None = None,
        max_segments: int | None = None,
    ) -> int:
        """Delete whole old segments by time, then by size (Kafka's deleteOldSegments), at
        most ``max_segments`` of them.

        Returns how many segments were deleted. Defaults come from the log's config.
        """
        return log_retention.apply_retention(
            self, now_ms, retention_ms, retention_bytes, max_segments
        )

    def retention_due(self, now_ms: int) -> bool:
        """Whether ``apply_retention`` (with the log's config) would delete a segment now;
        changes nothing. The retention pass asks first, to have the snapshots it needs
        written on a worker thread (``ProducerSnapshots.before_log_start_moves``)."""
        return log_retention.retention_due(self, now_ms)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset``; returns the new start.

        Kafka's UnifiedLog.maybeIncrementLogStartOffset: ``offset`` above the high watermark
        raises OffsetOutOfRangeError; one at or below the current start changes nothing.
        Reads below the new start then get OFFSET_OUT_OF_RANGE; segments wholly below it
        are deleted at once (Kafka does it in its next retention pass; the files themselves
        wait file.delete.delay.ms, see ``log_retention``). Producer state is kept whole
        (KAFKA-7190), on disk too. The caller persists the new start (the store's
        log-start-offset checkpoint), since it may lie inside a segment.
        """
        if offset < 0 or offset > self.high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {offset} of partition {self.name} "
                f"since it is larger than the high watermark {self.high_watermark}"
                if offset >= 0
                else f"The offset {offset} for partition {self.name} is not valid"
            )
        if offset > self._log_start_offset:
            log_retention.advance_log_start(self, offset, "DeleteRecords")
        return self._log_start_offset

    def truncate_to(self, offset: int) -> int:
        """UnifiedLog.truncateTo, as a follower elected leader keeps only what it had: every
        batch at or above ``offset`` goes (segments starting there retired, the one holding
        it cut), producer state and aborted transactions are rebuilt from the newest snapshot
        at or below the new end; how many offsets went."""
        end = self.log_end_offset
        offset = max(offset, self._log_start_offset)
        if offset >= end:
            return 0
        self.producer_snapshots.truncated(None, 0)
        with self._lock:
            keep = [s for s in self._segments if s.base_offset < offset] or self._segments[:1]
            doomed = self._segments[len(keep) :]
            self._segments = keep
            self._bases = [s.base_offset for s in keep]
            self._recovery_point = min(self._recovery_point, offset)
        if doomed:
            log_retention.retire_segments(self, doomed)
        keep[-1].truncate_to(offset)
        info = RecoveryInfo("clean")
        candidates = log_recovery.valid_snapshots(self.path, self.name, info)
        restored = log_recovery.recover_producer_state(
            self.path,
            self.name,
            self._segments,
            self._producers,
            self.aborted_txns,
            info,
            next(candidates, None),
            candidates,
        )
        self.producer_snapshots.truncated(restored, info.replayed_batches)
        if self._high_watermark is not None:
            self._high_watermark = min(self._high_watermark, self.log_end_offset)
        self.take_snapshot()
        gone = end - self.log_end_offset
        log.warning("%s: truncated to offset %d (%d offset(s) gone)", self, offset, gone)
        return gone

    def restore_log_start_offset(self, offset: int) -> None:
        """At open: apply a log start offset checkpointed by an earlier DeleteRecords."""
        offset = min(offset, self.log_end_offset)
        if offset > self._log_start_offset:
            log_retention.advance_log_start(self, offset, "the log start checkpoint")

    def drop_oldest_segments(self, count: int, log_start_offset: int) -> None:
        """Log retention's step under the lock a flush takes: the ``count`` oldest segments
        leave the list (their files are retired after) and the log starts at
        ``log_start_offset``; every batch below it is as good as flushed."""
        with self._lock:
            del self._segments[:count]
            del self._bases[:count]
            self._log_start_offset = log_start_offset
            self._recovery_point = max(self._recovery_point, log_start_offset)

    # -- the log cleaner (log_cleaner, cleaned_swap) -------------------------------------

    def cleaning_job(self, to_clean: LogToClean, now_ms: int) -> CleaningJob:
        """What a cleaning of this log reads, taken on the owner's thread."""
        last_records = {
            e.producer_id: LastRecord(e.last_offset if e.last_offset >= 0 else None, e.epoch)
            for e in self._producers.entries()
        }
        return CleaningJob(
            self.name,
            self.path,
            list(self._segments),
            self.config,
            to_clean,
            list(self.aborted_txns.entries),
            last_records,
            now_ms,
            dir_inode=os.stat(self.path).st_ino,
        )

    def replace_segments(self, group: CleanedGroup) -> bool:
        """Swap a cleaned segment in for the ones it replaces (LocalLog.replaceSegments), on
        the owner's thread; False (nothing changed) when they are no longer all in the log
        (DeleteRecords or deletion meanwhile): the caller discards the cleaned files."""
        with self._lock:
            if self._closed or self.offline is not None:
                return False
            old = group.replaced
            first = next((i for i, s in enumerate(self._segments) if s is old[0]), None)
            if first is None or self._segments[first : first + len(old)] != old:
                return False
            if first + len(old) >= len(self._segments):
                return False  # never the active segment
            try:
                cleaned_swap.rename_files(self, group)
            except OSError as exc:
                # Half renamed: the next open finishes the swap from the files (LogLoader),
                # which a restart needs; until then no appends (Kafka: log dir offline).
                self.go_offline(f"swap of cleaned segment failed: {exc}")
                raise
            self._segments[first : first + len(old)] = [group.segment]
            self._bases[first : first + len(old)] = [group.segment.base_offset]
            # The renames are made durable by the next flush (fsync of the directory).
            self._dir_unsynced = True
        return True

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` (producer.id.expiration.ms)."""
        return self._producers.remove_expired(now_ms, expiration_ms)

    # -- storage errors ------------------------------------------------------------------

    def go_offline(self, reason: str) -> None:
        """Refuse appends from now on (KAFKA_STORAGE_ERROR); reads keep being served.

        Kafka needs a restart to bring a failed log dir back; so does this partition: the
        store then recovers it as after a crash (no clean-shutdown marker is written).
        """
        if self.offline is None:
            self.offline = reason
            log.error(
                "%s: partition offline until a restart (%s); log end offset %d",
                self.name,
                reason,
                self.log_end_offset,
            )

    # -- flush policy --------------------------------------------------------------------

    @property
    def unflushed_messages(self) -> int:
        """Kafka's unflushedMessages: log end offset minus recovery point."""
        return self.log_end_offset - self._recovery_point

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    def needs_flush(self, now_ms: int) -> bool:
        """flush.messages reached, flush.ms elapsed, or a rolled segment not yet on disk.

        The last is Kafka's flush of a rolled segment, which it does in the background
        whatever the flush policy; the owner's flusher does it here.
        """
        unflushed = self.unflushed_messages
        if unflushed <= 0:
            return False
        if self._recovery_point < self._segments[-1].base_offset:
            return True
        return self.flush_policy_due(now_ms)

    def flush_policy_due(self, now_ms: int) -> bool:
        """flush.messages reached or flush.ms elapsed (Kafka's flush in the append path)."""
        unflushed = self.unflushed_messages
        if unflushed <= 0:
            return False
        if unflushed >= self.config.flush_messages:
            return True
        return now_ms - self._last_flush_ms >= self.config.flush_ms

    def flush(self, now_ms: int | None = None) -> None:
        """fsync every segment written since the last flush; safe from a worker thread.

        The lock covers only picking the segments and the bookkeeping afterwards; the fsyncs
        run on duplicated fds outside it, so appends (and even retention deleting one of the
        segments) proceed meanwhile. The recovery point advances to the log end seen when
        the flush started.
        """
        with self._lock:
            if self._closed:
                return
            target = self.log_end_offset
            sync_dir, self._dir_unsynced = self._dir_unsynced, False
            work: list[tuple[Segment, tuple[list[int], int]]] = []
            try:
                for seg in self._segments:
                    handles = seg.flush_handles()
                    if handles is not None:
                        work.append((seg, handles))
            except BaseException:
                # No descriptor to duplicate, say: nothing was flushed, the next flush retries.
                self._dir_unsynced = self._dir_unsynced or sync_dir
                _close_handles(work)
                raise
        try:
            for _, (fds, _) in work:
                for fd in fds:
                    os.fsync(fd)
            if sync_dir:
                # The names of segments created by rolls since the last flush. Gone: the
                # topic was deleted meanwhile (its directory renamed), nothing to keep.
                with contextlib.suppress(FileNotFoundError):
                    fsync_dir(self.path)
        except OSError as exc:
            if sync_dir:
                self._dir_unsynced = True
            if not out_of_descriptors(exc):
                # After a failed fsync the page cache may have dropped the dirty pages: what
                # was written is of unknown durability (Kafka: the log dir goes offline).
                # Opening the directory for want of a descriptor fsynced nothing: retried.
                self.go_offline(f"fsync failed: {exc}")
            raise
        finally:
            _close_handles(work)
        with self._lock:
            for seg, (_, generation) in work:
                seg.mark_flushed(generation)
            self._recovery_point = max(self._recovery_point, target)
            self._last_flush_ms = now_ms if now_ms is not None else _wall_ms()

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        """Clean close: flush, final snapshot (at the log end, fully flushed), close files."""
        if self._closed:
            return
        if self.offline is None:
            self.flush()
            self.take_snapshot()
        self.close_unclean()

    def close_unclean(self) -> None:
        """Close the files without flushing or snapshotting (a crash, for tests)."""
        with self._lock:
            self._closed = True
        for segment in self._segments:
            segment.close(flush=False)


def _close_handles(work: list[tuple[Segment, tuple[list[int], int]]]) -> None:
    for _, (fds, _) in work:
        for fd in fds:
            os.close(fd)
