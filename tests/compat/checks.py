"""Assertions shared by the compat tests, all made against the segment files."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from protocol.records import NO_PRODUCER_ID, decode_records
from tests.support.produce import stored


@dataclass(frozen=True)
class StoredRecord:
    offset: int
    key: bytes | None
    value: bytes | None


def stored_partitions(
    data_dir: Path, topic: str, partitions: int, *, idempotent: bool
) -> dict[int, list[StoredRecord]]:
    """Every stored record per partition, after checking the batches that hold them.

    Offsets run from 0 without gaps. An idempotent producer's batches carry one producer id
    (epoch 0) and, per partition, sequences contiguous from 0, which is what Kafka requires
    of them; a plain producer's batches carry no producer id.
    """
    result: dict[int, list[StoredRecord]] = {}
    producer_ids: set[int] = set()
    for partition in range(partitions):
        records: list[StoredRecord] = []
        for header, data in stored(data_dir, topic, partition):
            assert header.base_offset == len(records), (partition, header)
            producer_ids.add(header.producer_id)
            if idempotent:
                assert header.producer_epoch == 0, header
                assert header.base_sequence == len(records), (partition, header)
            records += [
                StoredRecord(header.base_offset + r.offset_delta, r.key, r.value)
                for r in decode_records(data, header)
            ]
        result[partition] = records
    if idempotent:
        assert len(producer_ids) == 1 and NO_PRODUCER_ID not in producer_ids, producer_ids
    else:
        assert producer_ids <= {NO_PRODUCER_ID}, producer_ids
    return result


def assert_exactly_once_in_order(
    by_partition: dict[int, list[StoredRecord]], sent: list[tuple[bytes, bytes]]
) -> None:
    """Each sent record is stored exactly once, and each partition keeps send order."""
    index: dict[tuple[bytes | None, bytes | None], int] = {r: i for i, r in enumerate(sent)}
    assert len(index) == len(sent), "test data must be unique"
    counts = Counter((r.key, r.value) for records in by_partition.values() for r in records)
    duplicates = {record: n for record, n in counts.items() if n > 1}
    assert duplicates == {}, f"stored more than once: {list(duplicates.items())[:5]}"
    assert set(counts) == set(index), (
        f"missing {len(set(index) - set(counts))}, unexpected {len(set(counts) - set(index))}"
    )
    for partition, records in by_partition.items():
        order = [index[(r.key, r.value)] for r in records]
        assert order == sorted(order), f"partition {partition} is out of send order"
