"""Which compacted log the cleaner takes next, and which part of it (Kafka's
LogCleanerManager.cleanableOffsets, maxCompactionDelay, calculateCleanableBytes and
LogToClean).

- First dirty offset: the cleaner checkpoint, reset to the log start when it lies below it
  or past the log end.
- First uncleanable offset: the lowest of the last stable offset, the active segment's base
  and, with ``min.compaction.lag.ms``, the first dirty segment whose newest record is
  younger than the lag; then moved down to the base of the segment holding it.
- The dirty ratio: cleanable bytes over clean + cleanable bytes; a log is cleanable when it
  is above ``min.cleanable.dirty.ratio``, or when ``max.compaction.lag.ms`` has passed for
  its oldest dirty segment's first batch and it has cleanable bytes. The filthiest goes first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .log_config import LogConfig
from .segment import Segment


class CleanableLog(Protocol):
    config: LogConfig

    @property
    def name(self) -> str: ...
    @property
    def segments(self) -> list[Segment]: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def last_stable_offset(self) -> int: ...


@dataclass(frozen=True, slots=True)
class LogToClean:
    first_dirty_offset: int
    # The base of the first segment not cleaned (Kafka's LogToClean.firstUncleanableOffset).
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    # The checkpoint was invalid and is reset to first_dirty_offset.
    force_update_checkpoint: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    def cleanable(self, min_ratio: float) -> bool:
        """grabFilthiestCompactedLog's filter."""
        return (
            self.need_compaction_now and self.cleanable_bytes > 0
        ) or self.cleanable_ratio > min_ratio


def _containing(segments: list[Segment], offset: int) -> int:
    """Index of the segment holding ``offset`` (its floor), 0 when below the first."""
    index = 0
    for i, seg in enumerate(segments):
        if seg.base_offset <= offset:
            index = i
    return index


def log_to_clean(plog: CleanableLog, checkpoint: int | None, now_ms: int) -> LogToClean:
    segments = plog.segments
    start, end = plog.log_start_offset, plog.log_end_offset
    dirty = start if checkpoint is None else checkpoint
    force = False
    if dirty < start or dirty > end:
        dirty, force = start, checkpoint is not None
    active = segments[-1]
    non_active = segments[_containing(segments, dirty) : -1] if dirty < active.base_offset else []
    limits = [plog.last_stable_offset, active.base_offset]
    min_lag = max(plog.config.min_compaction_lag_ms, 0)
    if min_lag > 0:
        young = next((s for s in non_active if s.largest_timestamp() > now_ms - min_lag), None)
        if young is not None:
            limits.append(young.base_offset)
    uncleanable = max(dirty, min(limits))
    # calculateCleanableBytes: from the base of the segment holding the uncleanable offset.
    first_uncleanable = (
        segments[_containing(segments, uncleanable)].base_offset
        if uncleanable < active.base_offset
        else active.base_offset
    )
    # LocalLog.segments(from, to): from the segment holding ``from``, bases below ``to``.
    clean_bytes = sum(s.size for s in segments if s.base_offset < dirty)
    lo = min(dirty, first_uncleanable)
    cleanable_bytes = sum(
        s.size for s in segments[_containing(segments, lo) :] if s.base_offset < first_uncleanable
    )
    return LogToClean(
        dirty,
        first_uncleanable,
        clean_bytes,
        cleanable_bytes,
        _max_compaction_delay(plog, non_active, now_ms) > 0,
        force,
    )


def _max_compaction_delay(plog: CleanableLog, dirty: list[Segment], now_ms: int) -> int:
    """maxCompactionDelay: how far past max.compaction.lag.ms the oldest dirty first batch is."""
    firsts = [ts for s in dirty if (ts := s.first_batch_timestamp()) > 0]
    earliest = min(firsts, default=2**63 - 1)
    until = now_ms - max(plog.config.max_compaction_lag_ms, 0)
    return until - earliest if earliest < until else 0
