"""Online migration over raw sockets, step by step against Kafka 4.0's GroupMetadataManager:
a classic member and a consumer-protocol member in one group (epochs, JoinGroup/SyncGroup/
Heartbeat answers, offsets), a restart in the middle, the downgrade when the consumer-protocol
member leaves, and the refusal when group.consumer.migration.policy forbids it. What the
broker stored (the group's kind and record in the __consumer_offsets topic) is checked too."""

from __future__ import annotations

import struct
from pathlib import Path

from broker.coordinator.groups import consumer_protocol as cp
from protocol.messages.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.heartbeat import HEARTBEAT
from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.list_groups import LIST_GROUPS
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.sync_group import SYNC_GROUP
from protocol.schema import Message
from tests.e2e.test_consumer_groups_raw import assigned, create, describe, heartbeat, join
from tests.support.broker_process import BrokerProcess, running
from tests.support.group_offsets import committed_topic
from tests.support.raw_client import RawClient
from tests.support.stored_groups import stored_groups

MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, GROUP_ID_NOT_FOUND = 79, 27, 69
GROUP_MAX_SIZE_REACHED = 81
ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID = 22, 23, 25
TOPIC, GROUP = "mig-raw", "mig-raw-group"


def subscription(owned: list[int] | None = None) -> bytes:
    """ConsumerProtocolSubscription v1: topics, null user data, owned partitions."""
    out = struct.pack(">hih", 1, 1, len(TOPIC)) + TOPIC.encode() + struct.pack(">i", -1)
    if not owned:
        return out + struct.pack(">i", 0)
    out += struct.pack(">ih", 1, len(TOPIC)) + TOPIC.encode()
    return out + struct.pack(f">i{len(owned)}i", len(owned), *owned)


def classic_join(
    client: RawClient,
    member_id: str,
    owned: list[int] | None = None,
    *,
    instance_id: str | None = None,
    rebalance_timeout_ms: int = 30_000,
) -> Message:
    return client.request(
        JOIN_GROUP,
        7,
        Message(
            group_id=GROUP,
            session_timeout_ms=30_000,
            rebalance_timeout_ms=rebalance_timeout_ms,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type="consumer",
            protocols=[Message(name="range", metadata=subscription(owned))],
            reason=None,
        ),
    )


def classic_sync(
    client: RawClient, member_id: str, generation: int, assignments: list[Message]
) -> Message:
    return client.request(
        SYNC_GROUP,
        5,
        Message(
            group_id=GROUP,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=assignments,
        ),
    )


def classic_heartbeat(client: RawClient, member_id: str, generation: int) -> int:
    answer = client.request(
        HEARTBEAT,
        4,
        Message(
            group_id=GROUP, generation_id=generation, member_id=member_id, group_instance_id=None
        ),
    )
    return int(answer.error_code)


def commit(client: RawClient, member_id: str, generation: int, version: int = 8) -> int:
    answer = client.request(
        OFFSET_COMMIT,
        version,
        Message(
            group_id=GROUP,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            retention_time_ms=-1,
            topics=[committed_topic(TOPIC, {0: 7}, None)],
        ),
    )
    return int(answer.topics[0].partitions[0].error_code)


def partitions_of(assignment: bytes) -> set[int]:
    return {p for _, ps in cp.decode_assignment(assignment).partitions for p in ps}


def group_kind(client: RawClient) -> tuple[str, str]:
    answer = client.request(LIST_GROUPS, 5, Message(states_filter=[], types_filter=[]))
    for g in answer.groups:
        if g.group_id == GROUP:
            return str(g.group_type), str(g.group_state)
    raise AssertionError(f"{GROUP} not listed")


def stable_classic_member(client: RawClient) -> tuple[str, int]:
    """One classic member, leader, owning all four partitions: (member id, generation)."""
    first = classic_join(client, "")
    assert first.error_code == MEMBER_ID_REQUIRED
    joined = classic_join(client, first.member_id)
    lead_with_every_partition(client, joined)
    return joined.member_id, joined.generation_id


def lead_with_every_partition(client: RawClient, joined: Message) -> None:
    """The lone member ``joined`` (checked to lead) syncs, assigning itself all four
    partitions."""
    assert joined.error_code == 0 and joined.leader == joined.member_id
    everything = cp.encode_assignment([(TOPIC, [0, 1, 2, 3])], 1)
    synced = classic_sync(
        client,
        joined.member_id,
        joined.generation_id,
        [Message(member_id=joined.member_id, assignment=everything)],
    )
    assert synced.error_code == 0


