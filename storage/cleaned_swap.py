"""The swap of cleaned segments into a live log (Kafka's LocalLog.replaceSegments), on the
owner's thread, under the partition log's lock.

The cleaner thread already renamed the new segment ``.swap`` (and fsynced it and the
directory). Here, in Kafka's order: the replaced segments are renamed ``.deleted`` (removed
``file.delete.delay.ms`` later, so a fetch being sent from one completes), then the
``.swap`` names lose their suffix. A crash anywhere in between is finished by the next open
(``log_recovery.complete_swaps``); the directory's fsync is left to the log's next flush,
as a roll's is. Only renames happen here: the loop is held for microseconds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from .aborted_txns import AbortedTxns
from .delayed_delete import DelayedDeletes, remove_segments
from .log_cleaner import SWAP_SUFFIX, CleanedGroup
from .log_config import LogConfig
from .segment import Segment


class SwappingLog(Protocol):
    config: LogConfig
    file_deleter: DelayedDeletes | None
    aborted_txns: AbortedTxns

    @property
    def name(self) -> str: ...


def rename_files(plog: SwappingLog, group: CleanedGroup) -> None:
    """Old segments -> .deleted, then the new one's .swap -> its final names."""
    txns = plog.aborted_txns
    retired: list[Path] = []
    for seg in group.replaced:
        seg.mark_deleted()
        deleted = txns.retire(seg)
        if deleted is not None:
            retired.append(deleted)
    group.segment.change_file_suffixes(SWAP_SUFFIX, "")
    swap_txn = group.txn_swap_path
    if swap_txn.exists():
        os.rename(swap_txn, txns.path_for(group.segment))
    lo = group.replaced[0].base_offset
    hi = group.replaced[-1].next_offset
    txns.entries = sorted(
        [a for a in txns.entries if not lo <= a.last_offset < hi] + group.txn_entries,
        key=lambda a: a.last_offset,
    )
    _schedule_removal(plog, group.replaced, retired)


def _schedule_removal(plog: SwappingLog, doomed: list[Segment], txn_files: list[Path]) -> None:
    what = f"{plog.name}: cleaned segment(s) " + ", ".join(str(s.base_offset) for s in doomed)
    remove_segments(plog.file_deleter, plog.config.file_delete_delay_ms, what, doomed, txn_files)
