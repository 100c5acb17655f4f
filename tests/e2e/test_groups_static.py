"""Static group members (KIP-345) over real sockets: a static member that restarts and rejoins
a Stable group with an unknown member id takes its old place; only a change of the group's
selected protocol makes Kafka rebalance (GroupMetadataManager
.updateStaticMemberThenRebalanceOrCompleteJoin). Checked on the response fields, on the
other member's heartbeats and on the group record the broker stored."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.heartbeat import HEARTBEAT
from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.sync_group import SYNC_GROUP
from protocol.schema import Message
from storage.committed_offsets import GroupRecord
from tests.support.broker_process import BrokerProcess, running
from tests.support.raw_client import RawClient
from tests.support.stored_groups import stored_groups

GROUP = "static-g"
INSTANCE = "inst-b"
REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID = 27, 79, 82
# Short enough that a wrongly started rebalance ends (and shows) well within a socket timeout.
REBALANCE_TIMEOUT_MS = 4000


def subscription(topics: list[str], user_data: bytes = b"") -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, user data."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", len(user_data)) + user_data


BOTH = [("range", subscription(["t"])), ("roundrobin", subscription(["t"]))]


def join_body(member_id: str, instance: str | None, protocols: list[tuple[str, bytes]]) -> Message:
    return Message(
        group_id=GROUP,
        session_timeout_ms=30_000,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=[Message(name=n, metadata=m) for n, m in protocols],
        reason=None,
    )


def sync_body(member_id: str, generation: int, assignments: dict[str, bytes]) -> Message:
    return Message(
        group_id=GROUP,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=None,
        protocol_type=None,
        protocol_name=None,
        assignments=[Message(member_id=m, assignment=a) for m, a in assignments.items()],
    )


def heartbeat(
    client: RawClient, member_id: str, generation: int, instance: str | None = None
) -> int:
    answer = client.request(
        HEARTBEAT,
        3,
        Message(
            group_id=GROUP,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
        ),
    )
    error: int = answer.error_code
    return error


def stored_group(data_dir: Path, tmp_path: Path) -> GroupRecord | None:
    """The group's record as the broker stored it in ``__consumer_offsets``."""
    del tmp_path  # read in place: the segment files are only read
    return stored_groups(data_dir).groups().get(GROUP)


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def quick_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    # No initial delay: the first join completes at once, so the test needs no waiting.
    with running(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}) as proc:
        yield proc


def form_group(port: int, a: RawClient, b: RawClient) -> tuple[str, str]:
    """Generation 2, Stable: dynamic leader A (joined first) and static member B."""
    required = a.request(JOIN_GROUP, 5, join_body("", None, BOTH))
    assert required.error_code == MEMBER_ID_REQUIRED
    a_id = required.member_id
    first = a.request(JOIN_GROUP, 5, join_body(a_id, None, BOTH))
    assert first.error_code == 0 and first.generation_id == 1 and first.leader == a_id
    assert a.request(SYNC_GROUP, 3, sync_body(a_id, 1, {a_id: b"a1"})).error_code == 0

    b.send(JOIN_GROUP, 5, join_body("", INSTANCE, BOTH))  # parked: a rebalance starts
    wait_until(lambda: heartbeat(a, a_id, 1) == REBALANCE_IN_PROGRESS, "the rebalance")
    led = a.request(JOIN_GROUP, 5, join_body(a_id, None, BOTH))
    joined = b.receive()[1]
    assert led.generation_id == joined.generation_id == 2 and joined.leader == a_id
    b_id = joined.member_id
    b.send(SYNC_GROUP, 3, sync_body(b_id, 2, {}))
    assert a.request(SYNC_GROUP, 3, sync_body(a_id, 2, {a_id: b"a2", b_id: b"b2"})).error_code == 0
    assert b.receive()[1].assignment == b"b2"
    return a_id, b_id


def test_static_member_rejoin_keeping_the_selected_protocol_does_not_rebalance(
    quick_broker: BrokerProcess, tmp_path: Path
) -> None:
    port = quick_broker.port
    with RawClient(port) as a, RawClient(port) as b:
        a_id, b_id = form_group(port, a, b)
    with RawClient(port) as a, RawClient(port, client_id="restarted") as b2:
        # B restarts: no member id, the same protocols, a changed subscription (user data).
        changed = [("range", subscription(["t"], b"v2")), ("roundrobin", subscription(["t"]))]
        again = b2.request(JOIN_GROUP, 5, join_body("", INSTANCE, changed))
        assert again.error_code == 0 and again.member_id not in ("", b_id)
        assert again.generation_id == 2 and again.protocol_name == "range"
        assert again.leader == a_id and list(again.members) == []
        # The other member is not disturbed; the replaced id is fenced.
        assert heartbeat(a, a_id, 2) == 0
        assert heartbeat(a, b_id, 2, INSTANCE) == FENCED_INSTANCE_ID
        synced = b2.request(SYNC_GROUP, 3, sync_body(again.member_id, 2, {}))
        assert synced.error_code == 0 and synced.assignment == b"b2"

        described = a.request(
            DESCRIBE_GROUPS, 5, Message(groups=[GROUP], include_authorized_operations=False)
        ).groups[0]
        assert described.group_state == "Stable"
        members = {m.member_id: m for m in described.members}
        assert set(members) == {a_id, again.member_id}
        assert members[again.member_id].client_id == "restarted"
        assert members[again.member_id].member_metadata == changed[0][1]

    # Kafka writes the group record before answering: the new member id, same generation.
    record = stored_group(quick_broker.data_dir, tmp_path)
    assert record is not None and record.generation == 2 and record.protocol_name == "range"
    assert record.leader == a_id
    stored = {m.member_id: m for m in record.members}
    assert set(stored) == {a_id, again.member_id}
    assert stored[again.member_id].group_instance_id == INSTANCE
    assert stored[again.member_id].subscription == changed[0][1]
    assert stored[again.member_id].assignment == b"b2"
    assert "preparing to rebalance (generation 2)" not in quick_broker.log_text()


def test_static_member_rejoin_changing_the_selected_protocol_rebalances(
    quick_broker: BrokerProcess, tmp_path: Path
) -> None:
    port = quick_broker.port
    with RawClient(port) as a, RawClient(port) as b:
        a_id, b_id = form_group(port, a, b)
    with RawClient(port) as a, RawClient(port) as b2:
        # Only roundrobin now: the group's next selected protocol can no longer be range.
        b2.send(JOIN_GROUP, 5, join_body("", INSTANCE, [("roundrobin", subscription(["t"]))]))
        wait_until(lambda: heartbeat(a, a_id, 2) == REBALANCE_IN_PROGRESS, "the rebalance")
        led = a.request(JOIN_GROUP, 5, join_body(a_id, None, BOTH))
        again = b2.receive()[1]
        assert led.generation_id == again.generation_id == 3
        assert led.protocol_name == again.protocol_name == "roundrobin"
        assert again.member_id != b_id and again.leader == a_id
        b2.send(SYNC_GROUP, 3, sync_body(again.member_id, 3, {}))
        assignments = {a_id: b"a3", again.member_id: b"b3"}
        assert a.request(SYNC_GROUP, 3, sync_body(a_id, 3, assignments)).error_code == 0
        assert b2.receive()[1].assignment == b"b3"

    record = stored_group(quick_broker.data_dir, tmp_path)
    assert record is not None and record.generation == 3 and record.protocol_name == "roundrobin"
    assert {m.member_id: m.assignment for m in record.members} == assignments
