"""KIP-848 consumer groups over a raw socket: ConsumerGroupHeartbeat/Describe, offsets with
member epochs, ListGroups/DescribeGroups, and what the broker stored (the committed-offsets
log) across a restart."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from protocol.messages.consumer_group_describe import CONSUMER_GROUP_DESCRIBE
from protocol.messages.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.list_groups import LIST_GROUPS
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.offset_fetch import OFFSET_FETCH
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.group_offsets import committed_topic
from tests.support.produce import create_partitioned_topic
from tests.support.raw_client import RawClient
from tests.support.stored_groups import stored_groups

INVALID_REQUEST, UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND = 42, 25, 69
FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR = 110, 111, 112
STALE_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED, INVALID_REGULAR_EXPRESSION = 113, 81, 128
UNSUPPORTED_VERSION = 35

Owned = dict[bytes, set[int]]


def create(client: RawClient, name: str, partitions: int) -> bytes:
    return create_partitioned_topic(client, name, partitions)


def heartbeat(
    client: RawClient,
    group: str,
    member_id: str,
    epoch: int,
    *,
    topics: list[str] | None = None,
    owned: Owned | None = None,
    instance_id: str | None = None,
    rebalance_timeout_ms: int = -1,
    regex: str | None = None,
    assignor: str | None = None,
    version: int = 1,
) -> Message:
    return client.request(
        CONSUMER_GROUP_HEARTBEAT,
        version,
        Message(
            group_id=group,
            member_id=member_id,
            member_epoch=epoch,
            instance_id=instance_id,
            rack_id=None,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=topics,
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            topic_partitions=None
            if owned is None
            else [Message(topic_id=t, partitions=sorted(ps)) for t, ps in owned.items()],
        ),
    )


def join(client: RawClient, group: str, member_id: str, topics: list[str], **kw: object) -> Message:
    answer = heartbeat(
        client, group, member_id, 0, topics=topics, owned={}, rebalance_timeout_ms=30000, **kw
    )  # type: ignore[arg-type]
    return answer


def assigned(answer: Message) -> Owned:
    assert answer.assignment is not None, answer
    return {bytes(t.topic_id): set(t.partitions) for t in answer.assignment.topic_partitions}


def heartbeat_until(
    client: RawClient,
    group: str,
    member_id: str,
    epoch: int,
    owned: Owned,
    done: Callable[[Owned], bool],
    timeout: float,
) -> tuple[int, Owned]:
    """Heartbeat, owning what was assigned, until ``done(owned)``: a regex is resolved in the
    background (as Kafka does), so its assignment may come a heartbeat or more later.
    Answers the member's last epoch and assignment."""
    deadline = time.monotonic() + timeout
    while not done(owned):
        assert time.monotonic() < deadline, owned
        answer = heartbeat(client, group, member_id, epoch, owned=owned)
        assert answer.error_code == 0, answer
        epoch = answer.member_epoch
        if answer.assignment is not None:
            owned = assigned(answer)
    return epoch, owned


def describe(client: RawClient, group: str, version: int = 1) -> Message:
    answer = client.request(
        CONSUMER_GROUP_DESCRIBE,
        version,
        Message(group_ids=[group], include_authorized_operations=False),
    )
    result: Message = answer.groups[0]
    return result


class Member:
    """One raw member that owns what the broker gave it and heartbeats like a client."""

    def __init__(self, client: RawClient, group: str, member_id: str, topic: str) -> None:
        self.client, self.group, self.member_id = client, group, member_id
        answer = join(client, group, member_id, [topic])
        assert answer.error_code == 0, answer
        self.epoch = answer.member_epoch
        self.owned = assigned(answer)

    def beat(self) -> Message:
        answer = heartbeat(self.client, self.group, self.member_id, self.epoch, owned=self.owned)
        assert answer.error_code == 0, answer
        self.epoch = answer.member_epoch
        if answer.assignment is not None:
            self.owned = assigned(answer)
        return answer

    def partitions(self) -> set[int]:
        return {p for ps in self.owned.values() for p in ps}


def beat_until_stable(members: list[Member], client: RawClient, group: str) -> Message:
    deadline = time.monotonic() + 10
    while True:
        for m in members:
            m.beat()
        described = describe(client, group)
        if described.group_state == "Stable":
            return described
        assert time.monotonic() < deadline, described


