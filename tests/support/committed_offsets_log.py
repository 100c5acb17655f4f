"""The group coordinator's records as the broker stored them, read from
``__consumer_offsets``'s segment files independently of the broker's reader: each record's
kind (from Kafka's key type and whether it is a tombstone) and group, topic, partition.
What a test needs to see commits and tombstones on disk."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from broker.tools.dump import iter_partition_batches
from protocol import coordinator_records as cr
from protocol.records import decode_records

OFFSETS = "__consumer_offsets"


@dataclass(frozen=True, slots=True)
class LogRecord:
    kind: str  # offset, offset-tombstone, group, group-tombstone, consumer-group
    group: str
    topic: str | None = None
    partition: int | None = None


def read_log(data_dir: Path) -> list[LogRecord]:
    """Every committed (non-transactional) record of every partition, in offset order per
    partition (a group's records are all in one partition)."""
    records: list[LogRecord] = []
    partitions = sorted(
        (p for p in Path(data_dir).glob(f"{OFFSETS}-*") if p.is_dir()),
        key=lambda p: int(p.name.rsplit("-", 1)[1]),
    )
    for path in partitions:
        for header, data in iter_partition_batches(path):
            if header.is_control or header.is_transactional:
                continue
            for r in decode_records(data, header):
                assert r.key is not None
                kind, key = cr.decode_key(r.key)
                gone = r.value is None
                if kind == cr.OFFSET_COMMIT:
                    name = "offset-tombstone" if gone else "offset"
                    records.append(LogRecord(name, key.group, key.topic, key.partition))
                elif kind == cr.GROUP_METADATA:
                    records.append(LogRecord("group-tombstone" if gone else "group", key.group))
                else:
                    records.append(LogRecord("consumer-group", key.group_id))
    return records
