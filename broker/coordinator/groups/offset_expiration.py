"""Which committed offsets of a group have expired: Kafka 4.0's
OffsetMetadataManager.cleanupExpiredOffsets with OffsetExpirationConditionImpl.

- The group says from when retention counts (``ClassicGroup.offset_expiration_base``; a
  KIP-848 consumer group always counts from each commit, as Kafka's
  ConsumerGroup.offsetExpirationCondition), or that nothing may expire now; then nothing
  expires and the group is not left empty.
- Offsets of a topic the group subscribes to never expire (isSubscribedToTopic).
- Any other offset expires when it carries an expire timestamp (OffsetCommit v2-4 with a
  retention_time_ms) and now has reached it, or otherwise when
  ``now - base >= offsets.retention.minutes`` (Kafka compares with >=).

Deviation: Kafka also spares offsets with a pending transactional commit; minikafka has no
TxnOffsetCommit, so there are none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from storage.committed_offsets import CommittedOffset

TopicPartition = tuple[str, int]


class ExpiringGroup(Protocol):
    """What the rule needs of a group (Kafka's Group.offsetExpirationCondition and
    isSubscribedToTopic)."""

    def offset_expiration_base(self) -> Callable[[int], int] | None: ...

    def is_subscribed_to_topic(self, topic: str) -> bool: ...


def is_expired(
    offset: CommittedOffset, base_timestamp_ms: int, now_ms: int, retention_ms: int
) -> bool:
    """OffsetExpirationConditionImpl.isOffsetExpired."""
    if offset.expire_timestamp_ms is not None:
        return now_ms >= offset.expire_timestamp_ms
    return now_ms - base_timestamp_ms >= retention_ms


def expired_offsets(
    group: ExpiringGroup,
    offsets: Mapping[TopicPartition, CommittedOffset],
    now_ms: int,
    retention_ms: int,
) -> tuple[list[TopicPartition], bool]:
    """(the partitions whose offsets expired, whether the group has no offset left)."""
    if not offsets:
        return [], True
    base = group.offset_expiration_base()
    if base is None:
        return [], False
    expired = [
        (topic, partition)
        for (topic, partition), offset in offsets.items()
        if not group.is_subscribed_to_topic(topic)
        and is_expired(offset, base(offset.commit_timestamp_ms), now_ms, retention_ms)
    ]
    return expired, len(expired) == len(offsets)


class ModernGroupExpiration:
    """A KIP-848 consumer group for the rule: retention counts from each commit in every
    state (ConsumerGroup.offsetExpirationCondition), and the topics its members subscribe to
    by name or resolved regex are spared (ModernGroup.isSubscribedToTopic)."""

    def __init__(self, subscribed: set[str]) -> None:
        self._subscribed = subscribed

    def offset_expiration_base(self) -> Callable[[int], int] | None:
        return _from_commit

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self._subscribed


def _from_commit(commit_timestamp_ms: int) -> int:
    return commit_timestamp_ms
