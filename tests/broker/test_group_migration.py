"""The conversions of online migration on their own: the embedded consumer protocol, a classic
group as a consumer group (Kafka's ConsumerGroup.fromClassicGroup) and back
(ClassicGroup.fromConsumerGroup)."""

from __future__ import annotations

import struct

import pytest

from broker.coordinator.groups import consumer_protocol as cp
from broker.coordinator.groups.classic import ClassicGroup, GroupSettings, Member
from broker.coordinator.groups.consumer import MemberState
from broker.coordinator.groups.migration import (
    CustomAssignorInUse,
    to_classic_members,
    to_consumer_group,
)

SETTINGS = GroupSettings(
    initial_rebalance_delay_ms=0, min_session_timeout_ms=1, max_session_timeout_ms=10**9
)
TOPICS = {"t": (b"\x01" * 16, 4), "u": (b"\x02" * 16, 2)}
T, U = TOPICS["t"][0], TOPICS["u"][0]


def subscription(
    version: int, topics: list[str], owned: list[int] = (), rack: str | None = None
) -> bytes:  # type: ignore[assignment]
    out = struct.pack(">hi", version, len(topics))
    for name in topics:
        out += struct.pack(">h", len(name)) + name.encode()
    out += struct.pack(">i", -1)
    if version >= 1:
        if owned:
            out += (
                struct.pack(">ih", 1, 1)
                + b"t"
                + struct.pack(f">i{len(owned)}i", len(owned), *owned)
            )
        else:
            out += struct.pack(">i", 0)
    if version >= 2:
        out += struct.pack(">i", 7)
    if version >= 3:
        out += (
            struct.pack(">h", -1) if rack is None else struct.pack(">h", len(rack)) + rack.encode()
        )
    return out


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscriptions_of_every_version_are_read(version: int) -> None:
    decoded = cp.decode_subscription(subscription(version, ["t", "u"], [1, 2], "r1"))
    assert decoded.topics == ["t", "u"]
    assert decoded.owned_partitions == ([("t", [1, 2])] if version >= 1 else [])
    assert decoded.generation_id == (7 if version >= 2 else -1)
    assert decoded.rack_id == ("r1" if version >= 3 else None)


def test_assignments_round_trip_and_malformed_input_is_refused() -> None:
    data = cp.encode_assignment([("t", [0, 3]), ("u", [1])], 1)
    assert cp.version_of(data) == 1
    assert cp.decode_assignment(data) == cp.Assignment([("t", [0, 3]), ("u", [1])], None)
    for bad in (b"", b"\x00", data[:-3], struct.pack(">hi", 0, 2**30)):
        with pytest.raises(cp.MalformedProtocol):
            cp.decode_assignment(bad)
        with pytest.raises(cp.MalformedProtocol):
            cp.decode_subscription(bad)


def member(member_id: str, assignment: bytes, topics: list[str] = ["t"]) -> Member:  # noqa: B006
    return Member(
        member_id=member_id,
        group_instance_id=None,
        client_id="c",
        client_host="/h",
        rebalance_timeout_ms=1000,
        session_timeout_ms=6000,
        protocol_type="consumer",
        protocols=[("range", subscription(1, topics)), ("roundrobin", subscription(1, topics))],
        assignment=assignment,
    )


def test_a_classic_group_becomes_a_consumer_group_at_its_generation() -> None:
    classic = ClassicGroup("g", SETTINGS, generation=5, protocol_type="consumer")
    members = [
        member("a", cp.encode_assignment([("t", [0, 1]), ("gone", [0])], 1)),
        member("b", cp.encode_assignment([("t", [2, 3])], 1)),
        member("c", b""),  # joined, never synced
    ]
    classic.restore("range", "a", members, 0)
    group = to_consumer_group(classic, TOPICS)
    assert (group.group_epoch, group.assignment_epoch) == (5, 5)
    a = group.members["a"]
    assert (a.member_epoch, a.previous_member_epoch, a.state) == (5, 5, MemberState.STABLE)
    # A topic that no longer exists is left out, as Kafka's toTopicPartitionMap.
    assert a.assigned == {T: frozenset({0, 1})} == group.target["a"]
    assert group.members["c"].assigned == {}
    assert a.subscribed_topic_names == ("t",)
    assert a.uses_classic_protocol and a.classic_session_timeout_ms == 6000
    assert [name for name, _ in a.classic_protocols] == ["range", "roundrobin"]


def test_user_data_of_a_custom_assignor_refuses_the_upgrade() -> None:
    classic = ClassicGroup("g", SETTINGS, generation=2, protocol_type="consumer")
    data = cp.encode_assignment([("t", [0])], 1)[:-4] + struct.pack(">i", 2) + b"xy"
    classic.restore("range", "a", [member("a", data)], 0)
    with pytest.raises(CustomAssignorInUse):
        to_consumer_group(classic, TOPICS)


def test_back_to_classic_members_with_their_target_assignments() -> None:
    classic = ClassicGroup("g", SETTINGS, generation=3, protocol_type="consumer")
    classic.restore(
        "range",
        "a",
        [member("a", cp.encode_assignment([("t", [0, 1])], 1)), member("b", b"")],
        0,
    )
    group = to_consumer_group(classic, TOPICS)
    group.target["b"] = {T: frozenset({2, 3}), U: frozenset({0})}
    names = {tid: name for name, (tid, _) in TOPICS.items()}
    protocol, members = to_classic_members(group, {"a"}, names)
    assert protocol == "range"
    assert [m.member_id for m in members] == ["b"]
    assert cp.decode_assignment(members[0].assignment).partitions == [("t", [2, 3]), ("u", [0])]
    assert cp.version_of(members[0].assignment) == 1
