"""Records of one partition for the messages page, read without holding the loop.

On the loop only what Fetch does there: the segment slice that holds the offset (an index
lookup) and a duplicate of its file descriptor, which stays readable through a roll,
retention or deletion. The bytes are read and the batches decompressed and decoded on a
worker thread (broker.runtime.offload). Bounded: at most ``MAX_RECORDS`` records, reads of
``READ_BYTES`` a round and ``MAX_ROUNDS`` rounds, each batch decompressed to at most
``MAX_BATCH_BYTES``. A search scans a bounded window the same way (``SEARCH_RECORDS``
records or ``SEARCH_BYTES`` of log), matching on the worker thread too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from broker.runtime import offload
from protocol.records import CorruptBatchError, decode_records, iter_batches
from storage.partition_log import OffsetOutOfRangeError, PartitionLog

MAX_RECORDS = 500
READ_BYTES = 1024 * 1024
MAX_ROUNDS = 8
MAX_BATCH_BYTES = 16 * 1024 * 1024
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@dataclass
class Batch:
    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    codec: str
    transactional: bool
    control: bool
    timestamp_type: str
    size: int


@dataclass
class Shown:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    batch: Batch
    marker: str | None = None  # COMMIT / ABORT of a control batch


@dataclass
class Page:
    records: list[Shown] = field(default_factory=list)
    next_offset: int = -1  # where the next read would start
    problem: str | None = None


async def read(plog: PartitionLog, start: int, count: int) -> Page:
    """Up to ``count`` records from ``start`` (oldest first), below the high watermark."""
    count = max(1, min(count, MAX_RECORDS))
    page = Page(next_offset=max(start, plog.log_start_offset))
    for _ in range(MAX_ROUNDS):
        end = plog.high_watermark
        if len(page.records) >= count or page.next_offset >= end:
            break
        try:
            where = plog.read_slice(page.next_offset, READ_BYTES, min_one_message=True)
        except OffsetOutOfRangeError:
            break
        if where.length == 0:
            break
        fd = where.segment.dup_fd()
        found, scanned, problem = await offload.run(
            _decode, fd, where.position, where.length, page.next_offset, end, count
        )
        page.records += found[: count - len(page.records)]
        if problem is not None:
            page.problem = problem
            break
        # Past the records shown, or past batches left empty by compaction.
        following = page.records[-1].offset + 1 if found else scanned
        if following <= page.next_offset:
            break
        page.next_offset = following
    return page


def _decode(
    fd: int, position: int, length: int, start: int, end: int, count: int
) -> tuple[list[Shown], int, str | None]:
    """On a worker thread: the slice's batches, decoded, records from ``start`` on; and the
    offset after the last batch read whole."""
    try:
        data = os.pread(fd, length, position)
    finally:
        os.close(fd)
    shown: list[Shown] = []
    scanned = start
    try:
        for pos, header in iter_batches(data):
            if header.base_offset >= end or len(shown) >= count:
                break
            scanned = max(scanned, header.last_offset + 1)
            if header.last_offset < start:
                continue
            batch = Batch(
                header.base_offset,
                header.last_offset,
                header.producer_id,
                header.producer_epoch,
                header.base_sequence,
                CODECS.get(header.compression, str(header.compression)),
                header.is_transactional,
                header.is_control,
                "LogAppendTime" if header.log_append_time else "CreateTime",
                header.size,
            )
            raw = data[pos : pos + header.size]
            for record in decode_records(raw, header, max_size=MAX_BATCH_BYTES):
                offset = header.base_offset + record.offset_delta
                if offset < start or offset >= end:
                    continue
                marker = None
                if header.is_control and record.key is not None:
                    marker = _marker(record.key)
                timestamp = (
                    header.max_timestamp
                    if header.log_append_time
                    else header.base_timestamp + record.timestamp_delta
                )
                shown.append(
                    Shown(
                        offset, timestamp, record.key, record.value, record.headers, batch, marker
                    )
                )
                if len(shown) >= count:
                    break
    except CorruptBatchError as exc:
        return shown, scanned, f"unreadable batch: {exc}"
    return shown, scanned, None


def _marker(key: bytes) -> str:
    # EndTransactionMarker's key: version int16, type int16 (0 ABORT, 1 COMMIT).
    kind = int.from_bytes(key[2:4], "big", signed=True) if len(key) >= 4 else -1
    return {0: "ABORT", 1: "COMMIT"}.get(kind, "control")


SEARCH_RECORDS = 10_000
SEARCH_BYTES = 16 * 1024 * 1024


@dataclass
class Found:
    """Records matching a search, and the window scanned: ``start`` up to ``next_offset``."""

    records: list[Shown] = field(default_factory=list)
    start: int = 0
    next_offset: int = 0
    scanned_records: int = 0
    scanned_bytes: int = 0
    problem: str | None = None


async def search(plog: PartitionLog, start: int, needle: bytes, where: str) -> Found:
    """Records from ``start`` whose key (``where`` "key"), value ("value") or either holds
    ``needle``: at most ``SEARCH_RECORDS`` records or ``SEARCH_BYTES`` of log scanned, and
    ``MAX_RECORDS`` found, each read decoded and matched on a worker thread."""
    begin = max(start, plog.log_start_offset)
    found = Found(start=begin, next_offset=begin)
    while found.scanned_records < SEARCH_RECORDS and found.scanned_bytes < SEARCH_BYTES:
        end = plog.high_watermark
        if len(found.records) >= MAX_RECORDS or found.next_offset >= end:
            break
        try:
            where_ = plog.read_slice(found.next_offset, READ_BYTES, min_one_message=True)
        except OffsetOutOfRangeError:
            break
        if where_.length == 0:
            break
        fd = where_.segment.dup_fd()
        budget = SEARCH_RECORDS - found.scanned_records
        matching, decoded, following, problem = await offload.run(
            _decode_matching,
            fd,
            where_.position,
            where_.length,
            found.next_offset,
            end,
            budget,
            needle,
            where,
        )
        found.scanned_bytes += where_.length
        room = MAX_RECORDS - len(found.records)
        if len(matching) > room:
            # A page's worth found: the window ends at the last match shown, so that a
            # search on from there misses none.
            kept = matching[:room]
            found.records += kept
            found.scanned_records += kept[-1].offset + 1 - found.next_offset
            found.next_offset = kept[-1].offset + 1
            return found
        found.scanned_records += decoded
        found.records += matching
        if problem is not None:
            found.problem = problem
            break
        if following <= found.next_offset:
            break
        found.next_offset = following
    return found


def _decode_matching(
    fd: int,
    position: int,
    length: int,
    start: int,
    end: int,
    count: int,
    needle: bytes,
    where: str,
) -> tuple[list[Shown], int, int, str | None]:
    """On a worker thread: the slice's matching records, how many were decoded, and the
    offset the next read starts at."""
    shown, scanned, problem = _decode(fd, position, length, start, end, count)
    following = shown[-1].offset + 1 if shown else scanned
    return [r for r in shown if _matches(r, needle, where)], len(shown), following, problem


def _matches(record: Shown, needle: bytes, where: str) -> bool:
    key = record.key or b""
    value = record.value or b""
    if where == "key":
        return needle in key
    if where == "value":
        return needle in value
    return needle in key or needle in value