def test_three_members_split_six_partitions_without_sharing_one(
    shared_broker: BrokerProcess,
) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "cg-split", 6)
        members = [Member(client, "cg-split", f"member-{i}", "cg-split") for i in range(3)]
        described = beat_until_stable(members, client, "cg-split")
        owned = [m.partitions() for m in members]
        assert sorted(len(p) for p in owned) == [2, 2, 2]
        assert set().union(*owned) == set(range(6))
        # The broker's view: every member at the assignment epoch with its target.
        assert described.group_epoch == described.assignment_epoch == 3
        assert described.assignor_name == "uniform"
        for m in described.members:
            assert m.member_epoch == 3 and m.member_type == 1
            assert m.assignment == m.target_assignment
            assert m.assignment.topic_partitions[0].topic_name == "cg-split"


def test_a_partition_reaches_its_new_owner_only_after_the_old_one_revoked_it(
    shared_broker: BrokerProcess,
) -> None:
    with RawClient(shared_broker.port) as client:
        topic_id = create(client, "cg-revoke", 4)
        first = Member(client, "cg-revoke", "first", "cg-revoke")
        assert first.partitions() == {0, 1, 2, 3} and first.epoch == 1
        second = Member(client, "cg-revoke", "second", "cg-revoke")
        # The target gives two partitions to the newcomer, but the first member still holds
        # them: the newcomer gets nothing yet (UNRELEASED_PARTITIONS) at the new epoch.
        assert second.partitions() == set() and second.epoch == 2
        # The first member is told to keep two; its epoch does not move until it revokes.
        still_owned = dict(first.owned)
        answer = heartbeat(client, "cg-revoke", "first", 1, owned=still_owned)
        assert answer.member_epoch == 1
        kept = assigned(answer)[topic_id]
        assert len(kept) == 2
        assert describe(client, "cg-revoke").group_state == "Reconciling"
        assert second.beat().member_epoch == 2 and second.partitions() == set()
        # Revoked (owned no longer lists them): the first member reaches epoch 2 ...
        first.owned = {topic_id: kept}
        assert first.beat().member_epoch == 2
        # ... and only now are the released partitions given to the second.
        second.beat()
        assert second.partitions() == {0, 1, 2, 3} - kept
        assert describe(client, "cg-revoke").group_state == "Stable"


def test_a_member_that_leaves_or_times_out_hands_its_partitions_over(tmp_path: Path) -> None:
    broker = BrokerProcess(
        tmp_path / "data",
        {
            "group.consumer.session.timeout.ms": "1500",
            "group.consumer.heartbeat.interval.ms": "100",
        },
    ).start()
    try:
        with RawClient(broker.port) as client:
            create(client, "cg-leave", 6)
            members = [Member(client, "cg-leave", f"m{i}", "cg-leave") for i in range(3)]
            assert members[0].beat().heartbeat_interval_ms == 100
            beat_until_stable(members, client, "cg-leave")
            # m0 leaves with epoch -1: answered with its id and -1, then removed.
            answer = heartbeat(client, "cg-leave", "m0", -1)
            assert (answer.error_code, answer.member_id, answer.member_epoch) == (0, "m0", -1)
            beat_until_stable(members[1:], client, "cg-leave")
            assert sorted(len(m.partitions()) for m in members[1:]) == [3, 3]
            # m1 goes silent: after the session timeout m2 is given everything.
            deadline = time.monotonic() + 10
            while members[2].partitions() != set(range(6)):
                assert time.monotonic() < deadline
                members[2].beat()
                time.sleep(0.1)  # the heartbeat interval a client keeps; not synchronisation
            described = describe(client, "cg-leave")
            assert [m.member_id for m in described.members] == ["m2"]
            assert broker.wait_for_log("member m1 fenced: the member session expired")
    finally:
        broker.stop()


