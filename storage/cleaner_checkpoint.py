"""Kafka's ``cleaner-offset-checkpoint`` in the data dir: per compacted partition the offset
the next cleaning starts from (its first dirty offset). Format as Kafka's
OffsetCheckpointFile: "0", a count, then "topic partition offset" lines; written atomically.
An unreadable file counts as empty: every log is then cleaned from its start once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .atomic_file import write_atomic

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"


def read(data_dir: Path) -> dict[tuple[str, int], int]:
    try:
        lines = (data_dir / CLEANER_CHECKPOINT).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    if len(lines) < 2 or lines[0].strip() != "0":
        return {}
    found: dict[tuple[str, int], int] = {}
    for line in lines[2:]:
        parts = line.split()
        if len(parts) != 3:
            return {}
        try:
            found[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            return {}
    return found


def write(data_dir: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    entries = [f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()]
    text = "\n".join(["0", str(len(entries)), *entries]) + "\n"
    write_atomic(data_dir / CLEANER_CHECKPOINT, text.encode("utf-8"))
