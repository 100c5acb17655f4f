"""The log of one partition: a directory ``<topic>-<partition>`` of ordered segments.

``append`` is the heart of Produce: producer-state check, offset assignment, segment write
and producer-state update run as one synchronous step, so no other append can slip between
the idempotence check and the state it guards (KAFKA_NOTES §5, DESIGN "no await between a
check and the state change it guards").

Also here, as in Kafka's UnifiedLog/LogLoader: recovery at open (KAFKA_NOTES §6), producer
state snapshots, roll by size and time, retention by time and size, and the flush policy.

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from protocol.errors import ErrorCode
from protocol.records import (
    BatchHeader,
    build_end_txn_marker,
    parse_end_txn_marker,
    set_base_offset,
    set_partition_leader_epoch,
)
from protocol.value_type import value_type

from . import snapshot as snapshots
from . import txn_index
from .atomic_file import TMP_SUFFIX, fsync_dir
from .delayed_delete import DelayedDeletes
from .log_config import LogConfig
from .offset_index import INDEX_SUFFIX
from .producer_state import ProducerStateManager
from .segment import (
    DELETED_SUFFIX,
    INT32_MAX,
    LOG_SUFFIX,
    Segment,
    Truncation,
    parse_file_name,
)
from .time_index import TIME_INDEX_SUFFIX, TimestampOffset
from .transient import out_of_descriptors
from .txn_index import TXN_INDEX_SUFFIX, AbortedTxn

# Files that belong to a segment besides its .log; removed with it.
_SEGMENT_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

log = logging.getLogger(__name__)

# Kafka answers log_append_time = -1 unless the topic uses LogAppendTime; only CreateTime
# topics exist so far.
NO_TIMESTAMP = -1
# Snapshots kept besides those retention removes: the newest is normally enough; older ones
# are the fallback when it turns out corrupt (Kafka keeps one per segment instead).
SNAPSHOTS_TO_KEEP = 3

# "clean": the store was shut down cleanly; trust indexes, sizes and the snapshot at the log
# end. "crash": check every batch from the recovery point on (CRC, lengths, offsets).
RecoveryMode = Literal["clean", "crash"]


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


@dataclass(slots=True)
class RecoveryInfo:
    """What opening the log found and did (for logs, summaries and tests)."""

    mode: RecoveryMode
    truncations: list[Truncation] = field(default_factory=list)
    segments_dropped: int = 0  # whole segments removed after a truncation before them
    indexes_rebuilt: int = 0
    checked_segments: int = 0  # the newest ones, read whole with CRCs (crash mode)
    crc_checked_bytes: int = 0
    snapshot_offset: int | None = None  # the snapshot producer state was restored from
    snapshots_set_aside: list[int] = field(default_factory=list)
    replayed_batches: int = 0
    elapsed_ms: float = 0.0


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
        self._last_flush_ms = _wall_ms()
        self._lock = threading.Lock()
        # (log end, producer changes, recovery point) the newest snapshot file describes.
        self._snapshot_state: tuple[int, int, int] | None = None
        # The periodic snapshot being written on a worker thread (prepare_snapshot).
        self._snapshot_pending: PendingSnapshot | None = None
        # The highest offset of a snapshot known to be on disk (written and fsynced, or
        # found at open): the log start may move up to it without writing another.
        self._durable_snapshot: int | None = None
        # Set by the owner to have a roll's snapshot written on a worker thread (it calls
        # PendingSnapshot.write there, then finish_snapshot); None: written in the roll.
        self.snapshot_writer: Callable[[PendingSnapshot], None] | None = None
        # A roll created files whose names the next flush makes durable (fsync of the dir).
        self._dir_unsynced = False
        self._closed = False
        # Why the partition is offline (a write or fsync failed), None while it is online.
        self.offline: str | None = None
        # Every aborted transaction of the log, marker order; each sits in the .txnindex of
        # the segment holding its marker (last_offset).
        self._aborted: list[AbortedTxn] = []
        # .txnindex files appended to since the last snapshot, fsynced before the next one.
        self._txn_index_dirty: set[Path] = set()

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def segment_bytes(self) -> int:
        return self.config.segment_bytes

    @property
    def index_interval_bytes(self) -> int:
        return self.config.index_interval_bytes

    # -- opening and recovery ------------------------------------------------------------

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
    ) -> PartitionLog:
        """Open (creating if needed) the partition directory and recover its state.

        ``segment_bytes`` and ``index_interval_bytes`` override ``config`` when given.
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
        bases = _tidy_directory(d)
        if removed := snapshots.remove_set_aside(d):
            log.info(
                "%s: removed %d snapshot(s) set aside as corrupt by an earlier open", name, removed
            )
        candidates = _valid_snapshots(d, name, info)
        newest = next(candidates, None)
        # Crash: segments wholly below the newest snapshot's recovery point were fsynced
        # before it was written, so only the rest need a full check (Kafka's recovery point).
        recovery_point = newest.recovery_point if newest is not None else 0
        segments = _open_segments(d, name, bases, config, mode, recovery_point, info)
        plog = cls(d, topic, partition, segments, config)
        plog.recovery = info
        try:
            # Inactive segments end their time index with their max timestamp (added at the
            # roll; again here when recovery rebuilt the index or it predates time indexes).
            for seg in segments[:-1]:
                seg.seal_time_index()
            plog._load_txn_indexes()
            plog._recover_producer_state(newest, candidates)
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

    def _recover_producer_state(
        self, newest: snapshots.Snapshot | None, older: Iterator[snapshots.Snapshot]
    ) -> None:
        """Restore the newest usable snapshot, then replay the batches after it."""
        info = self.recovery
        start, end = self._log_start_offset, self.log_end_offset
        snap = newest
        stale: list[int] = []
        while snap is not None and not start <= snap.offset <= end:
            if snap.offset > end:
                # Written before a crash cut the log below it: it describes batches that
                # are gone (KAFKA_NOTES §6).
                log.warning(
                    "%s: deleting snapshot at offset %d above the log end %d",
                    self.name,
                    snap.offset,
                    end,
                )
            stale.append(snap.offset)
            snap = next(older, None)
        snapshots.delete_snapshots(self.path, stale)
        self._producers.clear()
        replay_from = start
        if snap is not None:
            for entry in snap.producers:
                self._producers.restore(entry)
            info.snapshot_offset = snap.offset
            self._durable_snapshot = snap.offset
            replay_from = snap.offset
        # The aborted-transaction entries of the replayed range are rebuilt by the replay
        # (LogSegment.recover rebuilds the txn index of the segments it recovers).
        self._aborted = [a for a in self._aborted if a.last_offset < replay_from]
        info.replayed_batches = self._replay_producer_state(replay_from)
        self._rewrite_txn_indexes(replay_from)
        # Producers whose every batch lies below the log start stay: only expiration forgets
        # a producer (KAFKA-7190). The snapshot is what still knows them.
        if snap is not None and info.replayed_batches == 0 and snap.offset == end:
            # The file on disk already says all this: no need to write it again.
            self._snapshot_state = (end, self._producers.changes, snap.recovery_point)

    def _replay_producer_state(self, from_offset: int) -> int:
        replayed = 0
        for segment in self._segments[self._segment_index(from_offset) :]:
            start = segment.lookup(from_offset) if from_offset > segment.base_offset else 0
            for pos, header in segment.headers(start):
                if header.base_offset < from_offset:
                    continue  # a batch straddling the start (not at a snapshot offset)
                replayed += 1
                if header.is_control:
                    if header.producer_id >= 0:
                        self._replay_marker(segment, pos, header)
                    continue
                if header.producer_id < 0 or header.base_sequence < 0:
                    continue  # not idempotent
                # The same update as at append time, from the batch alone (expiration counts
                # from its max timestamp either way), so a replay rebuilds identical state.
                self._producers.update(
                    header.producer_id,
                    header.producer_epoch,
                    header.base_sequence,
                    header.last_sequence,
                    header.base_offset,
                    header.last_offset,
                    header.max_timestamp,
                    transactional=header.is_transactional,
                )
        return replayed

    def _replay_marker(self, segment: Segment, pos: int, header: BatchHeader) -> None:
        marker = parse_end_txn_marker(segment.read_at(pos, header.size), header)
        if marker is None:
            return
        self._complete_txn(
            header.producer_id,
            header.producer_epoch,
            marker.coordinator_epoch,
            marker.commit,
            header.base_offset,
            header.max_timestamp,
            segment,
        )

    # -- transaction index ---------------------------------------------------------------

    def _txn_index_path(self, segment: Segment) -> Path:
        return self.path / f"{segment.base_offset:020d}{TXN_INDEX_SUFFIX}"

    def _load_txn_indexes(self) -> None:
        self._aborted = [
            entry
            for segment in self._segments
            for entry in txn_index.read_entries(self._txn_index_path(segment))
        ]

    def _rewrite_txn_indexes(self, from_offset: int) -> None:
        """Make the files of the segments from ``from_offset`` on hold the entries in memory."""
        for segment in self._segments[self._segment_index(from_offset) :]:
            path = self._txn_index_path(segment)
            mine = [
                a
                for a in self._aborted
                if segment.base_offset <= a.last_offset < segment.next_offset
            ]
            if txn_index.read_entries(path) != mine or (not mine and path.exists()):
                txn_index.write_entries(path, mine)
                self._txn_index_dirty.add(path)

    def _complete_txn(
        self,
        producer_id: int,
        epoch: int,
        coordinator_epoch: int,
        commit: bool,
        marker_offset: int,
        timestamp_ms: int,
        segment: Segment,
    ) -> None:
        """ProducerStateManager.completeTxn + LogSegment.updateTxnIndex for one marker."""
        first = self._producers.end_txn(producer_id, epoch, coordinator_epoch, timestamp_ms)
        if first < 0 or commit:
            return
        # ProducerStateManager.lastStableOffset(completedTxn): the earliest other open
        # transaction's first offset, else the offset after the marker.
        other = self._producers.first_unstable_offset_excluding(producer_id)
        entry = AbortedTxn(
            producer_id, first, marker_offset, other if other is not None else marker_offset + 1
        )
        self._aborted.append(entry)
        path = self._txn_index_path(segment)
        txn_index.append_entry(path, entry)
        self._txn_index_dirty.add(path)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """TransactionIndex.collectAbortedTxns over the log: every aborted transaction whose
        marker is at or after ``fetch_offset`` and whose first offset is below
        ``upper_bound``, in marker order."""
        return [
            a
            for a in self._aborted
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

    def _sync_txn_indexes(self) -> None:
        dirty, self._txn_index_dirty = self._txn_index_dirty, set()
        for path in dirty:
            txn_index.fsync_file(path)

    # -- properties ----------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        # Single node, no followers: everything appended is committed.
        return self.log_end_offset

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
    ) -> AppendResult:
        """Append one validated batch; ``batch`` is patched in place (base offset, epoch).

        ``verified``: the transaction coordinator confirmed that this partition is part of
        the producer's ongoing transaction (KIP-890's verification; without it a
        transactional batch needs a transaction already open here).
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
        self._complete_txn(producer_id, epoch, coordinator_epoch, commit, offset, now_ms, segment)
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
        self._snapshot_at_roll()
        return segment

    def _snapshot_at_roll(self) -> None:
        """Kafka snapshots producer state at each roll. With a ``snapshot_writer`` the file
        is written on a worker thread (its fsyncs would stall the append that rolled);
        should that write never happen (a crash first), recovery starts from an older
        snapshot and replays more, as after any crash."""
        writer = self.snapshot_writer
        try:
            if writer is None or self._snapshot_pending is not None:
                self.take_snapshot()  # waits for one in flight: the roll's own is not skipped
                return
            pending = self.prepare_snapshot()
        except OSError as exc:
            if not out_of_descriptors(exc):
                raise
            # The roll stands; the next periodic snapshot catches up (a crash meanwhile
            # replays from an older one).
            log.warning("%s: no producer-state snapshot at this roll (%s)", self.name, exc)
            return
        if pending is not None:
            writer(pending)

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

    # -- producer state snapshots --------------------------------------------------------

    def _current_snapshot_state(self) -> tuple[int, int, int]:
        return self.log_end_offset, self._producers.changes, self._recovery_point

    def take_snapshot(self) -> bool:
        """Snapshot producer state at the log end; False if that snapshot already exists."""
        self._settle_pending_snapshot(wait=True)
        state = self._current_snapshot_state()
        if state == self._snapshot_state:
            return False
        if state[0] == self._log_start_offset and not len(self._producers):
            return False  # an empty log with no producers: nothing to restore
        offset, _, recovery_point = state
        # The snapshot vouches for the aborted-transaction entries below its offset.
        self._sync_txn_indexes()
        snapshots.write_snapshot(self.path, offset, recovery_point, self._producers.entries())
        self._snapshot_state = state
        self._note_durable_snapshot(offset)
        self._delete_old_snapshots()
        return True

    def prepare_snapshot(self) -> PendingSnapshot | None:
        """The periodic snapshot in two halves (issue 13): decided and encoded here on the
        owner's thread, so it holds the producer state of this moment; written (with the
        .txnindex fsyncs it vouches for, and the pruning of old snapshots) by
        ``PendingSnapshot.write`` on a worker thread, then settled by ``finish_snapshot``.
        None when nothing changed or a write is still in flight. ``take_snapshot`` first
        waits for one in flight, so snapshots of one partition never overlap.
        """
        self._settle_pending_snapshot(wait=False)
        if self._snapshot_pending is not None or self.offline is not None:
            return None
        state = self._current_snapshot_state()
        if state == self._snapshot_state:
            return None
        if state[0] == self._log_start_offset and not len(self._producers):
            return None
        offset, _, recovery_point = state
        data = snapshots.encode(offset, recovery_point, self._producers.entries())
        dir_fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        dirty, self._txn_index_dirty = self._txn_index_dirty, set()
        pending = PendingSnapshot(self, dir_fd, offset, data, dirty, self._snapshot_state)
        # Optimistic: a failed write puts the previous state back (finish_snapshot), so the
        # next round tries again.
        self._snapshot_state = state
        self._snapshot_pending = pending
        return pending

    def finish_snapshot(self, pending: PendingSnapshot) -> None:
        """On the owner's thread once ``pending.write`` has ended (idempotent)."""
        if pending.settled:
            return
        pending.settled = True
        if self._snapshot_pending is pending:
            self._snapshot_pending = None
        if pending.error is not None:
            self._snapshot_state = pending.previous_state
            self._txn_index_dirty |= pending.txn_paths
        else:
            self._note_durable_snapshot(pending.offset)

    def _note_durable_snapshot(self, offset: int) -> None:
        if self._durable_snapshot is None or offset > self._durable_snapshot:
            self._durable_snapshot = offset

    def _settle_pending_snapshot(self, wait: bool) -> None:
        pending = self._snapshot_pending
        if pending is None:
            return
        if wait:
            if pending.claim():
                # Its worker has not started (the pool is busy): write it here rather than
                # wait behind the pool's other work.
                with contextlib.suppress(OSError):
                    pending.write_claimed()
            pending.done.wait()
        if pending.done.is_set():
            self.finish_snapshot(pending)

    def maybe_snapshot(self, now_ms: int) -> bool:
        """The periodic snapshot: taken only when something changed since the last one.

        "Something" is the log end, the producer state or the recovery point (a newer one
        shortens crash recovery). The caller owns the schedule (snapshot_interval_ms).
        """
        del now_ms  # part of the interface for schedulers; the decision needs no clock
        return self.take_snapshot()

    def _snapshot_before_the_log_start_moves(self, new_start: int) -> None:
        """Make sure a snapshot at or above ``new_start`` holds every producer before the
        start moves there.

        Kafka keeps the producers whose records retention or DeleteRecords removes
        (KAFKA-7190: ProducerStateManager.onLogStartOffsetIncremented forgets none) but
        deletes the snapshots below the log start (deleteSnapshotsBefore), so an unclean
        restart that must replay from the log start loses them. Beyond Kafka, this snapshot
        (at the log end, so never below the new start) carries them across any restart.
        Written before anything is deleted: if it fails, the log start does not move.

        A snapshot already on disk at or above ``new_start`` does as well (the retention
        pass has one written on a worker thread first, issue 13): every producer with a
        batch below the new start is in it, and the batches after it stay in the log and
        are replayed after it. Snapshots at or above the log start are pruned only when
        newer ones exist, so it or a newer one is still there after any restart.
        """
        if self._durable_snapshot is not None and self._durable_snapshot >= new_start:
            return
        self.take_snapshot()

    def _delete_old_snapshots(self) -> None:
        """Drop snapshots below the log start, and all but the newest few of the rest."""
        offsets = snapshots.list_snapshots(self.path)
        below = [o for o in offsets if o < self._log_start_offset]
        kept = [o for o in offsets if o >= self._log_start_offset]
        snapshots.delete_snapshots(self.path, below + kept[:-SNAPSHOTS_TO_KEEP])

    # -- retention and producer expiration -----------------------------------------------

    def apply_retention(
        self,
        now_ms: int,
        retention_ms: int | None = None,
        retention_bytes: int | None = None,
    ) -> int:
        """Delete whole old segments by time, then by size (Kafka's deleteOldSegments).

        Returns how many segments were deleted. Defaults come from the log's config.
        """
        if retention_ms is None:
            retention_ms = self.config.retention_ms
        if retention_bytes is None:
            retention_bytes = self.config.retention_bytes
        deleted = 0
        if retention_ms >= 0:
            deleted += self._delete_oldest_segments(
                _expired(now_ms, retention_ms), now_ms, "retention.ms"
            )
        size = self.size
        if retention_bytes >= 0 and size >= retention_bytes:
            deleted += self._delete_oldest_segments(
                _surplus(size - retention_bytes), now_ms, "retention.bytes"
            )
        return deleted

    def retention_due(self, now_ms: int) -> bool:
        """Whether ``apply_retention`` (with the log's config) would delete a segment now;
        changes nothing. The retention pass asks first, to have the snapshots it needs
        written on a worker thread (``_snapshot_before_the_log_start_moves``)."""
        retention_ms, retention_bytes = self.config.retention_ms, self.config.retention_bytes
        if retention_ms >= 0 and self._oldest_segments(_expired(now_ms, retention_ms)):
            return True
        size = self.size
        return (
            retention_bytes >= 0
            and size >= retention_bytes
            and bool(self._oldest_segments(_surplus(size - retention_bytes)))
        )

    def _oldest_segments(self, predicate: Callable[[Segment], bool]) -> list[Segment]:
        doomed: list[Segment] = []
        for i, seg in enumerate(self._segments):
            if i == len(self._segments) - 1 and seg.size == 0:
                break  # Kafka never deletes an empty active segment
            if not predicate(seg):
                break
            doomed.append(seg)
        return doomed

    def _delete_oldest_segments(
        self, predicate: Callable[[Segment], bool], now_ms: int, reason: str
    ) -> int:
        doomed = self._oldest_segments(predicate)
        if not doomed:
            return 0
        if len(doomed) == len(self._segments):
            # A log always keeps one segment: roll so the expired active one can go.
            self.roll(now_ms)
        new_start = max(self._log_start_offset, self._segments[len(doomed)].base_offset)
        self._snapshot_before_the_log_start_moves(new_start)
        with self._lock:
            del self._segments[: len(doomed)]
            del self._bases[: len(doomed)]
            # max: DeleteRecords may have moved the log start into the new first segment.
            self._log_start_offset = new_start
            self._recovery_point = max(self._recovery_point, self._log_start_offset)
        self._retire_segments(doomed)
        log.info(
            "%s: deleted %d segment(s) by %s; log start offset now %d",
            self.name,
            len(doomed),
            reason,
            self._log_start_offset,
        )
        self._delete_old_snapshots()
        return len(doomed)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset``; returns the new start.

        Kafka's UnifiedLog.maybeIncrementLogStartOffset: ``offset`` above the high watermark
        raises OffsetOutOfRangeError; one at or below the current start changes nothing.
        Reads below the new start then get OFFSET_OUT_OF_RANGE; segments wholly below it
        are deleted at once (Kafka does it in its next retention pass; the files themselves
        wait file.delete.delay.ms, see ``_retire_segments``). Producer state is kept whole
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
            self._advance_log_start(offset, "DeleteRecords")
        return self._log_start_offset

    def restore_log_start_offset(self, offset: int) -> None:
        """At open: apply a log start offset checkpointed by an earlier DeleteRecords."""
        offset = min(offset, self.log_end_offset)
        if offset > self._log_start_offset:
            self._advance_log_start(offset, "the log start checkpoint")

    def _advance_log_start(self, offset: int, reason: str) -> None:
        # Kafka's deleteLogStartOffsetBreachedSegments: a segment goes when the next one
        # starts at or below the new log start; the active segment always stays.
        doomed = [
            seg
            for seg, nxt in zip(self._segments, self._segments[1:], strict=False)
            if nxt.base_offset <= offset
        ]
        self._snapshot_before_the_log_start_moves(offset)
        with self._lock:
            del self._segments[: len(doomed)]
            del self._bases[: len(doomed)]
            self._log_start_offset = offset
            self._recovery_point = max(self._recovery_point, offset)
        if doomed:
            self._retire_segments(doomed)
        log.info(
            "%s: log start offset now %d by %s (%d segment(s) deleted)",
            self.name,
            offset,
            reason,
            len(doomed),
        )
        self._delete_old_snapshots()

    def _retire_segments(self, doomed: list[Segment]) -> None:
        """Kafka's LocalLog.deleteSegmentFiles for segments already out of the list: rename
        their files ``*.deleted`` now (durably: they must not come back after a crash), remove
        them file.delete.delay.ms later. A fetch response being sent from one of them keeps
        reading its open file meanwhile instead of being cut mid-frame."""
        first_kept = self._segments[0].base_offset
        self._aborted = [a for a in self._aborted if a.last_offset >= first_kept]
        txn_files: list[Path] = []
        try:
            for seg in doomed:
                seg.mark_deleted()
                path = self._txn_index_path(seg)
                self._txn_index_dirty.discard(path)
                if path.exists():
                    deleted = path.with_name(path.name + DELETED_SUFFIX)
                    os.rename(path, deleted)
                    txn_files.append(deleted)
            fsync_dir(self.path)
        finally:
            what = f"{self.name}: segment(s) " + ", ".join(str(s.base_offset) for s in doomed)

            def remove() -> None:
                for seg in doomed:
                    seg.delete()
                for path in txn_files:
                    path.unlink(missing_ok=True)

            def close() -> None:
                for seg in doomed:
                    seg.close(flush=False)

            if self.file_deleter is None:
                remove()
            else:
                self.file_deleter.schedule(self.config.file_delete_delay_ms, what, remove, close)

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


