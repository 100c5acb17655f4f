"""Consumer groups (classic protocol) and committed offsets.

- ``classic``: one group's membership state machine (Kafka's ClassicGroup), readable alone;
- ``coordinator``: the single owner of all groups and of the committed-offsets store.
"""

from __future__ import annotations

from broker.groups.classic import GroupSettings
from broker.groups.coordinator import GroupCoordinator

__all__ = ["GroupCoordinator", "GroupSettings"]
