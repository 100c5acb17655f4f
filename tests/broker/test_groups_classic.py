"""broker.coordinator.groups: the classic group state machine, driven with explicit time, and the
coordinator's group metadata records (persisted on Stable/Empty, reloaded at start-up)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.coordinator.groups.classic import (
    FENCED_INSTANCE_ID,
    ClassicGroup,
    GroupSettings,
    GroupState,
    JoinRequest,
    JoinResult,
    Member,
    SyncResult,
)
from broker.coordinator.groups.coordinator import GroupCoordinator, monotonic_ms
from broker.runtime.flusher import Flusher
from protocol.errors import ErrorCode
from storage import committed_offsets
from storage.committed_offsets import CommittedOffset, CommittedOffsets, GroupRecord

SETTINGS = GroupSettings(
    initial_rebalance_delay_ms=100, min_session_timeout_ms=1, max_session_timeout_ms=10**6
)


def req(
    member_id: str = "",
    protocols: list[tuple[str, bytes]] | None = None,
    instance: str | None = None,
    session: int = 6000,
) -> JoinRequest:
    return JoinRequest(
        member_id=member_id,
        group_instance_id=instance,
        session_timeout_ms=session,
        rebalance_timeout_ms=10_000,
        protocol_type="consumer",
        protocols=[("range", b"r"), ("roundrobin", b"rr")] if protocols is None else protocols,
        client_id="c",
        client_host="/127.0.0.1",
        require_known_member_id=True,
        supports_skip_assignment=False,
    )


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    # Futures only: the loop never runs, the state machine completes them synchronously.
    new = asyncio.new_event_loop()
    yield new
    new.close()


def join(
    group: ClassicGroup, loop: asyncio.AbstractEventLoop, r: JoinRequest, now: int
) -> asyncio.Future[JoinResult]:
    fut: asyncio.Future[JoinResult] = loop.create_future()
    group.join(r, fut, now)
    return fut


def handshake(group: ClassicGroup, loop: asyncio.AbstractEventLoop, now: int) -> str:
    first = join(group, loop, req(), now).result()
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    return first.member_id


def sync(
    group: ClassicGroup,
    loop: asyncio.AbstractEventLoop,
    member: str,
    gen: int,
    now: int,
    assignments: dict[str, bytes] | None = None,
) -> asyncio.Future[SyncResult]:
    fut: asyncio.Future[SyncResult] = loop.create_future()
    group.sync(member, None, gen, None, None, assignments or {}, fut, now)
    return fut


def stable_group(loop: asyncio.AbstractEventLoop, n: int) -> tuple[ClassicGroup, list[str], int]:
    group = ClassicGroup("g", SETTINGS)
    ids = [handshake(group, loop, 0) for _ in range(n)]
    futs = [join(group, loop, req(i), 0) for i in ids]
    assert not any(f.done() for f in futs)  # the initial delay holds the join phase
    group.tick(100)
    if n > 1:
        # Members kept arriving during the first delay: Kafka extends it once more.
        assert not any(f.done() for f in futs)
        group.tick(200)
    results = [f.result() for f in futs]
    gen = results[0].generation_id
    leader = results[0].leader
    assert [len(r.members) for r in results] == [n if r.member_id == leader else 0 for r in results]
    followers = [sync(group, loop, i, gen, 200) for i in ids if i != leader]
    assert not any(f.done() for f in followers)
    lead = sync(group, loop, leader, gen, 200, {i: i.encode() for i in ids})
    assert lead.result().assignment == leader.encode()
    assert all(f.result().error == 0 for f in followers)
    assert group.state is GroupState.STABLE
    return group, ids, gen


def test_first_rebalance_waits_for_the_initial_delay_and_elects_one_leader(
    loop: asyncio.AbstractEventLoop,
) -> None:
    group, _, gen = stable_group(loop, 3)
    assert gen == 1 and group.protocol_name == "range" and len(group.members) == 3


def test_protocol_is_the_common_one(loop: asyncio.AbstractEventLoop) -> None:
    group = ClassicGroup("g", SETTINGS)
    a, b = handshake(group, loop, 0), handshake(group, loop, 0)
    fa = join(group, loop, req(a, [("roundrobin", b"1"), ("range", b"2")]), 0)
    fb = join(group, loop, req(b, [("sticky", b"3"), ("range", b"4")]), 0)
    group.tick(100)
    group.tick(200)
    assert fa.result().protocol_name == fb.result().protocol_name == "range"
    # A member with nothing in common is refused.
    c = handshake(group, loop, 0)
    assert join(group, loop, req(c, [("sticky", b"")]), 0).result().error == (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )


def test_empty_protocol_list_is_inconsistent(loop: asyncio.AbstractEventLoop) -> None:
    group = ClassicGroup("g", SETTINGS)
    result = join(group, loop, req(protocols=[]), 0).result()
    assert result.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_leave_triggers_rebalance_and_heartbeat_says_so(loop: asyncio.AbstractEventLoop) -> None:
    group, ids, gen = stable_group(loop, 3)
    assert group.leave(ids[2], None, 200, "bye") == 0
    assert group.state is GroupState.PREPARING_REBALANCE
    assert group.heartbeat(ids[0], None, gen, 200) == ErrorCode.REBALANCE_IN_PROGRESS
    assert sync(group, loop, ids[0], gen, 200).result().error == ErrorCode.REBALANCE_IN_PROGRESS
    f0 = join(group, loop, req(ids[0]), 300)
    assert not f0.done()
    f1 = join(group, loop, req(ids[1]), 300)
    assert f0.result().generation_id == f1.result().generation_id == gen + 1
    assert group.heartbeat(ids[0], None, gen, 300) == ErrorCode.ILLEGAL_GENERATION


def test_session_expiry_removes_member_then_absent_rejoiners(
    loop: asyncio.AbstractEventLoop,
) -> None:
    group, ids, gen = stable_group(loop, 2)
    group.heartbeat(ids[0], None, gen, 5000)
    group.tick(6199)
    assert group.state is GroupState.STABLE
    group.tick(6200)  # ids[1]'s session restarted when its join ended at 200
    assert ids[1] not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE
    f0 = join(group, loop, req(ids[0]), 6200)
    assert f0.result().generation_id == gen + 1 and f0.result().leader == ids[0]


def test_sync_from_non_member_and_wrong_generation(loop: asyncio.AbstractEventLoop) -> None:
    group, ids, gen = stable_group(loop, 1)
    assert sync(group, loop, "nobody", gen, 200).result().error == ErrorCode.UNKNOWN_MEMBER_ID
    assert sync(group, loop, ids[0], gen + 7, 200).result().error == ErrorCode.ILLEGAL_GENERATION
    assert sync(group, loop, ids[0], gen, 200).result().assignment == ids[0].encode()


def test_missing_sync_expires_after_rebalance_timeout(loop: asyncio.AbstractEventLoop) -> None:
    group = ClassicGroup("g", SETTINGS)
    a, b = handshake(group, loop, 0), handshake(group, loop, 0)
    fa, fb = join(group, loop, req(a), 0), join(group, loop, req(b), 0)
    group.tick(100)
    group.tick(200)
    leader = fa.result().leader
    follower = b if leader == a else a
    follower_sync = sync(group, loop, follower, 1, 250)
    group.tick(200 + 10_000)  # the leader never synced
    assert leader not in group.members
    assert follower_sync.result().error == ErrorCode.REBALANCE_IN_PROGRESS
    assert fb.done()


def test_static_member_rejoin_replaces_old_id_without_rebalance(
    loop: asyncio.AbstractEventLoop,
) -> None:
    group = ClassicGroup("g", SETTINGS)
    f = join(group, loop, req(instance="i1"), 0)
    group.tick(100)
    old = f.result().member_id
    sync(group, loop, old, 1, 100, {old: b"x"}).result()
    again = join(group, loop, req(instance="i1"), 200).result()
    assert again.error == 0 and again.member_id != old and again.generation_id == 1
    assert group.state is GroupState.STABLE
    assert group.heartbeat(old, "i1", 1, 200) == FENCED_INSTANCE_ID
    assert sync(group, loop, again.member_id, 1, 200).result().assignment == b"x"


def test_pending_member_expires(loop: asyncio.AbstractEventLoop) -> None:
    group = ClassicGroup("g", SETTINGS)
    pending = handshake(group, loop, 0)
    group.tick(6000)
    assert pending not in group.pending_members


def test_on_change_fires_when_stable_with_assignments_and_when_empty(
    loop: asyncio.AbstractEventLoop,
) -> None:
    seen: list[tuple[GroupState, int, dict[str, bytes]]] = []
    group = ClassicGroup(
        "g",
        SETTINGS,
        on_change=lambda g: seen.append(
            (g.state, g.generation_id, {m.member_id: m.assignment for m in g.members.values()})
        ),
    )
    a = handshake(group, loop, 0)
    fa = join(group, loop, req(a), 0)
    group.tick(100)
    assert fa.result().generation_id == 1 and seen == []  # CompletingRebalance: no record
    sync(group, loop, a, 1, 100, {a: b"asg"}).result()
    assert seen == [(GroupState.STABLE, 1, {a: b"asg"})]
    group.leave(a, None, 200, "bye")
    assert seen[-1] == (GroupState.EMPTY, 2, {})


def restored(now: int, on_change: Callable[[ClassicGroup], None] | None = None) -> ClassicGroup:
    group = ClassicGroup("g", SETTINGS, generation=4, protocol_type="consumer", on_change=on_change)
    session = 6000
    members = [
        Member("m1", None, "c", "/h", 10_000, session, "consumer", [("range", b"s1")], b"a1"),
        Member("m2", "i2", "c", "/h", 10_000, session, "consumer", [("range", b"s2")], b"a2"),
    ]
    group.restore("range", "m1", members, now)
    return group


def test_restored_group_is_stable_and_members_carry_on_without_rebalance(
    loop: asyncio.AbstractEventLoop,
) -> None:
    group = restored(1000)
    assert group.state is GroupState.STABLE and group.leader_id == "m1"
    assert group.heartbeat("m1", None, 4, 1500) == 0
    assert group.heartbeat("m2", "i2", 4, 1500) == 0
    assert group.heartbeat("m1", None, 3, 1500) == ErrorCode.ILLEGAL_GENERATION
    assert sync(group, loop, "m2", 4, 1500).result().assignment == b"a2"
    assert group.state is GroupState.STABLE and group.generation_id == 4


def test_restored_sessions_run_from_the_load(loop: asyncio.AbstractEventLoop) -> None:
    group = restored(1000)
    assert group.next_deadline() == 7000
    group.heartbeat("m1", None, 4, 5000)
    group.tick(6999)
    assert set(group.members) == {"m1", "m2"}
    group.tick(7000)  # m2 never came back after the restart
    assert set(group.members) == {"m1"} and group.state is GroupState.PREPARING_REBALANCE


def test_restored_static_member_can_rejoin_under_a_new_id(
    loop: asyncio.AbstractEventLoop,
) -> None:
    seen: list[str] = []
    group = restored(0, lambda g: seen.append(g.static_members["i2"]))
    again = join(group, loop, req(instance="i2", protocols=[("range", b"s2")]), 100).result()
    assert again.error == 0 and again.generation_id == 4 and again.member_id != "m2"
    assert seen == [again.member_id]  # the new id is persisted, as Kafka does


QUICK = GroupSettings(
    initial_rebalance_delay_ms=0, min_session_timeout_ms=1, max_session_timeout_ms=10**6
)


def join_req(member_id: str = "") -> JoinRequest:
    r = req(member_id)
    r.require_known_member_id = False
    return r


@pytest.mark.asyncio
async def test_coordinator_persists_stable_group_and_reloads_it_with_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CommittedOffsets.open(tmp_path)
    flushed: list[dict[str, GroupRecord | None]] = []
    real_flush = store.flush
    monkeypatch.setattr(store, "flush", lambda: (flushed.append(store.groups()), real_flush()))
    coordinator = GroupCoordinator(QUICK, store, Flusher())
    coordinator.start()
    try:
        joined = await coordinator.join("g", join_req())
        member = joined.member_id
        assert flushed == []  # CompletingRebalance: nothing written
        synced = await coordinator.sync(
            "g", member, None, joined.generation_id, "consumer", "range", {member: b"asg"}
        )
        assert synced.error == 0 and synced.assignment == b"asg"
        # The answer came after an fsync round that included the group's record.
        assert len(flushed) == 1 and flushed[0]["g"] is not None
        assert flushed[0]["g"].members[0].member_id == member
    finally:
        await coordinator.close()

    before = monotonic_ms()
    reloaded = GroupCoordinator(QUICK, CommittedOffsets.open(tmp_path), Flusher())
    reloaded.start()
    try:
        group = reloaded.describe("g")
        assert group is not None and group.state is GroupState.STABLE
        assert group.generation_id == joined.generation_id and group.leader_id == member
        m = group.members[member]
        assert (m.assignment, m.metadata("range"), m.client_id) == (b"asg", b"r", "c")
        assert m.deadline is not None and m.deadline >= before + 6000
        assert reloaded.heartbeat("g", member, None, joined.generation_id) == 0
        assert reloaded.validate_commit("g", member, None, joined.generation_id, 9) == 0
        resync = await reloaded.sync("g", member, None, joined.generation_id, None, None, {})
        assert resync.assignment == b"asg"
        # The member leaves: the group's Empty record replaces the Stable one.
        assert reloaded.leave("g", [(member, None, None)]) == (0, [0])
    finally:
        await reloaded.close()
    again = GroupCoordinator(QUICK, CommittedOffsets.open(tmp_path), Flusher())
    try:
        group = again.describe("g")
        assert group is not None and group.state is GroupState.EMPTY
        assert group.generation_id == joined.generation_id + 1 and not group.members
    finally:
        await again.close()


def stable_with_static_member(
    loop: asyncio.AbstractEventLoop, on_change: Callable[[ClassicGroup], None] | None = None
) -> tuple[ClassicGroup, str, str]:
    """A Stable generation 1 of a dynamic leader and a static member "b": (group, a, b)."""
    group = ClassicGroup("g", SETTINGS, on_change=on_change)
    a = handshake(group, loop, 0)
    fa = join(group, loop, req(a), 0)
    fb = join(group, loop, req(instance="b"), 0)
    group.tick(100)
    group.tick(200)
    b = fb.result().member_id
    assert fa.result().leader == a and fb.result().generation_id == 1
    follower = sync(group, loop, b, 1, 200)
    sync(group, loop, a, 1, 200, {a: b"asg-a", b: b"asg-b"})
    assert follower.result().assignment == b"asg-b" and group.state is GroupState.STABLE
    return group, a, b


def test_static_rejoin_in_stable_keeping_the_selected_protocol_does_not_rebalance(
    loop: asyncio.AbstractEventLoop,
) -> None:
    """GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin: only a change of
    the protocol selected for the next generation rebalances; new metadata (a changed
    subscription) for the same protocol is stored with the new member id, nothing more."""
    persisted: list[dict[str, bytes]] = []
    group, a, b = stable_with_static_member(
        loop,
        lambda g: persisted.append({m.member_id: m.metadata("range") for m in g.members.values()}),
    )
    changed = [("range", b"new-subscription"), ("roundrobin", b"rr")]
    again = join(group, loop, req(instance="b", protocols=changed), 300).result()
    assert again.error == 0 and again.member_id != b
    assert again.generation_id == 1 and again.protocol_name == "range"
    assert again.leader == a and again.members == []
    assert group.state is GroupState.STABLE and group.generation_id == 1
    # The other member is not disturbed: no REBALANCE_IN_PROGRESS on its heartbeat.
    assert group.heartbeat(a, None, 1, 300) == 0
    assert group.heartbeat(b, "b", 1, 300) == FENCED_INSTANCE_ID
    assert persisted[-1] == {a: b"r", again.member_id: b"new-subscription"}
    assert sync(group, loop, again.member_id, 1, 300).result().assignment == b"asg-b"


def test_static_rejoin_in_stable_changing_the_selected_protocol_rebalances(
    loop: asyncio.AbstractEventLoop,
) -> None:
    group, a, _ = stable_with_static_member(loop)
    pending = join(group, loop, req(instance="b", protocols=[("roundrobin", b"rr2")]), 300)
    assert not pending.done() and group.state is GroupState.PREPARING_REBALANCE
    assert group.heartbeat(a, None, 1, 300) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = join(group, loop, req(a), 300).result()
    assert rejoined.generation_id == pending.result().generation_id == 2
    assert pending.result().protocol_name == "roundrobin"


def test_static_leader_rejoin_in_stable_before_v9_is_told_the_old_leader_id(
    loop: asyncio.AbstractEventLoop,
) -> None:
    """KIP-814: before JoinGroup v9 Kafka answers with the leader id as it was before the
    replacement, so the restarted leader acts as a follower (its assignment stands); v9+
    tells it that it leads and hands it the members with skip_assignment."""
    group = ClassicGroup("g", SETTINGS)
    first = join(group, loop, req(instance="i1"), 0)
    group.tick(100)
    old = first.result().member_id
    sync(group, loop, old, 1, 100, {old: b"x"}).result()

    v5 = join(group, loop, req(instance="i1"), 200).result()
    assert v5.error == 0 and v5.member_id != old and v5.generation_id == 1
    assert v5.leader == old and v5.members == [] and not v5.skip_assignment
    assert group.leader_id == v5.member_id

    v9_request = req(instance="i1")
    v9_request.supports_skip_assignment = True
    v9 = join(group, loop, v9_request, 300).result()
    assert v9.leader == v9.member_id == group.leader_id and v9.skip_assignment
    assert v9.members == [(v9.member_id, "i1", b"r")]
    assert group.state is GroupState.STABLE and group.generation_id == 1


@pytest.mark.asyncio
async def test_close_right_after_a_leave_stops_the_timer(tmp_path: Path) -> None:
    # The leave wakes the timer task; the cancel of close() arriving in the same loop turn
    # was swallowed by Python 3.11's asyncio.wait_for, and close() then waited forever.
    coordinator = GroupCoordinator(QUICK, CommittedOffsets.open(tmp_path), Flusher())
    coordinator.start()
    joined = await coordinator.join("g", join_req())
    await coordinator.sync("g", joined.member_id, None, joined.generation_id, None, None, {})
    assert coordinator.leave("g", [(joined.member_id, None, None)]) == (0, [0])
    await asyncio.wait_for(coordinator.close(), 5)


@pytest.mark.asyncio
async def test_the_offsets_log_is_compacted_off_the_loop_keeping_commits_made_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 13: the coordinator's timer starts the compaction, a worker thread writes it,
    # and what is committed in between ends up in the compacted log as well.
    monkeypatch.setattr(committed_offsets, "COMPACT_SLACK", 10)
    store = CommittedOffsets.open(tmp_path)
    for i in range(40):
        store.commit("g", [("t", 0, CommittedOffset(i, -1, "", 0))])
    coordinator = GroupCoordinator(QUICK, store, Flusher())
    coordinator._maybe_compact()
    task = coordinator._compaction
    assert task is not None
    store.commit("g", [("t", 1, CommittedOffset(5, -1, "", 0))])  # while it is written
    await asyncio.wait_for(task, 10)
    assert store.compactions == 1
    store.close_unclean()
    reopened = CommittedOffsets.open(tmp_path)
    assert {tp: o.offset for tp, o in reopened.offsets("g").items()} == {("t", 0): 39, ("t", 1): 5}
    assert reopened.recovery.records == 2