def test_classic_group_upgrades_serves_its_classic_member_and_downgrades(tmp_path: Path) -> None:
    with running(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}) as broker:
        with RawClient(broker.port) as client:
            topic_id = create(client, TOPIC, 4)
            classic_id, generation = stable_classic_member(client)
            assert group_kind(client) == ("classic", "Stable")

            # A consumer-protocol member joins: the group becomes a consumer group at the
            # classic generation, then the join bumps it.
            answer = join(client, GROUP, "new-member", [TOPIC])
            assert answer.error_code == 0, answer
            assert answer.member_epoch == generation + 1
            assert assigned(answer) == {}  # its partitions are still the classic member's
            broker.wait_for_log("Converted the classic group to a consumer group")
            described = describe(client, GROUP)
            assert described.error_code == 0 and described.group_epoch == generation + 1
            types = {m.member_id: (m.member_type, m.member_epoch) for m in described.members}
            assert types == {classic_id: (0, generation), "new-member": (1, generation + 1)}
            assert group_kind(client)[0] == "consumer"

            # The classic member goes on with its generation until it rejoins.
            assert commit(client, classic_id, generation) == 0
            assert commit(client, classic_id, generation + 5) == ILLEGAL_GENERATION
            assert classic_heartbeat(client, classic_id, generation) == REBALANCE_IN_PROGRESS
            assert classic_heartbeat(client, classic_id, 99) == ILLEGAL_GENERATION
            assert classic_heartbeat(client, "nobody", generation) == UNKNOWN_MEMBER_ID
            stale = classic_sync(client, classic_id, generation, [])
            assert stale.error_code == REBALANCE_IN_PROGRESS
            # Cooperative: it rejoins still owning everything, so it must revoke first.
            rejoined = classic_join(client, classic_id, owned=[0, 1, 2, 3])
            assert rejoined.error_code == 0
            assert rejoined.generation_id == generation  # epoch kept while revoking
            assert rejoined.protocol_name == "range" and rejoined.leader == ""
            assert rejoined.members == []
            synced = classic_sync(client, classic_id, rejoined.generation_id, [])
            assert synced.error_code == 0
            kept = partitions_of(synced.assignment)
            assert len(kept) == 2
            # It revoked the other two: rejoins owning only what it kept.
            again = classic_join(client, classic_id, owned=sorted(kept))
            assert again.generation_id == generation + 1
            synced = classic_sync(client, classic_id, again.generation_id, [])
            assert partitions_of(synced.assignment) == kept
            assert classic_heartbeat(client, classic_id, again.generation_id) == 0
            # The new member now gets the released partitions.
            answer = heartbeat(client, GROUP, "new-member", generation + 1, owned={topic_id: set()})
            assert answer.error_code == 0
            assert assigned(answer) == {topic_id: {0, 1, 2, 3} - kept}

        # A restart keeps the migrated group: both members, their epochs and kinds.
        broker.stop()
        broker = BrokerProcess(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"})
        broker.start()
        with RawClient(broker.port) as client:
            described = describe(client, GROUP)
            types = {m.member_id: (m.member_type, m.member_epoch) for m in described.members}
            assert types == {classic_id: (0, generation + 1), "new-member": (1, generation + 1)}
            assert classic_heartbeat(client, classic_id, generation + 1) == 0

            # The last consumer-protocol member leaves: back to a classic group (generation =
            # the group epoch), rebalancing so the classic member rejoins.
            left = heartbeat(client, GROUP, "new-member", -1)
            assert left.error_code == 0
            broker.wait_for_log("Converted the consumer group to a classic group")
            assert group_kind(client) == ("classic", "PreparingRebalance")
            groups = client.request(
                DESCRIBE_GROUPS, 5, Message(groups=[GROUP], include_authorized_operations=False)
            ).groups
            assert [m.member_id for m in groups[0].members] == [classic_id]
            assert classic_heartbeat(client, classic_id, generation + 1) == REBALANCE_IN_PROGRESS
            back = classic_join(client, classic_id, owned=sorted(kept))
            assert back.error_code == 0 and back.generation_id == generation + 2
            assert back.leader == classic_id
        broker.stop()
        store = stored_groups(broker.data_dir)
        try:
            assert GROUP not in store.consumer_groups()
            record = store.groups()[GROUP]
            assert record is not None and record.protocol_type == "consumer"
            assert store.offsets(GROUP)[(TOPIC, 0)].offset == 7
        finally:
            store.close()


def test_policy_disabled_keeps_each_kind(tmp_path: Path) -> None:
    with (
        running(
            tmp_path / "data",
            {
                "group.initial.rebalance.delay.ms": "0",
                "group.consumer.migration.policy": "disabled",
            },
        ) as broker,
        RawClient(broker.port) as client,
    ):
        create(client, TOPIC, 4)
        stable_classic_member(client)
        answer = join(client, GROUP, "new-member", [TOPIC])
        assert answer.error_code == GROUP_ID_NOT_FOUND
        assert answer.error_message == (
            f"Cannot upgrade classic group {GROUP} to consumer group because online "
            "upgrade is disabled."
        )
        # A consumer group refuses classic members.
        other = client.request(
            CONSUMER_GROUP_HEARTBEAT,
            1,
            Message(
                group_id="only-consumers",
                member_id="m",
                member_epoch=0,
                instance_id=None,
                rack_id=None,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=[TOPIC],
                subscribed_topic_regex=None,
                server_assignor=None,
                topic_partitions=[],
            ),
        )
        assert other.error_code == 0
        joined = client.request(
            JOIN_GROUP,
            7,
            Message(
                group_id="only-consumers",
                session_timeout_ms=30_000,
                rebalance_timeout_ms=30_000,
                member_id="",
                group_instance_id=None,
                protocol_type="consumer",
                protocols=[Message(name="range", metadata=subscription())],
                reason=None,
            ),
        )
        assert joined.error_code == INCONSISTENT_GROUP_PROTOCOL


def members_of(client: RawClient) -> dict[str, int]:
    """member id -> member type, as ConsumerGroupDescribe v1 reports them."""
    return {m.member_id: m.member_type for m in describe(client, GROUP).members}


def test_a_classic_member_that_never_syncs_is_fenced_after_its_rebalance_timeout(
    tmp_path: Path,
) -> None:
    with (
        running(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}) as broker,
        RawClient(broker.port) as client,
    ):
        create(client, TOPIC, 4)
        classic_id, _ = stable_classic_member(client)
        assert join(client, GROUP, "new-member", [TOPIC]).error_code == 0
        # A second classic member joins the consumer group but never sends SyncGroup.
        first = classic_join(client, "")
        assert first.error_code == MEMBER_ID_REQUIRED
        # Long enough that a loaded machine still sees it a member before it is fenced.
        silent = classic_join(client, first.member_id, rebalance_timeout_ms=2000)
        assert silent.error_code == 0
        assert set(members_of(client)) == {classic_id, "new-member", silent.member_id}
        broker.wait_for_log(
            f"member {silent.member_id} fenced: the member failed to sync within timeout",
            timeout=30,
        )
        assert silent.member_id not in members_of(client)


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades(
    tmp_path: Path,
) -> None:
    with (
        running(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}) as broker,
        RawClient(broker.port) as client,
    ):
        create(client, TOPIC, 4)
        classic_id, _ = stable_classic_member(client)
        joined = join(client, GROUP, "static-consumer", [TOPIC], instance_id="inst-1")
        assert joined.error_code == 0
        assert members_of(client) == {classic_id: 0, "static-consumer": 1}
        # The same instance comes back with the classic protocol (a downgraded client):
        # it takes the consumer member's place, and no consumer-protocol member is left.
        back = classic_join(client, "", instance_id="inst-1")
        assert back.error_code == 0 and back.member_id != "static-consumer"
        broker.wait_for_log("Converted the consumer group to a classic group")
        assert group_kind(client)[0] == "classic"
        groups = client.request(
            DESCRIBE_GROUPS, 5, Message(groups=[GROUP], include_authorized_operations=False)
        ).groups
        described = {m.member_id: m.group_instance_id for m in groups[0].members}
        assert described == {classic_id: None, back.member_id: "inst-1"}


