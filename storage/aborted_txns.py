"""The aborted transactions of one partition log, each in the ``.txnindex`` of its segment.

- ``AbortedTxns.entries``: every aborted transaction of the log in marker order; each sits in
  the ``.txnindex`` of the segment holding its marker (``last_offset``), as Kafka's
  LogSegment.updateTxnIndex puts it (file format: ``txn_index``).
- ``complete_txn``: one COMMIT/ABORT marker applied, appended or replayed.
- ``load``, ``keep_below`` and ``rewrite``: recovery reads the files, then rebuilds the
  entries of the batches it replays (LogSegment.recover rebuilds the txn index).
- ``dirty``, ``sync``, ``take_dirty``: files appended to since the last producer-state
  snapshot, fsynced before the next one (the snapshot vouches for the entries below it).
- ``forget_before`` and ``retire``: segments leaving the log take their entries along.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import txn_index
from .producer_state import ProducerStateManager
from .segment import DELETED_SUFFIX, Segment
from .txn_index import TXN_INDEX_SUFFIX, AbortedTxn


class AbortedTxns:
    def __init__(self, path: Path) -> None:
        self.path = path
        # Every aborted transaction of the log, marker order; each sits in the .txnindex of
        # the segment holding its marker (last_offset).
        self.entries: list[AbortedTxn] = []
        # .txnindex files appended to since the last snapshot, fsynced before the next one.
        self.dirty: set[Path] = set()

    def path_for(self, segment: Segment) -> Path:
        return self.path / f"{segment.base_offset:020d}{TXN_INDEX_SUFFIX}"

    def load(self, segments: list[Segment]) -> None:
        self.entries = [
            entry
            for segment in segments
            for entry in txn_index.read_entries(self.path_for(segment))
        ]

    def keep_below(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset`` (about to be replayed)."""
        self.entries = [a for a in self.entries if a.last_offset < offset]

    def rewrite(self, segments: list[Segment]) -> None:
        """Make the files of ``segments`` hold the entries in memory."""
        for segment in segments:
            path = self.path_for(segment)
            mine = [
                a
                for a in self.entries
                if segment.base_offset <= a.last_offset < segment.next_offset
            ]
            if txn_index.read_entries(path) != mine or (not mine and path.exists()):
                txn_index.write_entries(path, mine)
                self.dirty.add(path)

    def complete_txn(
        self,
        producers: ProducerStateManager,
        producer_id: int,
        epoch: int,
        coordinator_epoch: int,
        commit: bool,
        marker_offset: int,
        timestamp_ms: int,
        segment: Segment,
    ) -> None:
        """ProducerStateManager.completeTxn + LogSegment.updateTxnIndex for one marker."""
        first = producers.end_txn(producer_id, epoch, coordinator_epoch, timestamp_ms)
        if first < 0 or commit:
            return
        # ProducerStateManager.lastStableOffset(completedTxn): the earliest other open
        # transaction's first offset, else the offset after the marker.
        other = producers.first_unstable_offset_excluding(producer_id)
        entry = AbortedTxn(
            producer_id, first, marker_offset, other if other is not None else marker_offset + 1
        )
        self.entries.append(entry)
        path = self.path_for(segment)
        txn_index.append_entry(path, entry)
        self.dirty.add(path)

    def sync(self) -> None:
        dirty, self.dirty = self.dirty, set()
        for path in dirty:
            txn_index.fsync_file(path)

    def take_dirty(self) -> set[Path]:
        """The files to fsync, handed to a snapshot written elsewhere (put back on failure)."""
        dirty, self.dirty = self.dirty, set()
        return dirty

    def forget_before(self, first_kept: int) -> None:
        """Drop the entries whose marker lies below ``first_kept`` (their segments go)."""
        self.entries = [a for a in self.entries if a.last_offset >= first_kept]

    def retire(self, segment: Segment) -> Path | None:
        """Rename the segment's ``.txnindex`` ``*.deleted`` (with its segment's files);
        returns the new name, None when the segment has none."""
        path = self.path_for(segment)
        self.dirty.discard(path)
        if not path.exists():
            return None
        deleted = path.with_name(path.name + DELETED_SUFFIX)
        os.rename(path, deleted)
        return deleted