def _tidy_directory(d: Path) -> list[int]:
    """Remove leftovers of interrupted writes and deletions; return the segment bases."""
    names = os.listdir(d)
    bases = sorted(b for n in names if (b := parse_file_name(n, LOG_SUFFIX)) is not None)
    have = set(bases)
    for n in names:
        orphan_index = any(
            (b := parse_file_name(n, suffix)) is not None and b not in have
            for suffix in _SEGMENT_INDEX_SUFFIXES
        )
        if n.endswith((TMP_SUFFIX, DELETED_SUFFIX)) or orphan_index:
            # A snapshot write that never reached its rename, segment files renamed for a
            # deletion the process did not live to finish (Kafka's LogLoader
            # removeTempFilesAndCollectSwapFiles), or the index of a segment whose deletion
            # was cut short.
            (d / n).unlink()
    return bases


def _valid_snapshots(d: Path, name: str, info: RecoveryInfo) -> Iterator[snapshots.Snapshot]:
    """Snapshots newest first; a corrupt one is set aside (and reported), not loaded."""
    for offset in reversed(snapshots.list_snapshots(d)):
        try:
            yield snapshots.read_snapshot(d, offset)
        except (snapshots.CorruptSnapshotError, OSError) as exc:
            target = snapshots.set_aside(d, offset)
            info.snapshots_set_aside.append(offset)
            log.warning(
                "%s: snapshot at offset %d is unusable (%s); moved to %s, trying an older one",
                name,
                offset,
                exc,
                target.name,
            )


