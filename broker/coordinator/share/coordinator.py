"""The share-group coordinator: share groups, their share-partitions and share sessions.

Handlers call it on the event loop only (no awaits inside an operation). Heartbeats follow
Kafka's GroupMetadataManager.shareGroupHeartbeat (see broker.coordinator.share.group); a
member not heard from within group.share.session.timeout.ms is fenced by a timer
(broker.lifecycle.background, as Kafka's scheduleShareGroupSessionTimeout): it leaves the
group, whose epoch moves, and its next heartbeat gets UNKNOWN_MEMBER_ID. As in Kafka
(shareGroupFenceMember touches only the group's records) its share session and the records
it acquired stay: those go back when their locks run out or its connection closes. A
share-partition is made at the group's first ShareFetch for it, starting at the latest
offset (share.auto.offset.reset=latest, Kafka's default) or the log start (earliest), per
the group config; share.isolation.level=read_committed (read_committed()) makes ShareFetch
stop at the last stable offset. Share-partition states are kept across restarts
(storage.share_state_store, as Kafka writes __share_group_state: first at an
acknowledgement, a release or an alter, then after each request that changed one), and so
are the groups with their epochs and initialized share-partitions
(storage.share_group_store, as Kafka's ShareGroupMetadata and
ShareGroupStatePartitionMetadata records); members are not (they rejoin, as after a
coordinator failover). The offset admin APIs (Describe/Alter/Delete
ShareGroupOffsets) and DeleteGroups read and change both here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from broker.config.model import Config
from broker.coordinator.share.assignor import assign
from broker.coordinator.share.group import Assignment, ShareGroup, ShareMember
from broker.coordinator.share.partition import SharePartition
from broker.coordinator.share.sessions import ShareSessionCache
from protocol.errors import ErrorCode
from storage.share_group_store import SavedShareGroup, ShareGroupStore
from storage.share_state_store import ShareKey, ShareState, ShareStateStore
from storage.store import Store

log = logging.getLogger(__name__)

LEAVE_EPOCH = -1
# KafkaApis.isMemberIdValid: the client's UUID string.
MAX_MEMBER_ID_LENGTH = 36

GroupConfigs = Callable[[str], Mapping[str, str]]


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


# Kafka 4.1+'s default group.share.partition.max.record.locks (ShareGroupConfig; 4.0 had
# 200): share groups here play Kafka 4.4.0, so the limit is its default unless the property
# is set. DescribeConfigs keeps showing 4.0's 200, as the rest of the broker table is 4.0's.
KAFKA_4_4_PARTITION_MAX_RECORD_LOCKS = 2000


def _partition_max_record_locks(config: Config) -> int:
    if "group.share.partition.max.record.locks" in dict(config.explicit):
        return config.group_share_partition_max_record_locks
    return KAFKA_4_4_PARTITION_MAX_RECORD_LOCKS


@dataclass(frozen=True, slots=True)
class ShareSettings:
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_size: int
    record_lock_duration_ms: int
    delivery_count_limit: int
    partition_max_record_locks: int

    @classmethod
    def of(cls, config: Config) -> ShareSettings:
        return cls(
            config.group_share_session_timeout_ms,
            config.group_share_heartbeat_interval_ms,
            config.group_share_max_size,
            config.group_share_record_lock_duration_ms,
            config.group_share_delivery_count_limit,
            _partition_max_record_locks(config),
        )


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def _no_group_configs(_group_id: str) -> Mapping[str, str]:
    return {}


class ShareCoordinator:
    def __init__(
        self,
        settings: ShareSettings,
        store: Store,
        saved: ShareStateStore | None = None,
        group_configs: GroupConfigs = _no_group_configs,
        other_group: Callable[[str], bool] = lambda _g: False,
        saved_groups: ShareGroupStore | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self._group_configs = group_configs
        # True when a classic or consumer group holds the id (one id names one kind).
        self._other_group = other_group
        self.groups: dict[str, ShareGroup] = {}
        self.partitions: dict[tuple[str, bytes, int], SharePartition] = {}
        self.sessions = ShareSessionCache()
        # Set by the fencing timer (broker.lifecycle.background): a member joined.
        self.on_member_joined: Callable[[], None] | None = None
        # Share-partition states kept across restarts, and the change count last written.
        self.saved = saved
        self._written: dict[ShareKey, int] = {}
        # Share groups kept across restarts: back Empty, with their group epoch.
        self.saved_groups = saved_groups
        if saved_groups is not None:
            for group_id, kept in saved_groups.groups.items():
                self.groups[group_id] = ShareGroup(
                    group_id, kept.epoch, kept.epoch, initialized=set(kept.initialized)
                )

    def persist(self) -> None:
        """Write the share-partitions changed since the last write (durable on return)."""
        if self.saved is None:
            return
        changed: dict[ShareKey, ShareState] = {}
        for key, part in self.partitions.items():
            # Kafka writes a share-partition's state first at an acknowledgement or release.
            if part.reported and self._written.get(key) != part.changes:
                changed[key] = part.snapshot()
                self._written[key] = part.changes
        if changed:
            self.saved.put(changed)
        if self.saved_groups is not None:
            self.saved_groups.replace(
                {
                    g.group_id: SavedShareGroup(g.group_epoch, frozenset(g.initialized))
                    for g in self.groups.values()
                }
            )

    # -- per-group settings (group configs override the broker's) ------------------------

    def _group_int(self, group_id: str, name: str, default: int) -> int:
        raw = self._group_configs(group_id).get(name)
        return int(raw) if raw is not None else default

    def session_timeout_ms(self, group_id: str) -> int:
        return self._group_int(
            group_id, "share.session.timeout.ms", self.settings.session_timeout_ms
        )

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._group_int(
            group_id, "share.heartbeat.interval.ms", self.settings.heartbeat_interval_ms
        )

    def record_lock_ms(self, group_id: str) -> int:
        return self._group_int(
            group_id, "share.record.lock.duration.ms", self.settings.record_lock_duration_ms
        )

    def read_committed(self, group_id: str) -> bool:
        """share.isolation.level (Kafka 4.1+'s group config, default read_uncommitted)."""
        level = self._group_configs(group_id).get("share.isolation.level")
        return level == "read_committed"

    def delivery_count_limit(self, group_id: str) -> int:
        return self._group_int(
            group_id, "share.delivery.count.limit", self.settings.delivery_count_limit
        )

    # -- heartbeats ----------------------------------------------------------------------

    def _retarget(self, group: ShareGroup) -> bool:
        """Run the SimpleAssignor over the group (broker.coordinator.share.assignor); True
        when the target assignment changed."""
        partitions: dict[str, list[tuple[bytes, int]]] = {}
        for name in group.subscribed_topics():
            info = self.store.topic(name)
            if info is not None and info.partitions:
                partitions[name] = [(info.topic_id, i) for i in range(len(info.partitions))]
        wanted = assign(
            {m.member_id: m.subscribed for m in group.members.values()}, partitions, group.target
        )
        if wanted == group.target:
            return False
        group.target = wanted
        return True

    @staticmethod
    def _as_assignment(partitions: set[tuple[bytes, int]]) -> Assignment:
        out: Assignment = {}
        for topic_id, index in sorted(partitions):
            out.setdefault(topic_id, []).append(index)
        return out

    def expire_members(self, now_ms: int | None = None) -> list[tuple[str, str]]:
        """Fence the members whose session ran out; (group id, member id) of each."""
        now = monotonic_ms() if now_ms is None else now_ms
        fenced: list[tuple[str, str]] = []
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                if member.deadline_ms <= now:
                    self._fence(group, member.member_id)
                    fenced.append((group.group_id, member.member_id))
                    log.info(
                        "share group %s: member %s fenced, its session expired",
                        group.group_id,
                        member.member_id,
                    )
        return fenced

    def next_member_deadline(self) -> int | None:
        """The soonest session deadline of any member (monotonic ms), for the timer."""
        return min(
            (m.deadline_ms for g in self.groups.values() for m in g.members.values()),
            default=None,
        )

    def _fence(self, group: ShareGroup, member_id: str) -> None:
        """GroupMetadataManager.shareGroupFenceMember: the member's records in the group go
        and the group epoch moves; share sessions and acquired records are the share
        partitions' business (released by lock timeout or disconnection)."""
        group.members.pop(member_id, None)
        group.group_epoch += 1
        group.assignment_epoch = group.group_epoch
        # The others' share of the partitions is computed at the new epoch.
        self._retarget(group)

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed: list[str] | None,
        client_id: str,
        client_host: str,
    ) -> HeartbeatResult:
        now = monotonic_ms()
        self.expire_members(now)
        if not group_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if member_epoch < LEAVE_EPOCH:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
        if member_epoch == 0 and not subscribed:
            return HeartbeatResult(
                ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
            )
        group = self.groups.get(group_id)
        if group is None and self._other_group(group_id):
            return HeartbeatResult(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
            )
        if member_epoch == LEAVE_EPOCH:
            # Kafka's shareGroupLeave fences the member as its session timeout does: the
            # share session stays, so the client's closing ShareAcknowledge (final epoch,
            # sent after the leave by librdkafka) still acknowledges and releases.
            if group is not None and member_id in group.members:
                self._fence(group, member_id)
            return HeartbeatResult(ErrorCode.NONE, None, member_id, LEAVE_EPOCH, 0)
        if group is None:
            if member_epoch != 0:
                return HeartbeatResult(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found."
                )
            group = self.groups[group_id] = ShareGroup(group_id)
        member = group.members.get(member_id)
        joined = False
        if member is None:
            if member_epoch != 0:
                return HeartbeatResult(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group_id}.",
                )
            if len(group.members) >= self.settings.max_size:
                return HeartbeatResult(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"The share group has reached its maximum capacity of "
                    f"{self.settings.max_size} members.",
                )
            member = ShareMember(member_id, client_id, client_host)
            group.members[member_id] = member
            group.group_epoch += 1
            joined = True
        elif member_epoch not in (0, member.member_epoch):
            which = "greater" if member_epoch > member.member_epoch else "smaller"
            return HeartbeatResult(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a {which} "
                f"member epoch ({member_epoch}) than the one known by the group coordinator "
                f"({member.member_epoch}). The member must abandon all its partitions and rejoin.",
            )
        if rack_id is not None:
            member.rack_id = rack_id
        if subscribed is not None and tuple(subscribed) != member.subscribed:
            member.subscribed = tuple(subscribed)
            group.group_epoch += 1
        member.deadline_ms = now + self.session_timeout_ms(group_id)
        if joined and self.on_member_joined is not None:
            # The fencing timer may sleep past this member's deadline (a shorter group
            # session timeout than the others'): it looks again.
            self.on_member_joined()
        # A new target at this heartbeat's epoch; a change with no member or subscription
        # change behind it (partitions added) moves the group epoch itself.
        if self._retarget(group) and group.assignment_epoch == group.group_epoch:
            group.group_epoch += 1
        group.assignment_epoch = group.group_epoch
        new_assignment = self._as_assignment(group.target.get(member_id, set()))
        if member_epoch > 0:
            # The coordinator initializes the share-partitions it assigned at a member's
            # next heartbeat, not at its join (Kafka 4.4.0's ShareGroupStatePartitionMetadata,
            # as seen from DescribeShareGroupOffsets; their start offset stays -1 until a
            # write).
            group.initialized.update((t, p) for t, parts in new_assignment.items() for p in parts)
        changed = new_assignment != member.assignment
        send = member_epoch == 0 or changed or member.member_epoch != group.assignment_epoch
        member.assignment = new_assignment
        member.member_epoch = group.assignment_epoch
        return HeartbeatResult(
            ErrorCode.NONE,
            None,
            member_id,
            member.member_epoch,
            self.heartbeat_interval_ms(group_id),
            new_assignment if send else None,
        )

    # -- share-partitions ----------------------------------------------------------------

    def is_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    def partition(self, group_id: str, topic_id: bytes, index: int) -> SharePartition | None:
        """The group's share-partition, made at first use (None: no such partition)."""
        key = (group_id, topic_id, index)
        part = self.partitions.get(key)
        info = self.store.topic_by_id(topic_id)
        if info is None or not 0 <= index < len(info.partitions):
            return None
        plog = info.partitions[index]
        stored = None if part is not None or self.saved is None else self.saved.states.get(key)
        if stored is not None:
            part = SharePartition.restored(
                stored,
                self.delivery_count_limit(group_id),
                self.settings.partition_max_record_locks,
            )
            self.partitions[key] = part
            self._written[key] = part.changes
        if part is None:
            reset = self._group_configs(group_id).get("share.auto.offset.reset", "latest")
            start = plog.log_start_offset if reset == "earliest" else plog.high_watermark
            part = SharePartition(
                start,
                self.delivery_count_limit(group_id),
                self.settings.partition_max_record_locks,
            )
            self.partitions[key] = part
        part.move_start(plog.log_start_offset)
        return part

    def connection_closed(self, peer: str) -> list[tuple[bytes, int]]:
        """The sessions that connection opened end, as if closed with the final epoch."""
        released: list[tuple[bytes, int]] = []
        for session in self.sessions.of_peer(peer):
            released += self.close_session(session.group_id, session.member_id)
        return released

    def close_session(self, group_id: str, member_id: str) -> list[tuple[bytes, int]]:
        """The member's share session ends (final epoch): what it holds is released. The
        share-partitions that got records back."""
        self.sessions.close(group_id, member_id)
        return [
            (topic_id, index)
            for (g, topic_id, index), part in self.partitions.items()
            if g == group_id and part.release_member(member_id)
        ]

    # -- the offset admin APIs and DeleteGroups --------------------------------------------

    def _saved_keys(self, group_id: str) -> set[ShareKey]:
        keys = {k for k in self.partitions if k[0] == group_id}
        if self.saved is not None:
            keys |= {k for k in self.saved.states if k[0] == group_id}
        return keys

    def initialized(self, group_id: str) -> dict[bytes, list[int]]:
        """The group's initialized share-partitions (assigned, fetched or altered)."""
        group = self.groups.get(group_id)
        keys = {
            (t, p)
            for g, t, p in self.partitions
            if g == group_id and self.partitions[(g, t, p)].reported
        }
        if self.saved is not None:
            keys |= {(t, p) for g, t, p in self.saved.states if g == group_id}
        if group is not None:
            keys |= group.initialized
        out: dict[bytes, list[int]] = {}
        for topic_id, index in sorted(keys):
            out.setdefault(topic_id, []).append(index)
        return out

    def summary(self, group_id: str, topic_id: bytes, index: int) -> tuple[int, int] | None:
        """(start offset, records past it already acknowledged or archived) of a
        share-partition whose state was written, else None: Kafka's
        ReadShareGroupStateSummary of an uninitialized state."""
        key = (group_id, topic_id, index)
        if key not in self._saved_keys(group_id):
            return None
        loaded = self.partitions.get(key)
        if loaded is not None and not loaded.reported:
            return None
        part = self.partition(group_id, topic_id, index)
        if part is None:
            return None
        return part.start_offset, part.delivery_complete_count()

    def alter_offsets(self, group_id: str, starts: Mapping[tuple[bytes, int], int]) -> None:
        """AlterShareGroupOffsets on an Empty (or new) group: each share-partition starts
        anew at its start offset, with nothing in flight (Kafka's InitializeShareGroupState);
        the group's epoch moves (a ShareGroupMetadata record in Kafka)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        group.initialized.update(starts)
        group.group_epoch += 1
        group.assignment_epoch = group.group_epoch
        for (topic_id, index), start in starts.items():
            key = (group_id, topic_id, index)
            part = SharePartition(
                start, self.delivery_count_limit(group_id), self.settings.partition_max_record_locks
            )
            part.changes = self._written.get(key, 0) + 1
            part.reported = True
            self.partitions[key] = part
        self.persist()

    def forget(self, keys: set[ShareKey]) -> None:
        for key in keys:
            self.partitions.pop(key, None)
            self._written.pop(key, None)
        if self.saved is not None:
            self.saved.remove(keys)

    def delete_offsets(self, group_id: str, topic_id: bytes) -> bool:
        """DeleteShareGroupOffsets for one topic: its share-partitions' states go (False:
        the group had none for it)."""
        keys = {k for k in self._saved_keys(group_id) if k[1] == topic_id}
        group = self.groups.get(group_id)
        assigned = set() if group is None else {k for k in group.initialized if k[0] == topic_id}
        if group is not None:
            group.initialized -= assigned
        self.forget(keys)
        self.persist()
        return bool(keys or assigned)

    def delete_group(self, group_id: str) -> None:
        """DeleteGroups on an Empty share group: the group and its share-partitions' states."""
        self.groups.pop(group_id, None)
        self.forget(self._saved_keys(group_id))
        self.persist()
