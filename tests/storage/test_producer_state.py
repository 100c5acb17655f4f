"""KAFKA_NOTES §5, rule by rule: duplicate, fenced epoch, new epoch, unknown producer, sequence."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from protocol.errors import ErrorCode
from storage.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    BatchMetadata,
    ProducerStateManager,
    SequenceCheck,
    next_sequence,
)

NONE = ErrorCode.NONE
OOO = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
FENCED = ErrorCode.INVALID_PRODUCER_EPOCH
MAX = 2147483647
PID = 1000


def _meta(first: int, last: int, base_offset: int) -> BatchMetadata:
    return BatchMetadata(first, last, base_offset, base_offset + ((last - first) & MAX), 5000)


def _manager(epoch: int, seq_ranges: list[tuple[int, int]]) -> ProducerStateManager:
    """A producer that appended ``seq_ranges`` at ``epoch``; batch i starts at offset 100*i."""
    m = ProducerStateManager()
    for i, (first, last) in enumerate(seq_ranges):
        meta = _meta(first, last, 100 * i)
        m.update(PID, epoch, first, last, meta.base_offset, meta.last_offset, 5000)
    return m


FIVE = [(0, 9), (10, 19), (20, 29), (30, 39), (40, 49)]
SIX = [(0, 9), *FIVE[1:], (50, 59)]


@dataclass(frozen=True)
class Case:
    name: str
    history: list[tuple[int, int]]  # appended at epoch 3 (empty: unknown producer)
    epoch: int
    first: int
    last: int
    error: ErrorCode
    duplicate_of: int | None = None  # index into history


CASES = [
    # Rule 4: unknown producer id -> any sequence (KIP-360).
    Case("unknown-seq-0", [], 0, 0, 4, NONE),
    Case("unknown-seq-mid", [], 7, 1234, 1240, NONE),
    Case("unknown-seq-max", [], 0, MAX, MAX, NONE),
    # Rule 5: same epoch, must follow the last sequence.
    Case("next-in-sequence", FIVE, 3, 50, 50, NONE),
    Case("gap", FIVE, 3, 51, 55, OOO),
    Case("same-epoch-restart-at-0", FIVE, 3, 0, 4, OOO),
    Case("behind-last", FIVE, 3, 45, 49, OOO),
    # Rule 1: duplicate of each cached batch -> original metadata.
    *[
        Case(f"duplicate-of-cached-{i}", FIVE, 3, f, last, NONE, i)
        for i, (f, last) in enumerate(FIVE)
    ],
    # Older than the 5 cached batches: lands in rule 5.
    Case("sixth-oldest-retry", SIX, 3, 0, 9, OOO),
    # Overlap without an exact match: rule 5.
    Case("overlap-same-first", FIVE, 3, 40, 45, OOO),
    Case("overlap-same-last", FIVE, 3, 42, 49, OOO),
    Case("overlap-longer", FIVE, 3, 40, 55, OOO),
    Case("overlap-spanning-two", FIVE, 3, 35, 44, OOO),
    # Rule 2: lower epoch fenced, even when the sequence would match or start at 0.
    Case("lower-epoch", FIVE, 2, 50, 50, FENCED),
    Case("lower-epoch-same-seqs-as-cached", FIVE, 2, 40, 49, FENCED),
    Case("lower-epoch-seq-0", FIVE, 0, 0, 0, FENCED),
    # Rule 3: higher epoch must restart at 0.
    Case("higher-epoch-seq-0", FIVE, 4, 0, 9, NONE),
    Case("higher-epoch-much-higher", FIVE, 100, 0, 0, NONE),
    Case("higher-epoch-continuing-seq", FIVE, 4, 50, 59, OOO),
    Case("higher-epoch-cached-seqs-not-duplicate", FIVE, 4, 40, 49, OOO),
    # Wrap: after 2147483647 comes 0.
    Case("wrap-to-zero", [(MAX - 9, MAX)], 3, 0, 4, NONE),
    Case("wrap-not-to-max-plus-one", [(MAX - 9, MAX)], 3, 1, 4, OOO),
    Case("batch-spanning-wrap-then-next", [(MAX - 1, 2)], 3, 3, 7, NONE),
    Case("batch-spanning-wrap-duplicate", [(MAX - 1, 2)], 3, MAX - 1, 2, NONE, 0),
    Case("after-zero-ending", [(MAX - 4, MAX), (0, 0)], 3, 1, 1, NONE),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule(case: Case) -> None:
    m = _manager(3, case.history)
    before = repr(m.get(PID))
    result = m.check(PID, case.epoch, case.first, case.last)
    if case.duplicate_of is None:
        assert result == SequenceCheck(case.error, None)
    else:
        first, last = case.history[case.duplicate_of]
        assert result == SequenceCheck(NONE, _meta(first, last, 100 * case.duplicate_of))
    assert repr(m.get(PID)) == before  # check never mutates


def test_next_sequence_wraps() -> None:
    assert next_sequence(0) == 1
    assert next_sequence(MAX - 1) == MAX
    assert next_sequence(MAX) == 0


def _check_and_update(
    m: ProducerStateManager, epoch: int, first: int, last: int, offset: int
) -> SequenceCheck:
    result = m.check(PID, epoch, first, last)
    if result.error == NONE and result.duplicate is None:
        m.update(PID, epoch, first, last, offset, offset + last - first, 7000)
    return result


def test_batches_checked_sequentially_against_updated_state() -> None:
    m = ProducerStateManager()
    steps = [
        ((0, 0, 4), NONE, None),
        ((0, 5, 9), NONE, None),
        ((0, 10, 14), NONE, None),
        ((0, 5, 9), NONE, 5),  # retry of the second: deduplicated with its original offset
        ((0, 20, 24), OOO, None),  # a lost batch in the middle
        ((0, 15, 19), NONE, None),  # the client resends in order
        ((0, 20, 24), NONE, None),
        ((1, 3, 3), OOO, None),  # new epoch must restart at 0
        ((1, 0, 0), NONE, None),
        ((0, 25, 25), FENCED, None),  # the old epoch is fenced now
        ((1, 0, 0), NONE, 25),  # duplicate under the new epoch
        ((1, 1, 1), NONE, None),
    ]
    offset = 0
    for (epoch, first, last), error, dup_offset in steps:
        result = _check_and_update(m, epoch, first, last, offset)
        assert result.error == error, (epoch, first, last)
        if dup_offset is None:
            assert result.duplicate is None
            if error == NONE:
                offset += last - first + 1
        else:
            assert result.duplicate is not None
            assert result.duplicate.base_offset == dup_offset


def test_update_keeps_last_five_and_epoch_change_clears() -> None:
    m = ProducerStateManager()
    for i in range(7):
        m.update(PID, 0, i, i, i, i, 100 + i)
    entry = m.get(PID)
    assert entry is not None
    assert len(entry.batches) == NUM_BATCHES_TO_RETAIN
    assert [b.first_seq for b in entry.batches] == [2, 3, 4, 5, 6]
    assert (entry.last_seq, entry.last_offset, entry.last_timestamp_ms) == (6, 6, 106)
    m.update(PID, 1, 0, 2, 7, 9, 200)
    assert entry.epoch == 1
    assert list(entry.batches) == [BatchMetadata(0, 2, 7, 9, 200)]
    # The old epoch's batches no longer count as duplicates.
    assert m.check(PID, 0, 6, 6).error == FENCED


def test_entries_get_and_expiration_by_the_last_batch_max_timestamp() -> None:
    m = ProducerStateManager()
    assert m.get(1) is None
    m.update(1, 0, 0, 0, 0, 0, 1_000)
    m.update(2, 0, 0, 0, 1, 4, 5_000)
    m.update(3, 0, 0, 0, 5, 5, 9_000)
    assert sorted(e.producer_id for e in m.entries()) == [1, 2, 3]
    # producer.id.expiration.ms counts from the last batch's max timestamp, the clock Kafka's
    # ProducerStateEntry.lastTimestamp keeps (and a replay of the log can rebuild).
    assert [e.last_timestamp_ms for e in m.entries()] == [1_000, 5_000, 9_000]
    assert m.remove_expired(now_ms=10_000, expiration_ms=5_000) == 2
    assert [e.producer_id for e in m.entries()] == [3]
    # Once expired, the producer is unknown again: any sequence is accepted.
    assert m.check(1, 0, 77, 77) == SequenceCheck(NONE, None)
