"""Consumer groups (classic protocol) and committed offsets.

- ``classic``: one group's membership state machine (Kafka's ClassicGroup), readable alone;
- ``coordinator``: the single owner of all groups and of the committed-offsets store;
- ``offset_expiration``: which committed offsets have expired (Kafka's
  cleanupExpiredOffsets), for the coordinator's periodic cleanup.
"""

from __future__ import annotations

from broker.coordinator.groups.classic import GroupSettings
from broker.coordinator.groups.coordinator import GroupCoordinator

__all__ = ["GroupCoordinator", "GroupSettings"]
