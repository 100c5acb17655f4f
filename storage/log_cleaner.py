"""One cleaning of one compacted log, on a cleaner thread (Kafka's Cleaner.doClean).

1. ``build_offset_map``: from the first dirty offset up to the first uncleanable one, each
   key's latest offset (aborted transactions' records left out), until the bounded map is
   full; the cleaning then reaches only the offset where it filled (``end_offset``), and the
   rest waits for the next pass.
2. ``group_segments_by_size``: the log's segments below ``end_offset`` (from the log start:
   every pass rewrites the clean part too), merged into groups up to ``segment.bytes`` and
   ``segment.index.bytes`` whose offsets fit an int32 from the group's base.
3. ``clean_group``: each group into one ``<base>.log.cleaned`` segment (with its indexes and
   ``.txnindex``), batch by batch (``batch_filter``): a record stays when it is the latest of
   its key in the map or past the map's reach; a tombstone stays until the delete horizon
   this cleaning or an earlier one set on its batch; aborted transactions' batches go, then
   their markers (after the horizon, once no batch of theirs is left); each active
   producer's last batch stays (maybe empty) so its sequence and epoch survive, as does the
   last batch of the round. Flushed, then renamed ``.swap``: what the partition log swaps in
   on its owner's thread (``PartitionLog.replace_segments``) and recovery finishes after a
   crash (``log_recovery``).

Reads and writes go through the shared ``Throttler`` (log.cleaner.io.max.bytes.per.second).
Nothing here touches the live log's lists: the segments read lie below the active segment,
which alone is appended to.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from protocol.records import BatchHeader, parse_header, records_data

from . import record_walk, txn_index
from .atomic_file import fsync_dir
from .batch_filter import BatchRetention, filter_batch
from .cleaned_txns import CleanedTxns
from .cleaner_selection import LogToClean
from .io_throttle import Throttler
from .log_config import LogConfig
from .offset_map import OffsetMap
from .segment import INT32_MAX, Segment, file_name
from .txn_index import TXN_INDEX_SUFFIX, AbortedTxn

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"  # Kafka's LogFileUtils.CLEANED_FILE_SUFFIX
SWAP_SUFFIX = ".swap"  # Kafka's LogFileUtils.SWAP_FILE_SUFFIX
OFFSET_INDEX_ENTRY = 8
TIME_INDEX_ENTRY = 12


class CleaningAborted(Exception):
    """The log changed under the cleaning (deleted, closed): its work is thrown away."""


@dataclass(frozen=True, slots=True)
class LastRecord:
    """Kafka's LastRecord: an active producer's last data offset (None: only markers) and
    epoch."""

    last_data_offset: int | None
    epoch: int


@dataclass(slots=True)
class CleaningJob:
    """What the owner's thread hands the cleaner thread (read at the start of a pass)."""

    name: str
    directory: Path
    segments: list[Segment]
    config: LogConfig
    to_clean: LogToClean
    aborted: list[AbortedTxn]
    last_records: dict[int, LastRecord]
    now_ms: int
    # Set by the owner to stop the cleaning at its next batch (shutdown; Kafka's checkDone).
    abort: threading.Event = field(default_factory=threading.Event)
    # The directory's inode when the job was taken: a topic deleted (its directory renamed)
    # and created again under the same name must not get this log's files.
    dir_inode: int = -1

    def check_directory(self) -> None:
        try:
            inode = os.stat(self.directory).st_ino
        except FileNotFoundError:
            inode = -2
        if self.abort.is_set() or inode != self.dir_inode:
            raise CleaningAborted(f"{self.name}: log deleted or cleaning stopped")


@dataclass(slots=True)
class CleanedGroup:
    """One ``.swap`` segment ready to replace ``replaced``, with its aborted-txn entries."""

    segment: Segment
    replaced: list[Segment]
    txn_entries: list[AbortedTxn]

    @property
    def txn_swap_path(self) -> Path:
        return self.segment.directory / (
            file_name(self.segment.base_offset, TXN_INDEX_SUFFIX) + SWAP_SUFFIX
        )

    def discard(self) -> None:
        """A swap that did not happen: the files go."""
        self.segment.delete()
        self.txn_swap_path.unlink(missing_ok=True)


@dataclass(slots=True)
class CleanerStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    map_records: int = 0
    map_bytes: int = 0


@dataclass(slots=True)
class CleaningResult:
    end_offset: int  # the next first dirty offset (the cleaner checkpoint)
    groups: list[CleanedGroup] = field(default_factory=list)
    stats: CleanerStats = field(default_factory=CleanerStats)


def collect_aborted(aborted: list[AbortedTxn], start: int, upper: int) -> list[AbortedTxn]:
    """UnifiedLog.collectAbortedTransactions(start, upper)."""
    return [a for a in aborted if a.last_offset >= start and a.first_offset < upper]


def _segments_in(segments: list[Segment], start: int, end: int) -> list[Segment]:
    """LocalLog.segments(start, end): the one holding ``start`` and those below ``end``."""
    first = 0
    for i, seg in enumerate(segments):
        if seg.base_offset <= start:
            first = i
    return [s for s in segments[first:] if s.base_offset < end]


