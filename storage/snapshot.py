"""Producer-state snapshots: ``<20-digit offset>.snapshot`` files in a partition directory.

A snapshot holds the idempotent-producer state of the partition as it was once every batch
below ``offset`` (the log end offset when it was taken) had been appended. Unlike Kafka's
(which keeps only each producer's last batch) it keeps the whole five-batch window, so a retry
of ANY batch still in flight is recognised as a duplicate after a restart. It also records
the recovery point: every batch below it had been fsynced when the snapshot was written, so
crash recovery need only check the batches from there on (Kafka keeps that offset in a
separate recovery-point-offset-checkpoint file).

The byte layout is described in docs/SNAPSHOT_FORMAT.md. Files are written atomically
(tmp -> fsync -> rename -> fsync dir) and read whole: a file that fails any check is corrupt
as a whole, since a partially trusted producer window could wrongly accept a duplicate.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import crc32c

from .atomic_file import fsync_dir, write_atomic, write_atomic_at
from .producer_state import (
    MAX_SEQUENCE,
    NUM_BATCHES_TO_RETAIN,
    BatchMetadata,
    ProducerEntry,
)
from .segment import file_name, parse_file_name

SNAPSHOT_SUFFIX = ".snapshot"
CORRUPT_SUFFIX = ".corrupt"
# Version 2 adds each producer's coordinator epoch and open transaction (Kafka's
# ProducerSnapshot.json v1 carries both); version 1 files are still read.
VERSION = 2
_READABLE_VERSIONS = (1, 2)

_PREFIX = struct.Struct(">hI")  # version, CRC-32C of everything after it
_HEAD = struct.Struct(">qqi")  # offset, recovery point, producer count
_PRODUCER_V1 = struct.Struct(">qhqh")  # producer id, epoch, last timestamp, batch count
# producer id, epoch, last timestamp, coordinator epoch, current txn first offset, batches
_PRODUCER_V2 = struct.Struct(">qhqiqh")
_BATCH = struct.Struct(">iiqiq")  # first seq, last seq, base offset, last offset delta, max ts


class CorruptSnapshotError(ValueError):
    """The file is not a snapshot this version can trust."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    offset: int
    recovery_point: int
    producers: list[ProducerEntry]


def snapshot_path(directory: str | os.PathLike[str], offset: int) -> Path:
    return Path(directory) / file_name(offset, SNAPSHOT_SUFFIX)


def list_snapshots(directory: str | os.PathLike[str]) -> list[int]:
    """Offsets of the snapshot files in ``directory``, oldest first."""
    return sorted(
        offset
        for name in os.listdir(directory)
        if (offset := parse_file_name(name, SNAPSHOT_SUFFIX)) is not None
    )


def encode(offset: int, recovery_point: int, producers: Iterable[ProducerEntry]) -> bytes:
    entries = list(producers)
    body = bytearray(_HEAD.pack(offset, recovery_point, len(entries)))
    for entry in entries:
        batches = list(entry.batches)
        body += _PRODUCER_V2.pack(
            entry.producer_id,
            entry.epoch,
            entry.last_timestamp_ms,
            entry.coordinator_epoch,
            entry.current_txn_first_offset,
            len(batches),
        )
        for b in batches:
            body += _BATCH.pack(
                b.first_seq,
                b.last_seq,
                b.base_offset,
                b.last_offset - b.base_offset,
                b.max_timestamp,
            )
    return _PREFIX.pack(VERSION, crc32c.crc32c(body)) + bytes(body)