def test_heartbeat_errors_are_kafkas(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "cg-errors", 2)

        def error(answer: Message) -> tuple[int, str | None]:
            # Kafka's error answers: no member id, epoch 0, interval 0.
            assert (answer.member_id, answer.member_epoch, answer.heartbeat_interval_ms) == (
                None,
                0,
                0,
            )
            return answer.error_code, answer.error_message

        assert error(heartbeat(client, "cg-errors", "", 0, topics=["cg-errors"], owned={})) == (
            INVALID_REQUEST,
            "MemberId can't be empty.",
        )
        assert error(heartbeat(client, "cg-errors", "a", 0, topics=["cg-errors"], owned={})) == (
            INVALID_REQUEST,
            "RebalanceTimeoutMs must be provided in first request.",
        )
        assert error(
            heartbeat(client, "cg-errors", "a", 0, owned={}, rebalance_timeout_ms=1000)
        ) == (
            INVALID_REQUEST,
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
            "(re-)joining.",
        )
        assert error(heartbeat(client, "cg-errors", "a", -3)) == (
            INVALID_REQUEST,
            "MemberEpoch is invalid.",
        )
        assert error(join(client, "cg-errors", "a", ["cg-errors"], assignor="sticky")) == (
            UNSUPPORTED_ASSIGNOR,
            "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
        )
        code, message = error(join(client, "cg-errors", "a", [], regex="cg-[", version=1))
        assert code == INVALID_REGULAR_EXPRESSION and message is not None
        assert message.startswith("SubscribedTopicRegex `cg-[` is not a valid regular expression")
        assert error(heartbeat(client, "cg-none", "a", 1, owned={})) == (
            GROUP_ID_NOT_FOUND,
            "Consumer group cg-none not found.",
        )
        assert join(client, "cg-errors", "a", ["cg-errors"]).member_epoch == 1
        assert error(heartbeat(client, "cg-errors", "b", 1, owned={})) == (
            UNKNOWN_MEMBER_ID,
            "Member b is not a member of group cg-errors.",
        )
        code, message = error(heartbeat(client, "cg-errors", "a", 5, owned={}))
        assert code == FENCED_MEMBER_EPOCH and message is not None
        assert "greater member epoch (5)" in message
        # Static membership: the instance id is held until its owner leaves with -2.
        assert join(client, "cg-errors", "s1", ["cg-errors"], instance_id="i").error_code == 0
        assert error(join(client, "cg-errors", "s2", ["cg-errors"], instance_id="i")) == (
            UNRELEASED_INSTANCE_ID,
            "Static member s2 with instance id i cannot join the group because the instance "
            "id is owned by s1 member.",
        )
        left = heartbeat(client, "cg-errors", "s1", -2, instance_id="i")
        assert (left.error_code, left.member_epoch) == (0, -2)
        rejoined = join(client, "cg-errors", "s2", ["cg-errors"], instance_id="i")
        assert rejoined.error_code == 0
        ids = sorted(m.member_id for m in describe(client, "cg-errors").members)
        assert ids == ["a", "s2"]


