"""A share group's members and their assignment.

As Kafka's GroupMetadataManager.shareGroupHeartbeat with the share groups' SimpleAssignor
(broker.coordinator.share.assignor: partitions balanced among the members, each shared by
more than one only when members outnumber partitions): a member joins with epoch 0 and
its subscription, leaves with -1. The group
epoch moves when members, subscriptions or the subscribed topics' partitions change; the
assignment epoch follows it at once (the assignment is computed in the heartbeat), and a
member's epoch is the assignment epoch it was last told about. State: Empty without
members, else Stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# topic id -> partition indexes
Assignment = dict[bytes, list[int]]

ASSIGNOR_NAME = "simple"


@dataclass(slots=True)
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None = None
    subscribed: tuple[str, ...] = ()
    member_epoch: int = 0
    assignment: Assignment = field(default_factory=dict)
    # Monotonic ms after which the member is fenced (group.share.session.timeout.ms).
    deadline_ms: int = 0


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    # The assignor's last answer: member id -> its (topic id, partition)s (Kafka's target
    # assignment); a member's assignment moves to it at its next heartbeat.
    target: dict[str, set[tuple[bytes, int]]] = field(default_factory=dict)
    # (topic id, partition) initialized for the group: assigned to a member or altered
    # (Kafka's ShareGroupStatePartitionMetadata), kept until their offsets are deleted.
    initialized: set[tuple[bytes, int]] = field(default_factory=set)

    @property
    def state(self) -> str:
        return "Empty" if not self.members else "Stable"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed}
