"""broker.groups.classic: the classic group state machine, driven with explicit time."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from broker.groups.classic import (
    FENCED_INSTANCE_ID,
    ClassicGroup,
    GroupSettings,
    GroupState,
    JoinRequest,
    JoinResult,
    SyncResult,
)
from protocol.errors import ErrorCode

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
