"""Records of one partition for the messages page, read without holding the loop.

On the loop only what Fetch does there: the segment slice that holds the offset (an index
lookup) and a duplicate of its file descriptor, which stays readable through a roll,
retention or deletion. The bytes are read and the batches decompressed and decoded on a
worker thread (broker.runtime.offload). Bounded: at most ``MAX_RECORDS`` records, reads of
``READ_BYTES`` a round and ``MAX_ROUNDS`` rounds, each batch decompressed to at most
``MAX_BATCH_BYTES``.
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
