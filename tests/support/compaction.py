"""Helpers for the compaction tests: what a compacted partition holds, read from its
segment files (``broker.tools.dump``'s reader) while the broker renames them."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from broker.tools.dump import iter_partition_batches
from protocol.records import BatchHeader, decode_records

T = TypeVar("T")


@dataclass(frozen=True)
class StoredRecord:
    offset: int
    key: bytes | None
    value: bytes | None
    header: BatchHeader


def _stable(path: Path, read: Callable[[], T]) -> T:
    """``read()`` of a partition directory no swap was under way in: no ``.swap`` file, and
    the same file names before and after (a reader in another process can otherwise see the
    replaced segments gone and the new one not yet named)."""
    for _ in range(500):
        before = sorted(os.listdir(path))
        if not any(n.endswith(".swap") for n in before):
            try:
                result = read()
            except FileNotFoundError:
                result = None
            if result is not None and sorted(os.listdir(path)) == before:
                return result
        time.sleep(0.01)
    raise AssertionError(f"{path}: segment files kept changing")


def read_partition(data_dir: Path, topic: str, partition: int = 0) -> list[StoredRecord]:
    """Every data record of the partition's segments in offset order (markers left out)."""

    def read() -> list[StoredRecord]:
        out: list[StoredRecord] = []
        for header, data in iter_partition_batches(path):
            if header.is_control or not header.records_count:
                continue
            for r in decode_records(data, header):
                offset = header.base_offset + r.offset_delta
                out.append(StoredRecord(offset, r.key, r.value, header))
        return out

    path = data_dir / f"{topic}-{partition}"
    return _stable(path, read)


def batch_headers(data_dir: Path, topic: str, partition: int = 0) -> list[BatchHeader]:
    path = data_dir / f"{topic}-{partition}"
    return _stable(path, lambda: [h for h, _ in iter_partition_batches(path)])


def leftovers(data_dir: Path, topic: str, partition: int = 0) -> list[str]:
    """The cleaner's temporary files in the partition's directory."""
    names = os.listdir(data_dir / f"{topic}-{partition}")
    return [n for n in names if n.endswith((".cleaned", ".swap"))]


def first_segment(data_dir: Path, topic: str, partition: int = 0) -> str:
    names = sorted(n for n in os.listdir(data_dir / f"{topic}-{partition}") if n.endswith(".log"))
    return names[0]
