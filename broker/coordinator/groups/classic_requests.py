"""The classic protocol's membership requests at the coordinator: JoinGroup, SyncGroup,
Heartbeat and LeaveGroup.

- A classic group answers from its state machine (``classic``). JoinGroup and SyncGroup wait
  until the rebalance gives their answer; a successful one then waits for the group record's
  flush round (``group_records``), as Kafka answers only once the record is written.
- A group id held by a KIP-848 consumer group with members is served from it at once
  (``consumer_classic``: Kafka's classicGroupJoinToConsumerGroup and its siblings). An Empty
  consumer group gives way to a classic group on JoinGroup, keeping its offsets (Kafka's
  maybeDeleteEmptyConsumerGroup).
"""

from __future__ import annotations

import asyncio
import logging

from broker.coordinator.groups import consumer_classic
from broker.coordinator.groups.classic import JoinRequest, JoinResult, SyncResult
from broker.coordinator.groups.coordinator_base import monotonic_ms
from broker.coordinator.groups.group_records import GroupRecords
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class ClassicRequests(GroupRecords):
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup."""

    async def join(self, group_id: str, req: JoinRequest) -> JoinResult:
        refused = self._refusal(group_id)
        if refused is not None:
            return JoinResult(refused, req.member_id)
        if not (
            self.settings.min_session_timeout_ms
            <= req.session_timeout_ms
            <= self.settings.max_session_timeout_ms
        ):
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id)
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            if not consumer_group.is_empty():
                # classicGroupJoinToConsumerGroup: answered at once, once its record is
                # written.
                joined = consumer_classic.join(self.consumer, consumer_group, req, monotonic_ms())
                self._poke()
                if joined.error == ErrorCode.NONE:
                    await self._durable(group_id)
                return joined
            self._drop_empty_consumer_group(group_id)
        group = self._live(group_id)
        if group is None:
            if req.member_id != "":
                # Kafka: a known member id for a group that does not exist.
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id)
            group = self.groups[group_id] = self._new_group(group_id, None)
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        group.join(req, waiter, monotonic_ms())
        self._poke()
        result = await waiter
        if result.error == ErrorCode.NONE:
            await self._durable(group_id)
        return result

    async def sync(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        refused = self._refusal(group_id)
        if refused is not None:
            return SyncResult(refused)
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            synced = consumer_classic.sync(
                self.consumer,
                consumer_group,
                member_id,
                group_instance_id,
                generation_id,
                protocol_type,
                protocol_name,
                monotonic_ms(),
            )
            self._poke()
            return synced
        group = self._live(group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        waiter: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        group.sync(
            member_id,
            group_instance_id,
            generation_id,
            protocol_type,
            protocol_name,
            assignments,
            waiter,
            monotonic_ms(),
        )
        self._poke()
        result = await waiter
        if result.error == ErrorCode.NONE:
            await self._durable(group_id)
        return result

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> int:
        refused = self._refusal(group_id)
        if refused is not None:
            return refused
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            answer = consumer_classic.heartbeat(
                self.consumer,
                consumer_group,
                member_id,
                group_instance_id,
                generation_id,
                monotonic_ms(),
            )
            self._poke()
            return answer
        group = self._live(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = group.heartbeat(member_id, group_instance_id, generation_id, monotonic_ms())
        self._poke()
        return error

    def leave(
        self, group_id: str, members: list[tuple[str, str | None, str | None]]
    ) -> tuple[int, list[int]]:
        """(top-level error, per-member errors) for (member_id, instance_id, reason) items."""
        refused = self._refusal(group_id)
        if refused is not None:
            return refused, []
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            errors = consumer_classic.leave(self.consumer, consumer_group, members)
            self._poke()
            return ErrorCode.NONE, errors
        group = self._live(group_id)
        if group is None:
            # Kafka 4.0 (GroupCoordinatorService.leaveGroup): "group not found" becomes
            # UNKNOWN_MEMBER_ID for each member, not a top-level error.
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        now = monotonic_ms()
        errors = [
            group.leave(member_id, instance_id, now, f"left the group ({reason or 'no reason'})")
            for member_id, instance_id, reason in members
        ]
        self._poke()
        return ErrorCode.NONE, errors

    def _drop_empty_consumer_group(self, group_id: str) -> None:
        """An Empty consumer group gives way to a classic group of the same id (Kafka's
        maybeDeleteEmptyConsumerGroup); the classic group's record replaces it on disk."""
        del self.consumer.groups[group_id]
        self.groups[group_id] = self._new_group(group_id, None)
        log.info("group %s: converted the empty consumer group to a classic group", group_id)
