"""KIP-848 consumer groups at the coordinator: ConsumerGroupHeartbeat, ConsumerGroupDescribe,
the regex resolutions on worker threads, and the online migration of a group id between the
two kinds of group.

- KIP-848 consumer groups live in ``consumer`` (a ``ConsumerGroupManager``) beside the
  classic ones; a group id names one kind at a time. An Empty group of one kind is replaced
  by the other kind when a member of the other protocol joins, keeping its offsets (Kafka's
  maybeDeleteEmptyClassicGroup here, maybeDeleteEmptyConsumerGroup in ``classic_requests``).
- A non-empty one migrates online as ``group.consumer.migration.policy`` allows: a
  ConsumerGroupHeartbeat join upgrades a classic group (``_upgrade``,
  ``migration.to_consumer_group``), whose classic members are then served from the consumer
  group (``consumer_classic``); when the last consumer-protocol member leaves or is fenced,
  ``_downgrade`` makes it a classic group again and starts a rebalance. Otherwise a
  ConsumerGroupHeartbeat gets GROUP_ID_NOT_FOUND, a JoinGroup INCONSISTENT_GROUP_PROTOCOL,
  as Kafka's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from broker.coordinator.groups import consumer_protocol, migration
from broker.coordinator.groups.classic import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from broker.coordinator.groups.consumer import ConsumerGroup
from broker.coordinator.groups.consumer_manager import (
    HeartbeatRequest,
    HeartbeatResult,
    Resolution,
)
from broker.coordinator.groups.coordinator_base import monotonic_ms
from broker.coordinator.groups.group_records import GroupRecords
from broker.runtime import offload
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class ConsumerGroupRequests(GroupRecords):
    """ConsumerGroupHeartbeat, ConsumerGroupDescribe, regex resolution, online migration."""

    async def consumer_heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        if self.closed:
            # GroupCoordinatorService answers COORDINATOR_NOT_AVAILABLE when not active.
            return HeartbeatResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        classic = self._live(req.group_id) if req.group_id else None
        max_size = self.consumer.settings.max_size
        if (
            classic is not None
            and req.member_epoch == 0
            and len(classic.members) == max_size
            and self.consumer.valid_request(req)
        ):
            # Kafka converts (the group is not over the limit) then finds it full and
            # discards the whole change: the group stays classic.
            return HeartbeatResult(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {max_size} members.",
            )
        if classic is not None and self.consumer.valid_request(req):
            refusal = self._classic_in_the_way(classic, req.member_epoch == 0)
            if refusal is not None:
                return HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, refusal)
        result = self.consumer.heartbeat(req, monotonic_ms())
        self._poke()
        for group_id in result.changed:
            await self._durable(group_id)
        return result

    def _classic_in_the_way(self, classic: ClassicGroup, joining: bool) -> str | None:
        """Kafka's getOrMaybeCreateConsumerGroup for a group id held by a classic group: an
        Empty one is replaced (its offsets stay); else the answer's message."""
        group_id = classic.group_id
        if not joining:
            return f"Group {group_id} is not a consumer group."
        if not classic.is_empty():
            return self._upgrade(classic)
        classic.mark_dead()
        del self.groups[group_id]
        log.info("group %s: converted the empty classic group to a consumer group", group_id)
        return None

    def _upgrade(self, classic: ClassicGroup) -> str | None:
        """Kafka's validateOnlineUpgrade + convertToConsumerGroup: the classic group becomes
        a consumer group with its members (still served through the classic APIs); members
        parked in JoinGroup/SyncGroup get REBALANCE_IN_PROGRESS and rejoin. Else the
        GROUP_ID_NOT_FOUND message."""
        group_id = classic.group_id
        refusal = None
        if not migration.upgrade_enabled(self.consumer.settings.migration_policy):
            refusal = "online upgrade is disabled"
        elif classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            refusal = "the group does not use the consumer embedded protocol"
        elif len(classic.members) > self.consumer.settings.max_size:
            refusal = "the group size exceeds the consumer group maximum size"
        if refusal is not None:
            log.info(
                "Cannot upgrade classic group %s to consumer group because %s.", group_id, refusal
            )
            return f"Cannot upgrade classic group {group_id} to consumer group because {refusal}."
        try:
            converted = migration.to_consumer_group(classic, self.consumer.topics())
        except consumer_protocol.MalformedProtocol as e:
            log.warning("Cannot upgrade classic group %s: %s", group_id, e)
            return (
                f"Cannot upgrade classic group {group_id} to consumer group because the "
                "embedded consumer protocol is malformed."
            )
        except migration.CustomAssignorInUse:
            return (
                f"Cannot upgrade classic group {group_id} to consumer group because an "
                "unsupported custom assignor is in use. Please refer to the documentation or "
                "switch to a default assignor before re-attempting the upgrade."
            )
        classic.unload(ErrorCode.REBALANCE_IN_PROGRESS)
        classic.mark_dead()
        del self.groups[group_id]
        self.consumer.load(converted, monotonic_ms())
        self._persist_consumer_group(converted)
        log.info("[GroupId %s] Converted the classic group to a consumer group.", group_id)
        return None

    def _downgrade(self, group: ConsumerGroup, leaving: set[str], rebalance: bool) -> None:
        """Kafka's convertToClassicGroup: a Stable classic group at the group epoch with the
        remaining (classic) members and their target assignments, written, then a rebalance
        so they rejoin (for members leaving, or a replacing static member whose subscription
        differs)."""
        group_id = group.group_id
        names = {tid: name for name, (tid, _) in self.consumer.topics().items()}
        protocol, members = migration.to_classic_members(group, leaving, names)
        del self.consumer.groups[group_id]
        classic = self._new_group(group_id, None)
        classic.generation_id = group.group_epoch
        classic.protocol_type = CONSUMER_PROTOCOL_TYPE
        now = monotonic_ms()
        classic.restore(protocol, None, members, now)
        self.groups[group_id] = classic
        self._persist_group(classic)
        if rebalance and leaving:
            classic.prepare_rebalance(
                now, f"Downgrade group {group_id} from consumer to classic for member leaving."
            )
        elif rebalance:
            classic.prepare_rebalance(
                now,
                f"Downgrade group {group_id} from consumer to classic for static member "
                "replacement with different subscription.",
            )
        log.info("[GroupId %s] Converted the consumer group to a classic group.", group_id)

    def describe_consumer_group(self, group_id: str) -> ConsumerGroup | str:
        """The group, or the GROUP_ID_NOT_FOUND message Kafka gives."""
        group = self.consumer.groups.get(group_id)
        if group is not None:
            return group
        if self._live(group_id) is not None:
            return f"Group {group_id} is not a consumer group."
        return f"Group {group_id} not found."

    def _resolve_off_loop(
        self, work: Callable[[], Resolution], done: Callable[[Resolution | None], None]
    ) -> None:
        """Regexes are matched on a worker thread (Kafka resolves them on the coordinator's
        executor), so no request waits for them; ``done`` runs back on the loop."""
        task = asyncio.get_running_loop().create_task(offload.run(work))
        self._resolutions.add(task)

        def finished(task: asyncio.Task[Resolution]) -> None:
            self._resolutions.discard(task)
            if task.cancelled() or self.closed:
                return
            error = task.exception()
            if error is not None:
                log.error("Couldn't update regular expressions due to: %s", error)
                done(None)
                return
            done(task.result())

        task.add_done_callback(finished)