def _open_segments(
    d: Path,
    name: str,
    bases: list[int],
    config: LogConfig,
    mode: RecoveryMode,
    recovery_point: int,
    info: RecoveryInfo,
) -> list[Segment]:
    """Open the segments in order; cut the log at the first torn or corrupt batch."""
    segments: list[Segment] = []
    interval = config.index_interval_bytes
    try:
        for i, base in enumerate(bases):
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            trusted = mode == "clean" or (next_base is not None and next_base <= recovery_point)
            seg = Segment.open(d, base, interval, check_crc=not trusted, trust_index=trusted)
            if segments and base < segments[-1].next_offset:
                seg.close(flush=False)
                raise ValueError(
                    f"{d}: segment {base} overlaps the previous one "
                    f"(ending at {segments[-1].next_offset})"
                )
            segments.append(seg)
            if not trusted:
                info.checked_segments += 1
                info.crc_checked_bytes += seg.size
            if seg.index_rebuilt:
                info.indexes_rebuilt += 1
                what = "time index" if seg.time_index_rebuilt else "offset index"
                log.info("%s: rebuilt the %s of %s", name, what, seg.log_path.name)
            cut = seg.truncation
            if cut is None:
                continue
            info.truncations.append(cut)
            log.warning(
                "%s: truncated %d bytes at byte position %d of %s (offset %d): %s",
                name,
                cut.bytes_cut,
                cut.position,
                cut.file,
                cut.offset,
                cut.reason,
            )
            if next_base is not None:
                # Everything after the first corrupt batch goes, later segments included, as
                # Kafka's recovery does: a gap in the offsets cannot be served.
                dropped = bases[i + 1 :]
                for later in dropped:
                    for suffix in (LOG_SUFFIX, *_SEGMENT_INDEX_SUFFIXES):
                        (d / f"{later:020d}{suffix}").unlink(missing_ok=True)
                fsync_dir(d)
                info.segments_dropped = len(dropped)
                log.warning(
                    "%s: deleted %d later segment(s) after the truncation at offset %d",
                    name,
                    len(dropped),
                    cut.offset,
                )
                break
        if not segments:
            segments.append(Segment.create(d, 0, interval))
    except BaseException:
        for seg in segments:
            seg.close(flush=False)
        raise
    return segments


