"""Manual replica assignments (CreateTopics, CreatePartitions) on a one-broker cluster.

Kafka's ReplicationControlManager.validateManualPartitionAssignment: an empty list is
refused; then the broker ids are walked in ascending order, so the smallest unregistered
id is the one named, and a repeated id is refused after it. Its last check (a replica
count unlike the topic's other partitions) cannot fire here: with one registered broker a
list longer than one always holds an unknown or a repeated id first, and every partition
has one replica.
"""

from __future__ import annotations

from collections.abc import Sequence


def manual_assignment_refusal(broker_ids: Sequence[int], node_id: int) -> str | None:
    """The INVALID_REPLICA_ASSIGNMENT message Kafka gives for `broker_ids`, or None."""
    if not broker_ids:
        return "The manual partition assignment includes an empty replica list."
    previous: int | None = None
    for broker in sorted(broker_ids):
        if broker != node_id:
            return (
                f"The manual partition assignment includes broker {broker}, but no such "
                "broker is registered."
            )
        if broker == previous:
            return f"The manual partition assignment includes the broker {broker} more than once."
        previous = broker
    return None
