"""Offset retention and the removal of empty groups, driven with an injected wall clock.

Kafka 4.0's GroupCoordinatorShard.cleanupGroupMetadata runs every
offsets.retention.check.interval.ms: OffsetMetadataManager.cleanupExpiredOffsets tombstones
the offsets that ClassicGroup.offsetExpirationCondition says are expired, and when a group has
no offsets left (or never had any) GroupMetadataManager.maybeDeleteGroup deletes it if it is
Empty. These tests call the coordinator's cleanup directly and check what the committed-offsets
store holds afterwards (and after reopening it)."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest

from broker.coordinator.groups.classic import ClassicGroup, GroupSettings, GroupState, JoinRequest
from broker.coordinator.groups.consumer_manager import HeartbeatRequest
from broker.coordinator.groups.coordinator import GroupCoordinator, OffsetToCommit
from broker.runtime.flusher import Flusher
from storage.committed_offsets import CommittedOffsets

RETENTION = 10_000
SETTINGS = GroupSettings(
    initial_rebalance_delay_ms=0,
    min_session_timeout_ms=1,
    max_session_timeout_ms=10**9,
    offsets_retention_ms=RETENTION,
)


class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0: version, topics, user data (null)."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


def join_req(topics: tuple[str, ...] = ("t",), protocol_type: str = "consumer") -> JoinRequest:
    return JoinRequest(
        member_id="",
        group_instance_id=None,
        # Long sessions: the members never expire while the tests move the wall clock.
        session_timeout_ms=10**8,
        rebalance_timeout_ms=10**8,
        protocol_type=protocol_type,
        protocols=[("range", subscription(*topics))],
        client_id="c",
        client_host="/127.0.0.1",
        require_known_member_id=False,
        supports_skip_assignment=False,
    )


def offset(topic: str, partition: int = 0, value: int = 5) -> OffsetToCommit:
    return OffsetToCommit(topic, partition, value, -1, None)


def open_coordinator(path: Path, clock: Clock) -> GroupCoordinator:
    return GroupCoordinator(SETTINGS, CommittedOffsets.open(path), Flusher(), clock=clock)


async def stable_member(
    coordinator: GroupCoordinator,
    group_id: str,
    topics: tuple[str, ...] = ("t",),
    protocol_type: str = "consumer",
) -> tuple[str, int]:
    """Join and sync one member: (member id, generation)."""
    joined = await coordinator.join(group_id, join_req(topics, protocol_type))
    assert joined.error == 0
    synced = await coordinator.sync(
        group_id, joined.member_id, None, joined.generation_id, None, None, {}
    )
    assert synced.error == 0
    return joined.member_id, joined.generation_id


async def commit(
    coordinator: GroupCoordinator,
    group_id: str,
    offsets: list[OffsetToCommit],
    member: tuple[str, int] = ("", -1),
    retention_time_ms: int = -1,
) -> None:
    member_id, generation = member
    assert coordinator.validate_commit(group_id, member_id, None, generation, 9) == 0
    errors = await coordinator.commit(group_id, offsets, retention_time_ms)
    assert errors == [0] * len(offsets)


def committed(coordinator: GroupCoordinator, group_id: str) -> dict[tuple[str, int], int]:
    return {tp: v.offset for tp, v in coordinator.store.offsets(group_id).items()}


def listed(coordinator: GroupCoordinator) -> list[str]:
    return [g.group_id for g in coordinator.list_groups()]


@pytest.mark.asyncio
async def test_standalone_commit_expires_retention_after_its_commit_and_the_group_goes(
    tmp_path: Path,
) -> None:
    clock = Clock(1_000_000)
    coordinator = open_coordinator(tmp_path, clock)
    try:
        await commit(coordinator, "solo", [offset("t", 0), offset("t", 1)])
        clock.now += 5_000
        await commit(coordinator, "solo", [offset("t", 1, 7)])  # a later commit: own clock
        clock.now = 1_000_000 + RETENTION - 1
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "solo") == {("t", 0): 5, ("t", 1): 7}
        clock.now = 1_000_000 + RETENTION  # Kafka: expired when now - commit >= retention
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "solo") == {("t", 1): 7}
        assert listed(coordinator) == ["solo"]  # one offset left: the group stays
        clock.now = 1_005_000 + RETENTION
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "solo") == {}
        assert listed(coordinator) == []
        assert coordinator.fetch_offsets("solo", [("t", 1)])[1][0].offset == -1
    finally:
        await coordinator.close()
    reopened = CommittedOffsets.open(tmp_path)
    assert reopened.offsets("solo") == {} and "solo" not in reopened.groups()
    reopened.close()


@pytest.mark.asyncio
async def test_expired_offsets_are_tombstoned_so_a_crash_restart_keeps_them_gone(
    tmp_path: Path,
) -> None:
    clock = Clock(1_000_000)
    coordinator = open_coordinator(tmp_path, clock)
    coordinator.start()
    await commit(coordinator, "solo", [offset("t", 0)])
    await commit(coordinator, "other", [offset("t", 0)])
    clock.now += 1
    await commit(coordinator, "other", [offset("t", 1)])
    clock.now = 1_000_000 + RETENTION
    await coordinator.cleanup_group_metadata()
    # No close (it would compact the log): the tombstones themselves must be on disk.
    after_crash = CommittedOffsets.open(tmp_path)
    assert after_crash.offsets("solo") == {} and "solo" not in after_crash.groups()
    assert set(after_crash.offsets("other")) == {("t", 1)}
    after_crash.close()
    await coordinator.close()


@pytest.mark.asyncio
async def test_empty_group_offsets_expire_retention_after_it_became_empty(
    tmp_path: Path,
) -> None:
    clock = Clock(1_000_000)
    coordinator = open_coordinator(tmp_path, clock)
    coordinator.start()
    try:
        member = await stable_member(coordinator, "g")
        await commit(coordinator, "g", [offset("t")], member)
        # Stable and subscribed to t: never expires, however old the commit.
        clock.now += 10 * RETENTION
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "g") == {("t", 0): 5}
        became_empty = clock.now
        assert coordinator.leave("g", [(member[0], None, None)]) == (0, [0])
        group = coordinator.describe("g")
        assert group is not None and group.state is GroupState.EMPTY
        clock.now = became_empty + RETENTION - 1
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "g") == {("t", 0): 5}
        clock.now = became_empty + RETENTION
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "g") == {}
        # Its last offset gone, the Empty group is deleted too.
        assert listed(coordinator) == [] and coordinator.describe("g") is None
    finally:
        await coordinator.close()
    reopened = CommittedOffsets.open(tmp_path)
    assert "g" not in reopened.groups()
    reopened.close()


@pytest.mark.asyncio
async def test_empty_since_time_survives_a_restart(tmp_path: Path) -> None:
    clock = Clock(1_000_000)
    coordinator = open_coordinator(tmp_path, clock)
    coordinator.start()
    member = await stable_member(coordinator, "g")
    await commit(coordinator, "g", [offset("t")], member)
    clock.now += 2_000
    became_empty = clock.now
    coordinator.leave("g", [(member[0], None, None)])
    await coordinator.close()

    # Restarted later: the clock runs from when the group became Empty, not from the load.
    clock.now = became_empty + RETENTION - 1
    reloaded = open_coordinator(tmp_path, clock)
    try:
        group = reloaded.describe("g")
        assert group is not None and group.state is GroupState.EMPTY
        assert group.state_timestamp_ms == became_empty
        await reloaded.cleanup_group_metadata()
        assert committed(reloaded, "g") == {("t", 0): 5}
        clock.now = became_empty + RETENTION
        await reloaded.cleanup_group_metadata()
        assert committed(reloaded, "g") == {} and listed(reloaded) == []
    finally:
        await reloaded.close()


@pytest.mark.asyncio
async def test_stable_consumer_group_expires_only_offsets_of_topics_it_does_not_subscribe_to(
    tmp_path: Path,
) -> None:
    clock = Clock(1_000_000)
    coordinator = open_coordinator(tmp_path, clock)
    coordinator.start()
    try:
        member = await stable_member(coordinator, "g", topics=("t",))
        await commit(coordinator, "g", [offset("t"), offset("u")], member)
        clock.now += RETENTION
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "g") == {("t", 0): 5}
        group = coordinator.describe("g")
        assert group is not None and group.state is GroupState.STABLE
    finally:
        await coordinator.close()


@pytest.mark.asyncio
async def test_non_empty_group_of_another_protocol_type_keeps_its_offsets(
    tmp_path: Path,
) -> None:
    clock = Clock(1_000_000)
    coordinator = open_coordinator(tmp_path, clock)
    coordinator.start()
    try:
        member = await stable_member(coordinator, "connect", protocol_type="connect")
        await commit(coordinator, "connect", [offset("u")], member)
        clock.now += 10 * RETENTION
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "connect") == {("u", 0): 5}
        # Empty, its offsets go retention after that, whatever the protocol type.
        coordinator.leave("connect", [(member[0], None, None)])
        clock.now += RETENTION
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "connect") == {} and listed(coordinator) == []
    finally:
        await coordinator.close()


@pytest.mark.asyncio
async def test_retention_time_of_offset_commit_v2_to_v4_sets_an_expire_timestamp(
    tmp_path: Path,
) -> None:
    clock = Clock(1_000_000)
    coordinator = open_coordinator(tmp_path, clock)
    coordinator.start()
    try:
        await commit(coordinator, "solo", [offset("t")], retention_time_ms=500)
        await commit(coordinator, "long", [offset("t")], retention_time_ms=3 * RETENTION)
        clock.now += 499
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "solo") == {("t", 0): 5}
        clock.now += 1
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "solo") == {}
        # The explicit expiry replaces offsets.retention.minutes, also when it is longer.
        clock.now = 1_000_000 + 3 * RETENTION - 1
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "long") == {("t", 0): 5}
        clock.now += 1
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "long") == {}
    finally:
        await coordinator.close()
    reopened = CommittedOffsets.open(tmp_path)
    assert reopened.groups() == {}
    reopened.close()


@pytest.mark.asyncio
async def test_empty_group_without_offsets_is_deleted_at_the_next_cleanup(
    tmp_path: Path,
) -> None:
    clock = Clock(1_000_000)
    coordinator = open_coordinator(tmp_path, clock)
    coordinator.start()
    try:
        member = await stable_member(coordinator, "g")
        await coordinator.cleanup_group_metadata()
        assert listed(coordinator) == ["g"]  # Stable: kept
        coordinator.leave("g", [(member[0], None, None)])
        assert listed(coordinator) == ["g"]  # Empty until the cleanup runs
        await coordinator.cleanup_group_metadata()
        assert listed(coordinator) == []
        # A new member may create it again afterwards.
        await stable_member(coordinator, "g")
        assert listed(coordinator) == ["g"]
    finally:
        await coordinator.close()


@pytest.mark.parametrize(
    ("protocol_type", "state", "base"),
    [
        (None, GroupState.EMPTY, "commit"),
        ("consumer", GroupState.EMPTY, "state"),
        ("connect", GroupState.EMPTY, "state"),
        ("consumer", GroupState.STABLE, "commit"),
        ("connect", GroupState.STABLE, None),
        ("consumer", GroupState.PREPARING_REBALANCE, None),
        ("consumer", GroupState.COMPLETING_REBALANCE, None),
    ],
)
def test_offset_expiration_base_follows_kafkas_classic_group(
    protocol_type: str | None, state: GroupState, base: str | None
) -> None:
    group = ClassicGroup("g", SETTINGS, protocol_type=protocol_type, clock=lambda: 777)
    group.state = state
    rule = group.offset_expiration_base()
    if base is None:
        assert rule is None
    else:
        assert rule is not None
        assert rule(123) == (123 if base == "commit" else 777)


def test_empty_group_loaded_without_a_state_time_counts_from_each_commit() -> None:
    # Kafka: currentStateTimestamp.orElse(commitTimestamp) for records written without it.
    group = ClassicGroup("g", SETTINGS, protocol_type="consumer", clock=lambda: 777)
    group.state_timestamp_ms = None
    rule = group.offset_expiration_base()
    assert rule is not None and rule(123) == 123


def test_subscription_rule_of_kafkas_is_subscribed_to_topic() -> None:
    group = ClassicGroup("g", SETTINGS, protocol_type="connect")
    assert not group.is_subscribed_to_topic("t")  # not the consumer protocol: never
    consumer = ClassicGroup("g", SETTINGS, protocol_type="consumer")
    assert not consumer.is_subscribed_to_topic("t")  # Empty: subscribes to nothing
    loop = asyncio.new_event_loop()
    try:
        waiter = loop.create_future()
        consumer.join(join_req(("t",)), waiter, 0)
        consumer.tick(0)
        assert consumer.is_subscribed_to_topic("t")
        assert not consumer.is_subscribed_to_topic("u")
        member = waiter.result().member_id
        consumer.members[member].protocols = [("range", b"not a subscription")]
        # Unreadable subscription of a consumer group: taken as subscribed (Kafka).
        assert consumer.is_subscribed_to_topic("u")
    finally:
        loop.close()


def consumer_join(group_id: str, topics: list[str]) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id=group_id,
        member_id="m1",
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=10**8,
        subscribed_topic_names=topics,
        subscribed_topic_regex=None,
        server_assignor=None,
        owned=[],
        client_id="c",
        client_host="/127.0.0.1",
        version=1,
    )


@pytest.mark.asyncio
async def test_consumer_group_offsets_expire_like_kafkas_consumer_group(tmp_path: Path) -> None:
    """Kafka's ConsumerGroup.offsetExpirationCondition counts from each commit in any state
    and spares the topics its members subscribe to (ModernGroup.isSubscribedToTopic); an
    Empty consumer group left without offsets is deleted."""
    clock = Clock(1_000_000)
    topics = {"t": (b"\x01" * 16, 1), "u": (b"\x02" * 16, 1)}
    coordinator = GroupCoordinator(
        SETTINGS, CommittedOffsets.open(tmp_path), Flusher(), topics=lambda: topics, clock=clock
    )
    coordinator.start()
    try:
        joined = await coordinator.consumer_heartbeat(consumer_join("g", ["t"]))
        assert joined.error == 0 and joined.member_epoch == 1
        assert coordinator.validate_commit("g", "m1", None, 1, 9) == 0
        await coordinator.commit("g", [offset("t"), offset("u")])
        clock.now += RETENTION - 1
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "g") == {("t", 0): 5, ("u", 0): 5}
        clock.now += 1
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "g") == {("t", 0): 5}
        # The member leaves: Empty, and t's offset is past its retention since its commit.
        leave = consumer_join("g", ["t"])
        leave.member_epoch = -1
        assert (await coordinator.consumer_heartbeat(leave)).error == 0
        assert "g" in coordinator.consumer.groups
        await coordinator.cleanup_group_metadata()
        assert committed(coordinator, "g") == {}
        assert "g" not in coordinator.consumer.groups
    finally:
        await coordinator.close()
    reopened = CommittedOffsets.open(tmp_path)
    try:
        assert reopened.offsets("g") == {}
        assert "g" not in reopened.consumer_groups()
    finally:
        reopened.close()