def test_group_max_size_is_enforced(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", {"group.consumer.max.size": "1"}).start()
    try:
        with RawClient(broker.port) as client:
            create(client, "cg-max", 1)
            assert join(client, "cg-max", "one", ["cg-max"]).error_code == 0
            answer = join(client, "cg-max", "two", ["cg-max"])
            assert (answer.error_code, answer.error_message) == (
                GROUP_MAX_SIZE_REACHED,
                "The consumer group has reached its maximum capacity of 1 members.",
            )
    finally:
        broker.stop()


def test_regex_subscription_picks_matching_topics(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "cg-rx-a", 1)
        create(client, "cg-rx-b", 2)
        create(client, "other-rx", 1)
        answer = join(client, "cg-regex", "r", [], regex="cg-rx-.*")
        # The regex is resolved in the background (as Kafka does): the assignment may come
        # a heartbeat or more after the join.
        heartbeat_until(
            client,
            "cg-regex",
            "r",
            answer.member_epoch,
            assigned(answer),
            lambda owned: sum(len(p) for p in owned.values()) >= 3,
            10,
        )
        described = describe(client, "cg-regex")
        [member] = described.members
        assert member.subscribed_topic_regex == "cg-rx-.*"
        names = {t.topic_name: sorted(t.partitions) for t in member.assignment.topic_partitions}
        assert names == {"cg-rx-a": [0], "cg-rx-b": [0, 1]}


def test_offsets_are_checked_against_member_epochs(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "cg-offsets", 1)
        member = Member(client, "cg-offsets", "c", "cg-offsets")

        def commit(version: int, epoch: int) -> int:
            answer = client.request(
                OFFSET_COMMIT,
                version,
                Message(
                    group_id="cg-offsets",
                    generation_id_or_member_epoch=epoch,
                    member_id="c",
                    group_instance_id=None,
                    topics=[committed_topic("cg-offsets", {0: 7}, "m")],
                ),
            )
            code: int = answer.topics[0].partitions[0].error_code
            return code

        assert commit(9, member.epoch + 1) == STALE_MEMBER_EPOCH
        assert commit(8, member.epoch) == UNSUPPORTED_VERSION
        assert commit(9, member.epoch) == 0

        def fetch(member_id: str | None, epoch: int) -> Message:
            answer = client.request(
                OFFSET_FETCH,
                9,
                Message(
                    groups=[
                        Message(
                            group_id="cg-offsets",
                            member_id=member_id,
                            member_epoch=epoch,
                            topics=None,
                        )
                    ],
                    require_stable=True,
                ),
            )
            result: Message = answer.groups[0]
            return result

        assert fetch("c", member.epoch + 1).error_code == STALE_MEMBER_EPOCH
        assert fetch("nobody", 1).error_code == UNKNOWN_MEMBER_ID
        fetched = fetch("c", member.epoch)
        assert fetched.error_code == 0
        assert fetched.topics[0].partitions[0].committed_offset == 7
        assert fetch(None, -1).topics[0].partitions[0].committed_offset == 7


def test_list_and_describe_groups_tell_consumer_groups_apart(
    shared_broker: BrokerProcess,
) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "cg-listed", 1)
        Member(client, "cg-listed", "l", "cg-listed")
        listed = client.request(
            LIST_GROUPS, 5, Message(states_filter=[], types_filter=["consumer"])
        )
        mine = [g for g in listed.groups if g.group_id == "cg-listed"]
        assert [(g.protocol_type, g.group_state, g.group_type) for g in mine] == [
            ("consumer", "Stable", "consumer")
        ]
        classic_only = client.request(
            LIST_GROUPS, 5, Message(states_filter=[], types_filter=["classic"])
        )
        assert "cg-listed" not in [g.group_id for g in classic_only.groups]
        described = client.request(
            DESCRIBE_GROUPS, 6, Message(groups=["cg-listed"], include_authorized_operations=False)
        ).groups[0]
        assert (described.error_code, described.error_message, described.group_state) == (
            GROUP_ID_NOT_FOUND,
            "Group cg-listed is not a classic group.",
            "Dead",
        )
        missing = describe(client, "cg-missing", version=0)
        assert (missing.error_code, missing.error_message) == (
            GROUP_ID_NOT_FOUND,
            "Group cg-missing not found.",
        )


def test_a_consumer_group_survives_a_restart_with_its_epochs_and_assignments(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        with RawClient(broker.port) as client:
            topic_id = create(client, "cg-restart", 3)
            members = [Member(client, "cg-restart", f"p{i}", "cg-restart") for i in range(2)]
            before = beat_until_stable(members, client, "cg-restart")
    finally:
        broker.stop()
    # What the broker stored: the group record with both members at the assignment epoch.
    stored = stored_groups(data).consumer_groups()["cg-restart"]
    assert (stored.group_epoch, stored.assignment_epoch) == (2, 2)
    owned = {m.member_id: {p for _, ps in m.assigned for p in ps} for m in stored.members}
    assert owned == {m.member_id: m.partitions() for m in members}
    assert all(m.assigned[0][0] == topic_id for m in stored.members)
    broker = BrokerProcess(data, {"listeners": f"PLAINTEXT://127.0.0.1:{broker.port}"}).start()
    try:
        with RawClient(broker.port) as client:
            after = describe(client, "cg-restart")
            assert (after.group_state, after.group_epoch) == ("Stable", before.group_epoch)
            # Members carry on with their epochs: no fencing, no new assignment.
            for m in members:
                m.client = client
                kept = m.partitions()
                assert m.beat().member_epoch == 2
                assert m.partitions() == kept
    finally:
        broker.stop()
