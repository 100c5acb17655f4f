"""Per-log settings, with Kafka's names (topic-level names in comments) and defaults."""

from __future__ import annotations

from dataclasses import dataclass

from .segment import INT32_MAX

# Kafka's Long.MAX_VALUE: "never" for the flush policy and "no limit" for other longs.
LONG_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class LogConfig:
    # segment.bytes: roll when the next batch would not fit (Kafka default 1 GiB).
    segment_bytes: int = 1073741824
    # segment.ms: roll when the first batch of the active segment is this much older than
    # the batch being appended (7 days).
    segment_ms: int = 604800000
    # index.interval.bytes: bytes of log between two entries of the sparse offset index.
    index_interval_bytes: int = 4096
    # retention.ms: delete whole segments whose newest batch is older than this; -1 = forever.
    retention_ms: int = 604800000
    # retention.bytes: delete the oldest segments while the partition exceeds this; -1 = off.
    retention_bytes: int = -1
    # flush.messages / flush.ms: fsync after this many unflushed records / this long since
    # the last flush. Kafka's defaults are Long.MAX_VALUE: leave it to the page cache.
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    # minikafka: how often the owner calls PartitionLog.maybe_snapshot (no Kafka equivalent;
    # 60 s like log.flush.offset.checkpoint.interval.ms, whose role the snapshot also plays).
    # Storage does not schedule anything itself.
    snapshot_interval_ms: int = 60000
    # file.delete.delay.ms: how long the files of a segment that left the log (retention,
    # DeleteRecords) stay, renamed *.deleted, before they are removed (Kafka: 60 s).
    file_delete_delay_ms: int = 60000
    # cleanup.policy: compact (the log cleaner keeps the latest record of each key) and/or
    # delete (retention; with compact too, the cleaner thread runs it, as Kafka's does).
    compact: bool = False
    delete: bool = True
    # min.cleanable.dirty.ratio: dirty bytes over all bytes above which the cleaner takes it.
    min_cleanable_ratio: float = 0.5
    # min.compaction.lag.ms / max.compaction.lag.ms: a record stays uncleaned at least / at
    # most this long (max: the log is cleaned whatever its dirty ratio).
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    # delete.retention.ms: how long a tombstone (or a marker of an emptied transaction)
    # stays after the cleaning that first reached it.
    delete_retention_ms: int = 86400000
    # segment.index.bytes: the cleaner merges segments while their indexes fit this.
    segment_index_bytes: int = 10485760

    def __post_init__(self) -> None:
        if not 0 < self.segment_bytes <= INT32_MAX:
            raise ValueError(f"segment_bytes {self.segment_bytes} outside 1..{INT32_MAX}")
        if self.segment_ms < 1:
            raise ValueError(f"segment_ms must be >= 1: {self.segment_ms}")
        if self.index_interval_bytes < 0:
            raise ValueError(f"index_interval_bytes must be >= 0: {self.index_interval_bytes}")
        if self.retention_ms < -1 or self.retention_bytes < -1:
            raise ValueError("retention_ms and retention_bytes must be >= -1")
        if self.flush_messages < 1 or self.flush_ms < 0:
            raise ValueError("flush_messages must be >= 1 and flush_ms >= 0")
        if self.file_delete_delay_ms < 0:
            raise ValueError(f"file_delete_delay_ms must be >= 0: {self.file_delete_delay_ms}")
        if self.snapshot_interval_ms < 1:
            raise ValueError(f"snapshot_interval_ms must be >= 1: {self.snapshot_interval_ms}")
