"""The group coordinator's state as the broker stored it: ``__consumer_offsets``'s segment
files in a data directory, replayed as the broker loads them at start
(broker.coordinator.offsets_topic_load). Read-only; safe on a running broker's directory (a
batch still being written at a segment's end is left out)."""

from __future__ import annotations

from pathlib import Path

from broker.coordinator.offsets_topic_load import restore_batches
from broker.tools.dump import iter_partition_batches
from storage.committed_offsets import OffsetsInTopic

OFFSETS = "__consumer_offsets"


def stored_groups(data_dir: Path) -> OffsetsInTopic:
    """Every group's offsets and record, as a broker started on ``data_dir`` would load them."""
    state = OffsetsInTopic(lambda: None)
    partitions = sorted(
        (p for p in Path(data_dir).glob(f"{OFFSETS}-*") if p.is_dir()),
        key=lambda p: int(p.name.rsplit("-", 1)[1]),
    )
    restore_batches(((p.name, list(iter_partition_batches(p))) for p in partitions), state)
    return state
