"""Kafka's transaction index: ``<base offset>.txnindex`` next to a segment, aborts only.

Format as Kafka's AbortedTxn / TransactionIndex (storage/internals/log): 34-byte entries of
int16 version 0, int64 producer id, int64 first offset (the transaction's first data batch),
int64 last offset (its ABORT marker) and int64 last stable offset (the LSO when the marker
was written). An entry goes to the index of the segment the marker landed in
(LogSegment.updateTxnIndex); the file is created with its first entry. Read Committed
fetches answer ``aborted_transactions`` from these entries (LocalLog.addAbortedTransactions).

A torn tail (fewer than 34 bytes) or an entry with another version ends what is trusted:
recovery rebuilds the entries of every batch it replays anyway.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

TXN_INDEX_SUFFIX = ".txnindex"
VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )


def read_entries(path: Path) -> list[AbortedTxn]:
    """Every whole, version-0 entry of the file; [] when it does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    entries: list[AbortedTxn] = []
    for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != VERSION:
            break
        entries.append(AbortedTxn(pid, first, last, lso))
    return entries


def write_entries(path: Path, entries: list[AbortedTxn]) -> None:
    """Replace the file's content (recovery); no file when there is no entry."""
    if not entries:
        path.unlink(missing_ok=True)
        return
    path.write_bytes(b"".join(e.encode() for e in entries))


def append_entry(path: Path, entry: AbortedTxn) -> None:
    """Add one entry; made durable with the segment (``fsync_file``) before a snapshot
    vouches for the offsets it covers."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, entry.encode())
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