def _batches(
    job: CleaningJob, seg: Segment, position: int, throttler: Throttler
) -> Iterator[tuple[BatchHeader, bytes]]:
    for _, header, data in seg.batches(position):
        if job.abort.is_set() or seg.closed:
            raise CleaningAborted(f"cleaning of {job.name} aborted")
        throttler.maybe_throttle(len(data))
        yield header, data


def build_offset_map(
    job: CleaningJob,
    offset_map: OffsetMap,
    load_factor: float,
    throttler: Throttler,
    stats: CleanerStats,
) -> None:
    """Cleaner.buildOffsetMap over [first dirty, first uncleanable)."""
    offset_map.clear()
    start, end = job.to_clean.first_dirty_offset, job.to_clean.first_uncleanable_offset
    dirty = _segments_in(job.segments, start, end)
    txns = CleanedTxns()
    txns.add_aborted(collect_aborted(job.aborted, start, end))
    max_desired = int(offset_map.slots * load_factor)
    for i, seg in enumerate(dirty):
        next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
        if _map_segment(
            job, seg, offset_map, start, next_start, txns, max_desired, throttler, stats
        ):
            break


def _map_segment(
    job: CleaningJob,
    seg: Segment,
    offset_map: OffsetMap,
    start: int,
    next_start: int,
    txns: CleanedTxns,
    max_desired: int,
    throttler: Throttler,
    stats: CleanerStats,
) -> bool:
    """Cleaner.buildOffsetMapForSegment; True when the map filled."""
    _, position = seg.index.lookup(start)
    for header, data in _batches(job, seg, position, throttler):
        stats.map_bytes += len(data)
        if header.is_control:
            txns.on_control_batch(header, data)
        elif not txns.on_batch(header) and header.records_count:
            keys, deltas = record_walk.keys_and_offset_deltas(
                records_data(data, header), header.records_count
            )
            done = offset_map.put_records(keys, header.base_offset, deltas, start, max_desired)
            stats.map_records += done
            if done < len(keys):
                return True
        if header.last_offset >= start:
            offset_map.update_latest_offset(header.last_offset)
    # Offsets missing at the segment's end (cleaned earlier): the map covers them too.
    offset_map.update_latest_offset(next_start - 1)
    return False


def group_segments_by_size(
    segments: list[Segment], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[Segment]]:
    """Cleaner.groupSegmentsBySize."""
    groups: list[list[Segment]] = []
    segs = list(segments)
    while segs:
        group = [segs.pop(0)]
        log_size = group[0].size
        index_size = len(group[0].index) * OFFSET_INDEX_ENTRY
        time_size = len(group[0].time_index.entries()) * TIME_INDEX_ENTRY
        while segs:
            head = segs[0]
            last_offset = segs[1].base_offset - 1 if len(segs) > 1 else first_uncleanable - 1
            head_index = len(head.index) * OFFSET_INDEX_ENTRY
            head_time = len(head.time_index.entries()) * TIME_INDEX_ENTRY
            if not (
                log_size + head.size <= max_size
                and index_size + head_index <= max_index_size
                and time_size + head_time <= max_index_size
                and (head.size == 0 or last_offset - group[-1].base_offset <= INT32_MAX)
            ):
                break
            group.append(segs.pop(0))
            log_size += head.size
            index_size += head_index
            time_size += head_time
        groups.append(group)
    return groups


def clean(
    job: CleaningJob,
    offset_map: OffsetMap,
    load_factor: float,
    throttler: Throttler,
) -> CleaningResult:
    """Cleaner.doClean; the groups come back as ``.swap`` segments for the owner to swap."""
    stats = CleanerStats()
    if offset_map.slots * load_factor <= 1:
        raise ValueError(
            "offset map is too small to fit in even a single message, so log cleaning will "
            "never make progress. You can increase log.cleaner.dedupe.buffer.size or "
            "decrease log.cleaner.threads"
        )
    build_offset_map(job, offset_map, load_factor, throttler, stats)
    end_offset = offset_map.latest_offset + 1
    result = CleaningResult(end_offset, stats=stats)
    txns = CleanedTxns()
    segments = _segments_in(job.segments, 0, end_offset)
    groups = group_segments_by_size(
        segments,
        job.config.segment_bytes,
        job.config.segment_index_bytes,
        job.to_clean.first_uncleanable_offset,
    )
    try:
        for group in groups:
            result.groups.append(clean_group(job, group, offset_map, txns, throttler, stats))
    except BaseException:
        for done in result.groups:
            done.discard()
        raise
    return result