def decode(data: bytes, expected_offset: int | None = None) -> Snapshot:
    """Parse and check a whole snapshot; raises CorruptSnapshotError on any doubt."""
    if len(data) < _PREFIX.size + _HEAD.size:
        raise CorruptSnapshotError(f"{len(data)} bytes is too short for a snapshot")
    version, crc = _PREFIX.unpack_from(data)
    if version not in _READABLE_VERSIONS:
        raise CorruptSnapshotError(f"unsupported snapshot version {version}")
    body = memoryview(data)[_PREFIX.size :]
    if crc32c.crc32c(body) != crc:
        raise CorruptSnapshotError("CRC mismatch")
    offset, recovery_point, count = _HEAD.unpack_from(body)
    if expected_offset is not None and offset != expected_offset:
        raise CorruptSnapshotError(f"holds offset {offset}, file name says {expected_offset}")
    if offset < 0 or not 0 <= recovery_point <= offset or count < 0:
        raise CorruptSnapshotError(f"bad header: offset {offset}, recovery point {recovery_point}")
    pos = _HEAD.size
    producers: list[ProducerEntry] = []
    seen: set[int] = set()
    layout = _PRODUCER_V2 if version == 2 else _PRODUCER_V1
    for _ in range(count):
        if pos + layout.size > len(body):
            raise CorruptSnapshotError("truncated producer entry")
        coordinator_epoch, txn_first = -1, -1
        if version == 2:
            pid, epoch, last_ts, coordinator_epoch, txn_first, n = layout.unpack_from(body, pos)
        else:
            pid, epoch, last_ts, n = layout.unpack_from(body, pos)
        pos += layout.size
        # Any int16 epoch is plausible: Produce checks no range (Kafka's neither), so a
        # producer id sent with epoch -1 is stored and must survive a restart.
        if pid < 0 or pid in seen:
            raise CorruptSnapshotError(f"bad producer id {pid}")
        if not 0 <= n <= NUM_BATCHES_TO_RETAIN or pos + n * _BATCH.size > len(body):
            raise CorruptSnapshotError(f"producer {pid}: bad batch count {n}")
        if not -1 <= txn_first < offset:
            raise CorruptSnapshotError(f"producer {pid}: open transaction at {txn_first}")
        seen.add(pid)
        entry = ProducerEntry(
            pid,
            epoch,
            last_ts,
            coordinator_epoch=coordinator_epoch,
            current_txn_first_offset=txn_first,
        )
        previous = -1
        for _ in range(n):
            first_seq, last_seq, base, delta, max_ts = _BATCH.unpack_from(body, pos)
            pos += _BATCH.size
            last = base + delta
            if not (
                0 <= first_seq <= MAX_SEQUENCE
                and 0 <= last_seq <= MAX_SEQUENCE
                and previous < base
                and delta >= 0
                and last < offset
            ):
                raise CorruptSnapshotError(f"producer {pid}: implausible batch at offset {base}")
            previous = last
            entry.batches.append(BatchMetadata(first_seq, last_seq, base, last, max_ts))
        producers.append(entry)
    if pos != len(body):
        raise CorruptSnapshotError(f"{len(body) - pos} bytes after the last producer")
    return Snapshot(offset, recovery_point, producers)


def write_snapshot(
    directory: str | os.PathLike[str],
    offset: int,
    recovery_point: int,
    producers: Iterable[ProducerEntry],
) -> Path:
    """Write ``<offset>.snapshot`` atomically (replacing one with the same offset)."""
    path = snapshot_path(directory, offset)
    write_atomic(path, encode(offset, recovery_point, producers))
    return path


def read_snapshot(directory: str | os.PathLike[str], offset: int) -> Snapshot:
    """Load ``<offset>.snapshot``; raises CorruptSnapshotError or OSError."""
    return decode(snapshot_path(directory, offset).read_bytes(), offset)


def set_aside(directory: str | os.PathLike[str], offset: int) -> Path:
    """Rename a corrupt snapshot out of the way (kept for inspection, never loaded again).

    It stays until the partition is next opened (``remove_set_aside``): Kafka deletes a
    corrupt snapshot at once (ProducerStateManager.loadFromSnapshot); one broker run is
    enough to look at it, and repeated restarts cannot pile them up.
    """
    path = snapshot_path(directory, offset)
    target = path.with_name(path.name + CORRUPT_SUFFIX)
    os.replace(path, target)
    fsync_dir(path.parent)
    return target


def remove_set_aside(directory: str | os.PathLike[str]) -> int:
    """Delete the snapshots an earlier open set aside as corrupt; returns how many."""
    names = [n for n in os.listdir(directory) if n.endswith(SNAPSHOT_SUFFIX + CORRUPT_SUFFIX)]
    for name in names:
        os.unlink(Path(directory) / name)
    if names:
        fsync_dir(directory)
    return len(names)


def delete_snapshots(directory: str | os.PathLike[str], offsets: Iterable[int]) -> int:
    """Remove the given snapshots; the removals are made durable so none comes back."""
    removed = 0
    for offset in offsets:
        path = snapshot_path(directory, offset)
        if path.exists():
            path.unlink(missing_ok=True)
            removed += 1
    if removed:
        fsync_dir(directory)
    return removed


def write_snapshot_at(dir_fd: int, offset: int, data: bytes) -> None:
    """Write encoded snapshot ``data`` as ``<offset>.snapshot`` in the directory ``dir_fd``."""
    write_atomic_at(dir_fd, file_name(offset, SNAPSHOT_SUFFIX), data)


def prune_at(dir_fd: int, log_start_offset: int, keep: int) -> int:
    """In the directory ``dir_fd``: remove the snapshots below ``log_start_offset`` and all
    but the newest ``keep`` of the rest, durably; returns how many went."""
    offsets = sorted(
        offset
        for name in os.listdir(dir_fd)
        if (offset := parse_file_name(name, SNAPSHOT_SUFFIX)) is not None
    )
    kept = [o for o in offsets if o >= log_start_offset]
    doomed = [o for o in offsets if o < log_start_offset] + kept[:-keep]
    for offset in doomed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(file_name(offset, SNAPSHOT_SUFFIX), dir_fd=dir_fd)
    if doomed:
        os.fsync(dir_fd)
    return len(doomed)
