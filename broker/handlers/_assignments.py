"""Manual replica assignments (CreateTopics, CreatePartitions).

Kafka's ReplicationControlManager.validateManualPartitionAssignment: an empty list is
refused; then the broker ids are walked in ascending order, so the smallest unregistered
id is the one named, and a repeated id is refused after it. Its last check (a replica
count unlike the topic's other partitions) is the caller's, given the topic's replication
factor: with one registered broker a list longer than one always holds an unknown or a
repeated id first.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def manual_assignment_refusal(broker_ids: Sequence[int], nodes: Collection[int]) -> str | None:
    """The INVALID_REPLICA_ASSIGNMENT message Kafka gives for `broker_ids`, or None."""
    if not broker_ids:
        return "The manual partition assignment includes an empty replica list."
    previous: int | None = None
    for broker in sorted(broker_ids):
        if broker not in nodes:
            return (
                f"The manual partition assignment includes broker {broker}, but no such "
                "broker is registered."
            )
        if broker == previous:
            return f"The manual partition assignment includes the broker {broker} more than once."
        previous = broker
    return None


def replica_count_refusal(broker_ids: Sequence[int], expected: int) -> str | None:
    """A partition whose replica count differs from the topic's others."""
    if len(broker_ids) == expected:
        return None
    return (
        f"The manual partition assignment includes a partition with {len(broker_ids)} "
        f"replica(s), but this is not consistent with previous partitions, which have "
        f"{expected} replica(s)."
    )
