"""Consumer groups (classic protocol) and committed offsets.

- ``classic``: one group's membership state machine (Kafka's ClassicGroup), readable alone;
- ``coordinator``: the single owner of all groups and of their store (``__consumer_offsets``), made
  of parts: ``classic_requests``, ``consumer_requests``, ``offsets``, ``group_records``,
  over the fields ``coordinator_base`` declares;
- ``offset_expiration``: which committed offsets have expired (Kafka's
  cleanupExpiredOffsets), for the coordinator's periodic cleanup.
"""

from __future__ import annotations

from broker.coordinator.groups.classic import GroupSettings
from broker.coordinator.groups.coordinator import GroupCoordinator

__all__ = ["GroupCoordinator", "GroupSettings"]
