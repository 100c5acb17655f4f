"""Helpers for the compaction tests: what a compacted partition holds, read from its
segment files (``broker.tools.dump``'s reader) while the broker renames them."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from broker.tools.dump import iter_partition_batches
from protocol.records import BatchHeader, decode_records


@dataclass(frozen=True)
class StoredRecord:
    offset: int
    key: bytes | None
    value: bytes | None
    header: BatchHeader


def read_partition(data_dir: Path, topic: str, partition: int = 0) -> list[StoredRecord]:
    """Every data record of the partition's segments in offset order (markers left out).

    A cleaner swap may rename a file between listing and reading: the read is retried."""
    path = data_dir / f"{topic}-{partition}"
    for _ in range(50):
        try:
            out: list[StoredRecord] = []
            for header, data in iter_partition_batches(path):
                if header.is_control or not header.records_count:
                    continue
                for r in decode_records(data, header):
                    out.append(
                        StoredRecord(header.base_offset + r.offset_delta, r.key, r.value, header)
                    )
            return out
        except FileNotFoundError:
            time.sleep(0.01)
    raise AssertionError(f"{path}: segment files kept changing")


def batch_headers(data_dir: Path, topic: str, partition: int = 0) -> list[BatchHeader]:
    path = data_dir / f"{topic}-{partition}"
    for _ in range(50):
        try:
            return [h for h, _ in iter_partition_batches(path)]
        except FileNotFoundError:
            time.sleep(0.01)
    raise AssertionError(f"{path}: segment files kept changing")


def leftovers(data_dir: Path, topic: str, partition: int = 0) -> list[str]:
    """The cleaner's temporary files in the partition's directory."""
    names = os.listdir(data_dir / f"{topic}-{partition}")
    return [n for n in names if n.endswith((".cleaned", ".swap"))]


def first_segment(data_dir: Path, topic: str, partition: int = 0) -> str:
    names = sorted(n for n in os.listdir(data_dir / f"{topic}-{partition}") if n.endswith(".log"))
    return names[0]
