"""The log of one partition: a directory ``<topic>-<partition>`` of ordered segments.

``append`` is the heart of Produce: producer-state check, offset assignment, segment write
and producer-state update run as one synchronous step, so no other append can slip between
the idempotence check and the state it guards (KAFKA_NOTES §5, DESIGN "no await between a
check and the state change it guards").
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from protocol.errors import ErrorCode
from protocol.records import BatchHeader, set_base_offset, set_partition_leader_epoch

from .producer_state import ProducerStateManager
from .segment import (
    DEFAULT_INDEX_INTERVAL_BYTES,
    INT32_MAX,
    LOG_SUFFIX,
    Segment,
    parse_file_name,
)

log = logging.getLogger(__name__)

# Kafka answers log_append_time = -1 unless the topic uses LogAppendTime; only CreateTime
# topics exist so far.
NO_TIMESTAMP = -1


class OffsetOutOfRangeError(ValueError):
    """A read below the log start or beyond the log end (Fetch: OFFSET_OUT_OF_RANGE)."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


@dataclass(frozen=True, slots=True)
class AppendResult:
    error: ErrorCode
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int


class PartitionLog:
    def __init__(
        self,
        path: Path,
        topic: str,
        partition: int,
        segments: list[Segment],
        segment_bytes: int,
        index_interval_bytes: int,
    ) -> None:
        self.path = path
        self.topic = topic
        self.partition = partition
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._log_start_offset = segments[0].base_offset
        self._producers = ProducerStateManager()

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        topic: str,
        partition: int,
        *,
        segment_bytes: int,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    ) -> PartitionLog:
        """Open (creating if needed) the partition directory and rebuild its state."""
        if not 0 < segment_bytes <= INT32_MAX:
            raise ValueError(f"segment_bytes {segment_bytes} outside 1..{INT32_MAX}")
        d = Path(path)
        d.mkdir(parents=True, exist_ok=True)
        bases = sorted(
            base
            for name in os.listdir(d)
            if (base := parse_file_name(name, LOG_SUFFIX)) is not None
        )
        segments: list[Segment] = []
        try:
            for base in bases:
                seg = Segment.open(d, base, index_interval_bytes)
                if segments and base < segments[-1].next_offset:
                    seg.close()
                    raise ValueError(
                        f"{d}: segment {base} overlaps the previous one "
                        f"(ending at {segments[-1].next_offset})"
                    )
                segments.append(seg)
            if not segments:
                segments.append(Segment.create(d, 0, index_interval_bytes))
        except BaseException:
            for seg in segments:
                seg.close()
            raise
        plog = cls(d, topic, partition, segments, segment_bytes, index_interval_bytes)
        plog._load_producer_state()
        return plog

    def _load_producer_state(self) -> None:
        """Rebuild producer state by replaying every batch header of the log.

        A snapshot loader will go here: restore the newest valid snapshot, then replay only
        the batches after its offset (KAFKA_NOTES §6).
        """
        self._producers.clear()
        self._replay_producer_state(self._log_start_offset)

    def _replay_producer_state(self, from_offset: int) -> None:
        for header in self.headers(from_offset):
            if header.producer_id < 0 or header.base_sequence < 0:
                continue  # not idempotent, or a control batch (no sequence)
            # The batch's max timestamp stands in for the append time, as in Kafka's
            # snapshots: expiration after a restart counts from the producer's last batch.
            self._producers.update(
                header.producer_id,
                header.producer_epoch,
                header.base_sequence,
                header.last_sequence,
                header.base_offset,
                header.last_offset,
                header.max_timestamp,
                header.max_timestamp,
            )

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
            f"PartitionLog({self.topic}-{self.partition}, start={self._log_start_offset}, "
            f"end={self.log_end_offset}, segments={len(self._segments)})"
        )

    # -- append --------------------------------------------------------------------------

    def append(
        self,
        batch: bytearray | memoryview,
        header: BatchHeader,
        now_ms: int,
        leader_epoch: int = 0,
    ) -> AppendResult:
        """Append one validated batch; ``batch`` is patched in place (base offset, epoch)."""
        pid = header.producer_id
        if pid >= 0:
            check = self._producers.check(
                pid, header.producer_epoch, header.base_sequence, header.last_sequence
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
            segment = self._segment_for_append(len(batch), last_offset)
            segment.append(batch, base_offset, last_offset)
        except OSError:
            # Kafka answers KAFKA_STORAGE_ERROR (and takes the log dir offline); nothing was
            # recorded as appended, so a retry lands at the same offset.
            log.exception("%s-%d: append failed", self.topic, self.partition)
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
                now_ms,
            )
        return AppendResult(ErrorCode.NONE, base_offset, NO_TIMESTAMP, self._log_start_offset)

    def _segment_for_append(self, size: int, last_offset: int) -> Segment:
        active = self._segments[-1]
        if active.size == 0:
            return active
        too_big = active.size + size > self.segment_bytes
        # Relative offsets in the index are int32: Kafka rolls before they would overflow.
        too_far = last_offset - active.base_offset > INT32_MAX
        if too_big or too_far:
            return self.roll()
        return active

    def roll(self) -> Segment:
        """Close the active segment for writing and start a new one at the log end."""
        active = self._segments[-1]
        if active.size == 0:
            return active
        active.flush()
        # A snapshot writer hooks in here (Kafka snapshots producer state on roll).
        segment = Segment.create(self.path, active.next_offset, self.index_interval_bytes)
        self._segments.append(segment)
        self._bases.append(segment.base_offset)
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

    def flush(self) -> None:
        for segment in self._segments:
            segment.flush()

    def close(self) -> None:
        for segment in self._segments:
            segment.close()
