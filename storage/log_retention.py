"""Moving one partition log's start: retention by time and size, DeleteRecords, and the
segments that leave the log.

- ``apply_retention`` / ``retention_due``: Kafka's deleteOldSegments, whole segments from
  the oldest on, by ``retention.ms`` (``expired``) then ``retention.bytes`` (``surplus``);
  the empty active segment always stays.
- ``advance_log_start``: the log start moved to an offset (DeleteRecords, its checkpoint
  read back at open); segments wholly below it go (deleteLogStartOffsetBreachedSegments).
- Either way a snapshot at or above the new start is on disk first (``producer_snapshots``),
  so every producer survives (KAFKA-7190), and the snapshots below it go afterwards.
- ``retire_segments``: files renamed ``*.deleted`` at once, removed
  ``file.delete.delay.ms`` later through the log's ``file_deleter``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from .aborted_txns import AbortedTxns
from .atomic_file import fsync_dir
from .delayed_delete import DelayedDeletes, remove_segments
from .log_config import LogConfig
from .producer_snapshots import ProducerSnapshots, SnapshotOwner
from .segment import Segment

# The partition log's lines keep its logger name wherever its code sits.
log = logging.getLogger("storage.partition_log")


class RetainedLog(SnapshotOwner, Protocol):
    """The partition log, as retention sees it (its snapshots' view, and more)."""

    config: LogConfig
    file_deleter: DelayedDeletes | None
    producer_snapshots: ProducerSnapshots
    aborted_txns: AbortedTxns

    @property
    def size(self) -> int: ...
    @property
    def segments(self) -> list[Segment]: ...
    def roll(self, now_ms: int | None = None) -> Segment: ...
    def drop_oldest_segments(self, count: int, log_start_offset: int) -> None: ...


def expired(now_ms: int, retention_ms: int) -> Callable[[Segment], bool]:
    """retention.ms: a segment whose newest batch is older than that."""

    def expired(seg: Segment) -> bool:
        return now_ms - seg.largest_timestamp() > retention_ms

    return expired


def surplus(excess: int) -> Callable[[Segment], bool]:
    """retention.bytes: the oldest segments while deleting them leaves the log at or above
    the limit (``excess`` bytes above it)."""

    def surplus(seg: Segment) -> bool:
        nonlocal excess
        if excess - seg.size >= 0:
            excess -= seg.size
            return True
        return False

    return surplus


def apply_retention(
    plog: RetainedLog,
    now_ms: int,
    retention_ms: int | None,
    retention_bytes: int | None,
    max_segments: int | None = None,
) -> int:
    """Delete by time, then by size; at most ``max_segments`` (the caller comes back for the
    rest, so one pass over thousands of expired segments never holds its thread long)."""
    if retention_ms is None:
        retention_ms = plog.config.retention_ms
    if retention_bytes is None:
        retention_bytes = plog.config.retention_bytes
    deleted = 0
    if retention_ms >= 0:
        deleted += _delete_oldest_segments(
            plog, expired(now_ms, retention_ms), now_ms, "retention.ms", max_segments
        )
    if max_segments is not None and deleted >= max_segments:
        return deleted
    size = plog.size
    if retention_bytes >= 0 and size >= retention_bytes:
        deleted += _delete_oldest_segments(
            plog,
            surplus(size - retention_bytes),
            now_ms,
            "retention.bytes",
            None if max_segments is None else max_segments - deleted,
        )
    return deleted


def retention_due(plog: RetainedLog, now_ms: int) -> bool:
    retention_ms, retention_bytes = plog.config.retention_ms, plog.config.retention_bytes
    if retention_ms >= 0 and _oldest_segments(plog.segments, expired(now_ms, retention_ms)):
        return True
    size = plog.size
    return (
        retention_bytes >= 0
        and size >= retention_bytes
        and bool(_oldest_segments(plog.segments, surplus(size - retention_bytes)))
    )


def _oldest_segments(
    segments: list[Segment], predicate: Callable[[Segment], bool]
) -> list[Segment]:
    doomed: list[Segment] = []
    for i, seg in enumerate(segments):
        if i == len(segments) - 1 and seg.size == 0:
            break  # Kafka never deletes an empty active segment
        if not predicate(seg):
            break
        doomed.append(seg)
    return doomed


def _delete_oldest_segments(
    plog: RetainedLog,
    predicate: Callable[[Segment], bool],
    now_ms: int,
    reason: str,
    max_segments: int | None = None,
) -> int:
    segments = plog.segments
    doomed = _oldest_segments(segments, predicate)
    if max_segments is not None:
        doomed = doomed[:max_segments]
    if not doomed:
        return 0
    if len(doomed) == len(segments):
        # A log always keeps one segment: roll so the expired active one can go.
        plog.roll(now_ms)
    # max: DeleteRecords may have moved the log start into the new first segment.
    new_start = max(plog.log_start_offset, plog.segments[len(doomed)].base_offset)
    plog.producer_snapshots.before_log_start_moves(new_start)
    plog.drop_oldest_segments(len(doomed), new_start)
    retire_segments(plog, doomed)
    log.info(
        "%s: deleted %d segment(s) by %s; log start offset now %d",
        plog.name,
        len(doomed),
        reason,
        plog.log_start_offset,
    )
    plog.producer_snapshots.delete_old()
    return len(doomed)


def advance_log_start(plog: RetainedLog, offset: int, reason: str) -> None:
    """Start the log at ``offset``, above its current start and at most its end."""
    # Kafka's deleteLogStartOffsetBreachedSegments: a segment goes when the next one
    # starts at or below the new log start; the active segment always stays.
    segments = plog.segments
    doomed = [seg for seg, nxt in itertools.pairwise(segments) if nxt.base_offset <= offset]
    plog.producer_snapshots.before_log_start_moves(offset)
    plog.drop_oldest_segments(len(doomed), offset)
    if doomed:
        retire_segments(plog, doomed)
    log.info(
        "%s: log start offset now %d by %s (%d segment(s) deleted)",
        plog.name,
        offset,
        reason,
        len(doomed),
    )
    plog.producer_snapshots.delete_old()


def retire_segments(plog: RetainedLog, doomed: list[Segment]) -> None:
    """Kafka's LocalLog.deleteSegmentFiles for segments already out of the list: rename
    their files ``*.deleted`` now (durably: they must not come back after a crash), remove
    them file.delete.delay.ms later. A fetch response being sent from one of them keeps
    reading its open file meanwhile instead of being cut mid-frame."""
    txns = plog.aborted_txns
    txns.forget_before(plog.segments[0].base_offset)
    txn_files: list[Path] = []
    try:
        for seg in doomed:
            seg.mark_deleted()
            deleted = txns.retire(seg)
            if deleted is not None:
                txn_files.append(deleted)
        fsync_dir(plog.path)
    finally:
        what = f"{plog.name}: segment(s) " + ", ".join(str(s.base_offset) for s in doomed)
        remove_segments(
            plog.file_deleter, plog.config.file_delete_delay_ms, what, doomed, txn_files
        )
