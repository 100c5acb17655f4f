"""Opening a partition directory after a clean shutdown or a crash (Kafka's LogLoader;
KAFKA_NOTES §6). ``PartitionLog.open`` runs these in order:

- ``tidy_directory``: leftovers of interrupted writes and deletions removed.
- ``valid_snapshots``: producer-state snapshots newest first, corrupt ones set aside.
- ``open_segments``: "clean" mode trusts indexes and file sizes; "crash" mode CRC-checks
  from the newest snapshot's recovery point on, cuts the log at the first torn or corrupt
  batch and drops every segment after it.
- ``recover_producer_state``: the newest usable snapshot restored, then the batches after
  it replayed through the same producer-state update as an append, COMMIT/ABORT markers
  included (the aborted-transaction entries of the replayed range are rebuilt).
- ``RecoveryInfo``: what the open found and did.
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from protocol.records import (
    HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    parse_end_txn_marker,
    parse_header,
)

from . import snapshot as snapshots
from .aborted_txns import AbortedTxns
from .atomic_file import TMP_SUFFIX, fsync_dir
from .log_cleaner import CLEANED_SUFFIX, SWAP_SUFFIX
from .log_config import LogConfig
from .offset_index import INDEX_SUFFIX
from .producer_state import ProducerStateManager
from .segment import DELETED_SUFFIX, LOG_SUFFIX, Segment, Truncation, parse_file_name
from .time_index import TIME_INDEX_SUFFIX
from .txn_index import TXN_INDEX_SUFFIX

# The partition log's lines keep its logger name wherever its code sits.
log = logging.getLogger("storage.partition_log")

# Files that belong to a segment besides its .log; removed with it.
SEGMENT_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

# "clean": the store was shut down cleanly; trust indexes, sizes and the snapshot at the log
# end. "crash": check every batch from the recovery point on (CRC, lengths, offsets).
RecoveryMode = Literal["clean", "crash"]


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


def tidy_directory(d: Path, name: str) -> list[int]:
    """Remove leftovers of interrupted writes and deletions; return the segment bases."""
    complete_swaps(d, name)
    names = os.listdir(d)
    bases = sorted(b for n in names if (b := parse_file_name(n, LOG_SUFFIX)) is not None)
    have = set(bases)
    for n in names:
        orphan_index = any(
            (b := parse_file_name(n, suffix)) is not None and b not in have
            for suffix in SEGMENT_INDEX_SUFFIXES
        )
        if n.endswith((TMP_SUFFIX, DELETED_SUFFIX)) or orphan_index:
            # A snapshot write that never reached its rename, segment files renamed for a
            # deletion the process did not live to finish (Kafka's LogLoader
            # removeTempFilesAndCollectSwapFiles), or the index of a segment whose deletion
            # was cut short.
            (d / n).unlink()
    if removed := snapshots.remove_set_aside(d):
        log.info(
            "%s: removed %d snapshot(s) set aside as corrupt by an earlier open", name, removed
        )
    return bases


def complete_swaps(d: Path, name: str) -> None:
    """Finish or discard a log cleaner's swap cut short by a crash, as Kafka's LogLoader
    (removeTempFilesAndCollectSwapFiles, then load's passes over the swap files).

    ``.cleaned`` files go (the cleaning never reached its swap), and with them any ``.swap``
    file at or above the lowest ``.cleaned`` offset (KAFKA-6264: part of a swap that could
    not complete). The remaining ``.swap`` segments were flushed whole before being named
    so: every other file whose offset lies in [lowest swap base, highest swap log end) is
    what they replace and goes, then the ``.swap`` names lose their suffix.
    """
    names = os.listdir(d)
    cleaned = [n for n in names if n.endswith(CLEANED_SUFFIX)]
    min_cleaned = min((o for n in cleaned if (o := _offset_of(n)) is not None), default=None)
    for n in cleaned:
        (d / n).unlink()
    swaps: list[str] = []
    for n in names:
        if not n.endswith(SWAP_SUFFIX):
            continue
        offset = _offset_of(n)
        if min_cleaned is not None and offset is not None and offset >= min_cleaned:
            log.info("%s: deleting %s, part of a swap that could not complete", name, n)
            (d / n).unlink()
        else:
            swaps.append(n)
    if not swaps:
        if cleaned:
            fsync_dir(d)
        return
    low, high = 2**63 - 1, -(2**63)
    for n in swaps:
        base = parse_file_name(n[: -len(SWAP_SUFFIX)], LOG_SUFFIX)
        if base is None:
            continue
        log.info(
            "%s: found log file %s from interrupted swap operation, which is recoverable "
            "from .swap files by renaming",
            name,
            n,
        )
        low = min(low, base)
        high = max(high, _log_end_of(d / n, base))
    for n in os.listdir(d):
        offset = _offset_of(n)
        if not n.endswith(SWAP_SUFFIX) and offset is not None and low <= offset < high:
            log.info("%s: deleting segment file %s that is compacted but not deleted yet", name, n)
            (d / n).unlink()
    for n in swaps:
        log.info("%s: recovering file %s by renaming from .swap", name, n)
        os.rename(d / n, d / n[: -len(SWAP_SUFFIX)])
    fsync_dir(d)


def _offset_of(file: str) -> int | None:
    """Kafka's offsetFromFile: the digits before the first dot, None for other names."""
    stem = file.split(".", 1)[0]
    return int(stem) if stem.isdigit() else None


def _log_end_of(path: Path, base: int) -> int:
    """The offset after the last whole batch of a log file (readNextOffset)."""
    end = base
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        while pos + HEADER_SIZE <= size:
            f.seek(pos)
            try:
                header = parse_header(f.read(HEADER_SIZE))
            except CorruptBatchError:
                break
            if pos + header.size > size:
                break
            end = header.next_offset
            pos += header.size
    return end


def valid_snapshots(d: Path, name: str, info: RecoveryInfo) -> Iterator[snapshots.Snapshot]:
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


def open_segments(
    d: Path,
    name: str,
    bases: list[int],
    config: LogConfig,
    mode: RecoveryMode,
    recovery_point: int,
    info: RecoveryInfo,
    *,
    sync_dir: bool = True,
) -> list[Segment]:
    """Open the segments in order; cut the log at the first torn or corrupt batch.
    ``sync_dir=False``: the caller fsyncs the directory after the first segment of an
    empty one is made."""
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
                    for suffix in (LOG_SUFFIX, *SEGMENT_INDEX_SUFFIXES):
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
            segments.append(Segment.create(d, 0, interval, sync_dir=sync_dir))
    except BaseException:
        for seg in segments:
            seg.close(flush=False)
        raise
    return segments


def recover_producer_state(
    d: Path,
    name: str,
    segments: list[Segment],
    producers: ProducerStateManager,
    txns: AbortedTxns,
    info: RecoveryInfo,
    newest: snapshots.Snapshot | None,
    older: Iterator[snapshots.Snapshot],
) -> snapshots.Snapshot | None:
    """Restore the newest usable snapshot, then replay the batches after it; returns the
    snapshot restored (None: replayed from the log start).

    Runs on a log just opened: it starts at its first segment (a log start checkpointed by
    DeleteRecords is applied afterwards).
    """
    start, end = segments[0].base_offset, segments[-1].next_offset
    snap = newest
    stale: list[int] = []
    while snap is not None and not start <= snap.offset <= end:
        if snap.offset > end:
            # Written before a crash cut the log below it: it describes batches that
            # are gone (KAFKA_NOTES §6).
            log.warning(
                "%s: deleting snapshot at offset %d above the log end %d",
                name,
                snap.offset,
                end,
            )
        stale.append(snap.offset)
        snap = next(older, None)
    snapshots.delete_snapshots(d, stale)
    producers.clear()
    replay_from = start
    if snap is not None:
        for entry in snap.producers:
            producers.restore(entry)
        info.snapshot_offset = snap.offset
        replay_from = snap.offset
    # The aborted-transaction entries of the replayed range are rebuilt by the replay
    # (LogSegment.recover rebuilds the txn index of the segments it recovers).
    txns.keep_below(replay_from)
    replayed = _segments_from(segments, replay_from)
    info.replayed_batches = _replay(replayed, replay_from, producers, txns)
    txns.rewrite(replayed)
    # Producers whose every batch lies below the log start stay: only expiration forgets
    # a producer (KAFKA-7190). The snapshot is what still knows them.
    return snap


def _segments_from(segments: list[Segment], offset: int) -> list[Segment]:
    """The segment holding ``offset`` and those after it (the first one below it)."""
    bases = [s.base_offset for s in segments]
    return segments[max(bisect.bisect_right(bases, offset) - 1, 0) :]


def _replay(
    segments: list[Segment], from_offset: int, producers: ProducerStateManager, txns: AbortedTxns
) -> int:
    replayed = 0
    for segment in segments:
        start = segment.lookup(from_offset) if from_offset > segment.base_offset else 0
        for pos, header in segment.headers(start):
            if header.base_offset < from_offset:
                continue  # a batch straddling the start (not at a snapshot offset)
            replayed += 1
            if header.is_control:
                if header.producer_id >= 0:
                    _replay_marker(segment, pos, header, producers, txns)
                continue
            if header.producer_id < 0 or header.base_sequence < 0:
                continue  # not idempotent
            # The same update as at append time, from the batch alone (expiration counts
            # from its max timestamp either way), so a replay rebuilds identical state.
            producers.update(
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


def _replay_marker(
    segment: Segment,
    pos: int,
    header: BatchHeader,
    producers: ProducerStateManager,
    txns: AbortedTxns,
) -> None:
    marker = parse_end_txn_marker(segment.read_at(pos, header.size), header)
    if marker is None:
        return
    txns.complete_txn(
        producers,
        header.producer_id,
        header.producer_epoch,
        marker.coordinator_epoch,
        marker.commit,
        header.base_offset,
        header.max_timestamp,
        segment,
    )