def test_an_upgrade_that_would_overfill_the_group_leaves_it_classic(tmp_path: Path) -> None:
    with (
        running(
            tmp_path / "data",
            {"group.initial.rebalance.delay.ms": "0", "group.consumer.max.size": "1"},
        ) as broker,
        RawClient(broker.port) as client,
    ):
        create(client, TOPIC, 4)
        stable_classic_member(client)
        answer = join(client, GROUP, "new-member", [TOPIC])
        assert answer.error_code == GROUP_MAX_SIZE_REACHED
        assert answer.error_message == (
            "The consumer group has reached its maximum capacity of 1 members."
        )
        assert group_kind(client) == ("classic", "Stable")


def test_a_consumer_member_takes_over_a_classic_static_members_instance(tmp_path: Path) -> None:
    with (
        running(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}) as broker,
        RawClient(broker.port) as client,
    ):
        create(client, TOPIC, 4)
        joined = classic_join(client, "", instance_id="inst-2")
        lead_with_every_partition(client, joined)
        # The same instance restarted with group.protocol=consumer: it replaces the
        # classic incarnation at once, keeping its partitions.
        answer = join(client, GROUP, "upgraded", [TOPIC], instance_id="inst-2")
        assert answer.error_code == 0, answer
        assert members_of(client) == {"upgraded": 1}
        assert group_kind(client)[0] == "consumer"
