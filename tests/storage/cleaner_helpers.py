"""Helpers for the log cleaner's tests: a log, appends with keys, one cleaning in line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from protocol.records import Record, build_batch, decode_records, parse_header
from storage.cleaner_selection import log_to_clean
from storage.io_throttle import Throttler
from storage.log_cleaner import clean
from storage.log_config import LogConfig
from storage.offset_map import BYTES_PER_ENTRY, OffsetMap
from storage.partition_log import PartitionLog

NO_LIMIT = 1.7976931348623157e308


def open_compacted(path: Path, segment_bytes: int = 1 << 20, **config: object) -> PartitionLog:
    base = LogConfig(
        segment_bytes=segment_bytes,
        index_interval_bytes=256,
        compact=True,
        delete=False,
        retention_ms=-1,
        delete_retention_ms=1000,
        min_cleanable_ratio=0.01,
    )
    return PartitionLog.open(path, "c", 0, config=replace(base, **config))  # type: ignore[arg-type]


def put(
    plog: PartitionLog,
    items: list[tuple[bytes, bytes | None]],
    *,
    ts: int = 1_000,
    codec: int = 0,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    transactional: bool = False,
) -> int:
    batch = bytearray(
        build_batch(
            items,  # type: ignore[arg-type]
            base_timestamp=ts,
            codec=codec,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            transactional=transactional,
        )
    )
    result = plog.append(batch, parse_header(batch), ts, verified=True)
    assert result.error == 0, result
    return result.base_offset


def clean_once(
    plog: PartitionLog,
    now_ms: int = 10_000,
    checkpoint: int | None = None,
    map_entries: int = 100_000,
) -> int:
    """One cleaning from ``checkpoint`` (None: the log start), swapped in; the next first
    dirty offset."""
    to_clean = log_to_clean(plog, checkpoint, now_ms)
    job = plog.cleaning_job(to_clean, now_ms)
    result = clean(job, OffsetMap(map_entries * BYTES_PER_ENTRY), 0.9, Throttler(NO_LIMIT))
    for group in result.groups:
        assert plog.replace_segments(group)
    return result.end_offset


def records(plog: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record in the log, in order."""
    out = []
    for header, data in plog.batches(plog.log_start_offset):
        if header.is_control:
            continue
        rec: Record
        for rec in decode_records(data, header) if header.records_count else []:
            out.append((header.base_offset + rec.offset_delta, rec.key, rec.value))
    return out
