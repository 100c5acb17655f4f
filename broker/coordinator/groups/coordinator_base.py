"""What the group coordinator's parts share: the fields ``GroupCoordinator`` sets in its
``__init__``, declared once so each part (``group_records``, ``classic_requests``,
``offsets``, ``consumer_requests``) type-checks on its own, and the helpers every group
request uses.

- ``_poke``: wakes the timer task, which sleeps until the earliest deadline, after an
  operation that may have moved one earlier.
- ``_refusal``: Kafka's first checks of every group request.
- ``_live``: the classic group of an id, unless it is Dead (deleted, or replaced by a
  consumer group).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.coordinator.groups.classic import ClassicGroup, GroupSettings, GroupState
from broker.coordinator.groups.consumer_manager import ConsumerGroupManager, Resolution
from broker.runtime.flusher import Flusher
from protocol.errors import ErrorCode
from storage.committed_offsets import CommittedOffsets


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class CoordinatorBase:
    """The fields every part reads (set by ``GroupCoordinator.__init__``; declared for the
    type checker only, so no class attribute stands in for them) and the shared checks."""

    if TYPE_CHECKING:
        settings: GroupSettings
        store: CommittedOffsets
        groups: dict[str, ClassicGroup]
        # A simulated cluster's routing: True when a group's coordinator is not the node
        # the request reached (broker.cluster.routing); None for a single broker.
        elsewhere: Callable[[str], bool] | None
        consumer: ConsumerGroupManager
        closed: bool
        _flusher: Flusher
        # Wall-clock ms: commit timestamps, group state timestamps, offset expiration.
        _clock: Callable[[], int]
        _wake: asyncio.Event
        _compaction: asyncio.Task[None] | None
        # The flush round that will cover the group records written since it was created
        # (None once it started), and, per group, the round its last record waits for.
        _next_flush: asyncio.Task[None] | None
        _group_flushes: dict[str, asyncio.Task[None]]
        # Regex resolutions running on a worker thread.
        _resolutions: set[asyncio.Task[Resolution]]

    def _poke(self) -> None:
        self._wake.set()

    def _refusal(self, group_id: str) -> ErrorCode | None:
        """Kafka's first checks of every group request: a coordinator that is shutting
        down answers NOT_COORDINATOR (the client finds it again), an empty id
        INVALID_GROUP_ID."""
        if self.closed:
            return ErrorCode.NOT_COORDINATOR
        # A simulated cluster: the group's coordinator is another node (the leader of its
        # __consumer_offsets partition), as Kafka's GroupCoordinatorService answers.
        if self.elsewhere is not None and self.elsewhere(group_id):
            return ErrorCode.NOT_COORDINATOR
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        return None

    def _live(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if group is not None and group.state is not GroupState.DEAD else None