def _expired(now_ms: int, retention_ms: int) -> Callable[[Segment], bool]:
    """retention.ms: a segment whose newest batch is older than that."""

    def expired(seg: Segment) -> bool:
        return now_ms - seg.largest_timestamp() > retention_ms

    return expired


def _surplus(excess: int) -> Callable[[Segment], bool]:
    """retention.bytes: the oldest segments while deleting them leaves the log at or above
    the limit (``excess`` bytes above it)."""

    def surplus(seg: Segment) -> bool:
        nonlocal excess
        if excess - seg.size >= 0:
            excess -= seg.size
            return True
        return False

    return surplus


class PendingSnapshot:
    """A periodic snapshot encoded on the owner's thread, to be written on a worker thread
    into the partition directory as it was opened then (``dir_fd``): a topic deletion that
    renames the directory meanwhile cannot make it land in a re-created partition."""

    def __init__(
        self,
        plog: PartitionLog,
        dir_fd: int,
        offset: int,
        data: bytes,
        txn_paths: set[Path],
        previous_state: tuple[int, int, int] | None,
    ) -> None:
        self.plog = plog
        self.dir_fd = dir_fd
        self.offset = offset
        self.data = data
        self.txn_paths = txn_paths
        self.previous_state = previous_state
        self.done = threading.Event()
        self.error: OSError | None = None
        self.settled = False
        self._claim = threading.Lock()
        self._claimed = False

    def claim(self) -> bool:
        """True for the one caller that is to write it (a worker, or an owner that would
        otherwise wait for a worker not yet started)."""
        with self._claim:
            if self._claimed:
                return False
            self._claimed = True
            return True

    def write(self) -> None:
        """On a worker thread: .txnindex fsyncs, the snapshot file, old snapshots pruned.
        Does nothing if the owner has already written it in line (``claim``)."""
        if self.claim():
            self.write_claimed()

    def write_claimed(self) -> None:
        try:
            for path in self.txn_paths:
                txn_index.fsync_file(path)
            snapshots.write_snapshot_at(self.dir_fd, self.offset, self.data)
            snapshots.prune_at(self.dir_fd, self.plog.log_start_offset, SNAPSHOTS_TO_KEEP)
        except OSError as exc:
            self.error = exc
            raise
        finally:
            os.close(self.dir_fd)
            self.done.set()
