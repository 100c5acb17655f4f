"""When one partition log snapshots its producer state, and which snapshots it keeps.

(The file format is ``snapshot``; restoring one at open is ``log_recovery``.)

- ``ProducerSnapshots.take``: a snapshot at the log end written in line, unless the newest
  file already describes this log end, producer state and recovery point.
- ``prepare`` / ``PendingSnapshot.write`` / ``finish``: the periodic one in two halves,
  encoded on the owner's thread (the producer state of that moment), written on a worker
  thread into the directory as opened then, settled on the owner's thread.
- ``at_roll``: Kafka snapshots producer state at each roll; handed to the log's
  ``snapshot_writer`` when one is set.
- ``before_log_start_moves``: a snapshot at or above a new log start is on disk before the
  start moves, so the producers retention or DeleteRecords keeps (KAFKA-7190) survive any
  restart.
- ``delete_old``: those below the log start go, and all but the newest few of the rest.
- ``restored``: at open, the snapshot ``log_recovery`` restored counts as on disk (and as
  the newest file when nothing was replayed after it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from . import snapshot as snapshots
from . import txn_index
from .aborted_txns import AbortedTxns
from .producer_state import ProducerStateManager
from .transient import out_of_descriptors

# The partition log's lines keep its logger name wherever its code sits.
log = logging.getLogger("storage.partition_log")

# Snapshots kept besides those retention removes: the newest is normally enough; older ones
# are the fallback when it turns out corrupt (Kafka keeps one per segment instead).
SNAPSHOTS_TO_KEEP = 3


class SnapshotOwner(Protocol):
    """The partition log, as its snapshots see it."""

    path: Path
    offline: str | None

    @property
    def name(self) -> str: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def recovery_point(self) -> int: ...
    def finish_snapshot(self, pending: PendingSnapshot) -> None: ...


class PendingSnapshot:
    """A periodic snapshot encoded on the owner's thread, to be written on a worker thread
    into the partition directory as it was opened then (``dir_fd``): a topic deletion that
    renames the directory meanwhile cannot make it land in a re-created partition."""

    def __init__(
        self,
        plog: SnapshotOwner,
        dir_fd: int,
        offset: int,
        data: bytes,
        txn_paths: set[Path],
        previous_state: tuple[int, int, int] | None,
    ) -> None:
        self.plog = plog
        self.dir_fd = dir_fd
        self.offset = offset
        self.data = data
        self.txn_paths = txn_paths
        self.previous_state = previous_state
        self.done = threading.Event()
        self.error: OSError | None = None
        self.settled = False
        self._claim = threading.Lock()
        self._claimed = False

    def claim(self) -> bool:
        """True for the one caller that is to write it (a worker, or an owner that would
        otherwise wait for a worker not yet started)."""
        with self._claim:
            if self._claimed:
                return False
            self._claimed = True
            return True

    def write(self) -> None:
        """On a worker thread: .txnindex fsyncs, the snapshot file, old snapshots pruned.
        Does nothing if the owner has already written it in line (``claim``)."""
        if self.claim():
            self.write_claimed()

    def write_claimed(self) -> None:
        try:
            for path in self.txn_paths:
                txn_index.fsync_file(path)
            snapshots.write_snapshot_at(self.dir_fd, self.offset, self.data)
            snapshots.prune_at(self.dir_fd, self.plog.log_start_offset, SNAPSHOTS_TO_KEEP)
        except OSError as exc:
            self.error = exc
            raise
        finally:
            os.close(self.dir_fd)
            self.done.set()


class ProducerSnapshots:
    """The snapshot bookkeeping of one partition log (its owner)."""

    def __init__(
        self, owner: SnapshotOwner, producers: ProducerStateManager, txns: AbortedTxns
    ) -> None:
        self._log = owner
        self._producers = producers
        self._txns = txns
        # (log end, producer changes, recovery point) the newest snapshot file describes.
        self.state: tuple[int, int, int] | None = None
        # The periodic snapshot being written on a worker thread (prepare).
        self.pending: PendingSnapshot | None = None
        # The highest offset of a snapshot known to be on disk (written and fsynced, or
        # found at open): the log start may move up to it without writing another.
        self.durable: int | None = None

    def truncated(self, snap: snapshots.Snapshot | None, replayed: int) -> None:
        """After the log was truncated: producer state came from ``snap`` (None: the log
        start) and ``replayed`` batches; what was durable above the new end is gone."""
        self._settle_pending(wait=True)
        self.durable = None
        self.state = None
        if snap is not None:
            self.restored(snap, replayed)

    def restored(self, snap: snapshots.Snapshot, replayed: int) -> None:
        """At open: producer state came from ``snap``, then ``replayed`` batches after it."""
        self.durable = snap.offset
        if replayed == 0 and snap.offset == self._log.log_end_offset:
            # The file on disk already says all this: no need to write it again.
            self.state = (snap.offset, self._producers.changes, snap.recovery_point)

    def _current_state(self) -> tuple[int, int, int]:
        return self._log.log_end_offset, self._producers.changes, self._log.recovery_point

    def take(self) -> bool:
        """Snapshot producer state at the log end; False if that snapshot already exists."""
        self._settle_pending(wait=True)
        state = self._current_state()
        if state == self.state:
            return False
        if state[0] == self._log.log_start_offset and not len(self._producers):
            return False  # an empty log with no producers: nothing to restore
        offset, _, recovery_point = state
        # The snapshot vouches for the aborted-transaction entries below its offset.
        self._txns.sync()
        snapshots.write_snapshot(self._log.path, offset, recovery_point, self._producers.entries())
        self.state = state
        self.note_durable(offset)
        self.delete_old()
        return True

    def prepare(self) -> PendingSnapshot | None:
        """The periodic snapshot in two halves: decided and encoded here on the owner's
        thread, so it holds the producer state of this moment; written (with the .txnindex
        fsyncs it vouches for, and the pruning of old snapshots) by ``PendingSnapshot.write``
        on a worker thread, then settled by ``finish``. None when nothing changed or a write
        is still in flight. ``take`` first waits for one in flight, so snapshots of one
        partition never overlap.
        """
        self._settle_pending(wait=False)
        if self.pending is not None or self._log.offline is not None:
            return None
        state = self._current_state()
        if state == self.state:
            return None
        if state[0] == self._log.log_start_offset and not len(self._producers):
            return None
        offset, _, recovery_point = state
        data = snapshots.encode(offset, recovery_point, self._producers.entries())
        dir_fd = os.open(self._log.path, os.O_RDONLY | os.O_DIRECTORY)
        dirty = self._txns.take_dirty()
        pending = PendingSnapshot(self._log, dir_fd, offset, data, dirty, self.state)
        # Optimistic: a failed write puts the previous state back (finish), so the next
        # round tries again.
        self.state = state
        self.pending = pending
        return pending

    def finish(self, pending: PendingSnapshot) -> None:
        """On the owner's thread once ``pending.write`` has ended (idempotent)."""
        if pending.settled:
            return
        pending.settled = True
        if self.pending is pending:
            self.pending = None
        if pending.error is not None:
            self.state = pending.previous_state
            self._txns.dirty |= pending.txn_paths
        else:
            self.note_durable(pending.offset)

    def note_durable(self, offset: int) -> None:
        if self.durable is None or offset > self.durable:
            self.durable = offset

    def _settle_pending(self, wait: bool) -> None:
        pending = self.pending
        if pending is None:
            return
        if wait:
            if pending.claim():
                # Its worker has not started (the pool is busy): write it here rather than
                # wait behind the pool's other work.
                with contextlib.suppress(OSError):
                    pending.write_claimed()
            pending.done.wait()
        if pending.done.is_set():
            self.finish(pending)

    def at_roll(self, writer: Callable[[PendingSnapshot], None] | None) -> None:
        """Kafka snapshots producer state at each roll. With a ``writer`` the file is written
        on a worker thread (its fsyncs would stall the append that rolled); should that write
        never happen (a crash first), recovery starts from an older snapshot and replays
        more, as after any crash."""
        try:
            if writer is None or self.pending is not None:
                self.take()  # waits for one in flight: the roll's own is not skipped
                return
            pending = self.prepare()
        except OSError as exc:
            if not out_of_descriptors(exc):
                raise
            # The roll stands; the next periodic snapshot catches up (a crash meanwhile
            # replays from an older one).
            log.warning("%s: no producer-state snapshot at this roll (%s)", self._log.name, exc)
            return
        if pending is not None:
            writer(pending)

    def before_log_start_moves(self, new_start: int) -> None:
        """Make sure a snapshot at or above ``new_start`` holds every producer before the
        start moves there.

        Kafka keeps the producers whose records retention or DeleteRecords removes
        (KAFKA-7190: ProducerStateManager.onLogStartOffsetIncremented forgets none) but
        deletes the snapshots below the log start (deleteSnapshotsBefore), so an unclean
        restart that must replay from the log start loses them. Beyond Kafka, this snapshot
        (at the log end, so never below the new start) carries them across any restart.
        Written before anything is deleted: if it fails, the log start does not move.

        A snapshot already on disk at or above ``new_start`` does as well (the retention
        pass has one written on a worker thread first): every producer with a batch below
        the new start is in it, and the batches after it stay in the log and are replayed
        after it. Snapshots at or above the log start are pruned only when newer ones exist,
        so it or a newer one is still there after any restart.
        """
        if self.durable is not None and self.durable >= new_start:
            return
        self.take()

    def delete_old(self) -> None:
        """Drop snapshots below the log start, and all but the newest few of the rest."""
        path, log_start = self._log.path, self._log.log_start_offset
        offsets = snapshots.list_snapshots(path)
        below = [o for o in offsets if o < log_start]
        kept = [o for o in offsets if o >= log_start]
        snapshots.delete_snapshots(path, below + kept[:-SNAPSHOTS_TO_KEEP])