def clean_group(
    job: CleaningJob,
    group: list[Segment],
    offset_map: OffsetMap,
    txns: CleanedTxns,
    throttler: Throttler,
    stats: CleanerStats,
) -> CleanedGroup:
    """Cleaner.cleanSegments up to the swap: the group into one segment, renamed .swap."""
    base = group[0].base_offset
    job.check_directory()
    cleaned = Segment.create(
        job.directory,
        base,
        job.config.index_interval_bytes,
        sync_dir=False,
        suffix=CLEANED_SUFFIX,
    )
    txn_cleaned = job.directory / (file_name(base, TXN_INDEX_SUFFIX) + CLEANED_SUFFIX)
    txn_swap = job.directory / (file_name(base, TXN_INDEX_SUFFIX) + SWAP_SUFFIX)
    entries: list[AbortedTxn] = []
    txns.cleaned_index = entries
    try:
        for i, seg in enumerate(group):
            upper = group[i + 1].base_offset if i + 1 < len(group) else seg.next_offset
            txns.add_aborted(collect_aborted(job.aborted, seg.base_offset, upper))
            _clean_into(job, seg, cleaned, offset_map, txns, throttler, stats)
        cleaned.seal_time_index()  # onBecomeInactiveSegment
        cleaned.flush()
        txn_index.write_entries(txn_cleaned, entries)
        txn_index.fsync_file(txn_cleaned)
        # Kafka keeps the replaced segments' last modified time (retention and the legacy
        # delete horizon read it).
        cleaned.set_last_modified(group[-1].last_modified_ms())
        job.check_directory()
        # The swap's first half (LocalLog.replaceSegments renames .cleaned -> .swap): from
        # here a crash finishes the swap at the next open, before it one throws it away.
        cleaned.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
        if txn_cleaned.exists():
            txn_cleaned.rename(txn_swap)
        fsync_dir(job.directory)
    except BaseException:
        cleaned.delete()
        txn_cleaned.unlink(missing_ok=True)
        txn_swap.unlink(missing_ok=True)
        raise
    return CleanedGroup(cleaned, group, entries)


def _clean_into(
    job: CleaningJob,
    source: Segment,
    dest: Segment,
    offset_map: OffsetMap,
    txns: CleanedTxns,
    throttler: Throttler,
    stats: CleanerStats,
) -> None:
    """Cleaner.cleanInto: every batch of ``source`` through the cleaner's filter."""
    now = job.now_ms
    upper_bound = job.to_clean.first_uncleanable_offset
    delete_retention = job.config.delete_retention_ms
    latest = offset_map.latest_offset

    def keep_record(
        key: bytes | None, has_value: bool, offset: int, *, header: BatchHeader
    ) -> bool:
        # Cleaner.shouldRetainRecord
        if offset > latest:
            return True
        if key is None:
            return False
        if offset < offset_map.get(key):
            return False
        if has_value:
            return True
        horizon = header.delete_horizon_ms
        return horizon is None or now < horizon

    def select_latest(walked: record_walk.Walked, base: int, *, header: BatchHeader) -> list[int]:
        # keep_record over a whole batch, the map's lookups in one call.
        latest_of_key = offset_map.get_all(walked.keys)
        kept: list[int] = []
        horizon = header.delete_horizon_ms
        tombstones_stay = horizon is None or now < horizon
        for i, delta in enumerate(walked.offset_deltas):
            offset = base + delta
            if offset > latest or (
                walked.keys[i] is not None
                and offset >= latest_of_key[i]
                and (walked.has_value[i] or tombstones_stay)
            ):
                kept.append(i)
        return kept

    for header, data in _batches(job, source, 0, throttler):
        stats.bytes_read += len(data)
        if header.is_control:
            can_discard = txns.on_control_batch(header, data)
            horizon = header.delete_horizon_ms
            discard_records = can_discard and horizon is not None and horizon <= now
        else:
            can_discard = txns.on_batch(header)
            discard_records = can_discard
        last = job.last_records.get(header.producer_id) if header.producer_id >= 0 else None
        is_last_of_producer = last is not None and (
            header.last_offset == last.last_data_offset
            if last.last_data_offset is not None
            else header.is_control and header.producer_epoch == last.epoch
        )
        if header.producer_id >= 0 and is_last_of_producer:
            retention = BatchRetention.RETAIN_EMPTY
        elif header.next_offset == upper_bound:
            # The last batch of the round stays, even empty, so the last offset is kept.
            retention = BatchRetention.RETAIN_EMPTY
        elif discard_records:
            retention = BatchRetention.DELETE
        else:
            retention = BatchRetention.DELETE_EMPTY

        keep: Callable[[bytes | None, bool, int], bool]
        select: Callable[[record_walk.Walked, int], list[int]] | None = None
        if discard_records:
            # Kept only for the producer's sequence: the records go.
            keep = _nothing
        elif header.is_control:
            keep = _everything
        else:
            keep = functools.partial(keep_record, header=header)
            select = functools.partial(select_latest, header=header)

        out = filter_batch(
            data,
            header,
            retention,
            can_discard and header.is_control,
            keep,
            now,
            delete_retention,
            select,
        )
        stats.records_read += out.records_read
        stats.records_kept += out.records_kept
        if out.data is not None:
            dest.append(out.data, header.base_offset, header.last_offset, _max_ts(out.data))
            throttler.maybe_throttle(len(out.data))
            stats.bytes_written += len(out.data)


def _nothing(key: bytes | None, has_value: bool, offset: int) -> bool:
    return False


def _everything(key: bytes | None, has_value: bool, offset: int) -> bool:
    return True


def _max_ts(batch: bytes) -> int:
    return parse_header(batch).max_timestamp
