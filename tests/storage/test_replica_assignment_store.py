"""A simulated cluster's replica assignments file: round trip, durability, damage ignored."""

from __future__ import annotations

from pathlib import Path

from storage.replica_assignment_store import (
    FILE_NAME,
    ReplicaAssignmentStore,
    TopicAssignment,
    decode,
    encode,
)

A, B = b"\x01" * 16, b"\x02" * 16


def test_assignments_round_trip_through_the_file(tmp_path: Path) -> None:
    store = ReplicaAssignmentStore.open(tmp_path)
    assert store.all() == {} and not (tmp_path / FILE_NAME).exists()
    store.put(A, TopicAssignment(2))
    store.put(B, TopicAssignment(3, {0: (3, 1, 2), 1: (1, 2, 3)}))
    again = ReplicaAssignmentStore.open(tmp_path)
    assert again.all() == {
        A: TopicAssignment(2, {}),
        B: TopicAssignment(3, {0: (3, 1, 2), 1: (1, 2, 3)}),
    }
    assert decode(encode(again.all())) == again.all()


def test_deleted_topics_are_forgotten(tmp_path: Path) -> None:
    store = ReplicaAssignmentStore.open(tmp_path)
    store.put(A, TopicAssignment(2))
    store.put(B, TopicAssignment(1))
    store.delete(A)
    assert ReplicaAssignmentStore.open(tmp_path).all() == {B: TopicAssignment(1)}
    assert store.remove_except([A]) == 1
    assert ReplicaAssignmentStore.open(tmp_path).all() == {}


def test_a_damaged_file_is_ignored_with_the_reason(tmp_path: Path) -> None:
    store = ReplicaAssignmentStore.open(tmp_path)
    store.put(A, TopicAssignment(2))
    path = tmp_path / FILE_NAME
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    damaged = ReplicaAssignmentStore.open(tmp_path)
    assert damaged.all() == {} and damaged.problem
