"""KIP-932 share groups' admin side over a raw socket: DescribeShareGroupOffsets (with lag),
AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups on share groups, their ACL
checks, one group id naming one kind of group (JoinGroup, ConsumerGroupHeartbeat), and share
groups with their offsets kept across a restart; what the broker stored checked in its
share-group files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.messages.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from protocol.messages.create_acls import CREATE_ACLS
from protocol.messages.delete_groups import DELETE_GROUPS
from protocol.messages.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.list_groups import LIST_GROUPS
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.share_group_describe import SHARE_GROUP_DESCRIBE
from protocol.messages.share_group_offsets import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
)
from protocol.primitives import ZERO_UUID
from protocol.schema import Message
from storage import share_group_store, share_state_store
from tests.e2e.test_share_groups_raw import (
    ACCEPT,
    acquired,
    fetch_until,
    heartbeat,
    produce_values,
    share_ack,
    share_fetch,
)
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_partitioned_topic
from tests.support.raw_client import RawClient

UNKNOWN_TOPIC_OR_PARTITION, INVALID_GROUP_ID, TOPIC_AUTH, GROUP_AUTH = 3, 24, 29, 30
INCONSISTENT_GROUP_PROTOCOL, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND = 23, 68, 69
UNKNOWN = "This server does not host this topic-partition."
SHARE = {"minikafka.share.version": "1"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running(tmp_path_factory.mktemp("share-offsets") / "data", SHARE) as proc:
        yield proc


def describe(
    client: RawClient, group: str, topics: list[tuple[str, list[int]]] | None, version: int = 1
) -> Message:
    named = None if topics is None else [Message(topic_name=t, partitions=p) for t, p in topics]
    answer = client.request(
        DESCRIBE_SHARE_GROUP_OFFSETS,
        version,
        Message(groups=[Message(group_id=group, topics=named)]),
    )
    return answer.groups[0]


def offsets(group: Message) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (start offset, leader epoch, lag)."""
    assert group.error_code == 0, group
    return {
        (t.topic_name, p.partition_index): (p.start_offset, p.leader_epoch, p.lag)
        for t in group.topics
        for p in t.partitions
    }


def alter(client: RawClient, group: str, starts: dict[str, list[tuple[int, int]]]) -> Message:
    return client.request(
        ALTER_SHARE_GROUP_OFFSETS,
        0,
        Message(
            group_id=group,
            topics=[
                Message(
                    topic_name=name,
                    partitions=[Message(partition_index=i, start_offset=o) for i, o in parts],
                )
                for name, parts in starts.items()
            ],
        ),
    )


def delete(client: RawClient, group: str, topics: list[str]) -> Message:
    return client.request(
        DELETE_SHARE_GROUP_OFFSETS,
        0,
        Message(group_id=group, topics=[Message(topic_name=t) for t in topics]),
    )


def delete_groups(client: RawClient, *groups: str) -> dict[str, int]:
    answer = client.request(DELETE_GROUPS, 2, Message(groups_names=list(groups)))
    return {r.group_id: r.error_code for r in answer.results}


def stored_states(data_dir: Path) -> dict[tuple[str, bytes, int], share_state_store.ShareState]:
    path = data_dir / share_state_store.FILE_NAME
    return share_state_store.decode(path.read_bytes()) if path.exists() else {}


def stored_groups(data_dir: Path) -> dict[str, share_group_store.SavedShareGroup]:
    path = data_dir / share_group_store.FILE_NAME
    return share_group_store.decode(path.read_bytes()) if path.exists() else {}


def consumer_join(client: RawClient, group: str, topic: str) -> Message:
    return client.request(
        CONSUMER_GROUP_HEARTBEAT,
        1,
        Message(
            group_id=group,
            member_id="c1",
            member_epoch=0,
            instance_id=None,
            rack_id=None,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=[topic],
            subscribed_topic_regex=None,
            server_assignor=None,
            topic_partitions=[],
        ),
    )


def test_describe_alter_and_delete_share_group_offsets(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        topic_id = create_partitioned_topic(client, "so-t", 2)
        joined = heartbeat(client, "so", "m1", 0, ["so-t"])
        assert joined.error_code == 0
        assert acquired(share_fetch(client, "so", "m1", 0, topic_id)) == []
        # Neither the join nor an empty fetch initializes a share-partition's state.
        assert describe(client, "so", None).topics == []
        produce_values(client, "so-t", 5)
        epoch, got = fetch_until(client, "so", "m1", 1, topic_id, 10)
        assert got == [(0, 4, 1)]
        answer = share_ack(client, "so", "m1", epoch, topic_id, [(0, 2, [ACCEPT])])
        assert answer.responses[0].partitions[0].error_code == 0
        # Every share-partition with a written state. Lag: the high watermark (5) less the
        # start offset (3) less nothing acknowledged past it.
        assert offsets(describe(client, "so", None)) == {("so-t", 0): (3, 0, 2)}
        # The member's next heartbeat initializes what it was assigned: partition 1 has no
        # state written yet (start and lag -1, as Kafka's uninitialized summary).
        assert heartbeat(client, "so", "m1", joined.member_epoch).error_code == 0
        assert offsets(describe(client, "so", None)) == {
            ("so-t", 0): (3, 0, 2),
            ("so-t", 1): (-1, 0, -1),
        }
        # Named: a partition without a state, an unknown topic (zero topic id).
        named = describe(client, "so", [("so-t", [0, 1]), ("so-missing", [0])])
        assert offsets(named) == {
            ("so-t", 0): (3, 0, 2),
            ("so-t", 1): (-1, 0, -1),
            ("so-missing", 0): (-1, 0, -1),
        }
        assert [bytes(t.topic_id) for t in named.topics] == [topic_id, ZERO_UUID]
        # v0 has no lag: the field is not on the wire.
        assert offsets(describe(client, "so", None, version=0)) == {
            ("so-t", 0): (3, 0, -1),
            ("so-t", 1): (-1, 0, -1),
        }
        # Nothing to describe for a group that does not exist.
        assert describe(client, "so-nobody", None).topics == []

        # A member is still in the group: nothing may be altered or deleted.
        busy = alter(client, "so", {"so-t": [(0, 0)]})
        assert (busy.error_code, busy.error_message) == (NON_EMPTY_GROUP, "The group is not empty.")
        assert delete(client, "so", ["so-t"]).error_code == NON_EMPTY_GROUP
        assert delete_groups(client, "so") == {"so": NON_EMPTY_GROUP}
        assert heartbeat(client, "so", "m1", -1).error_code == 0

        altered = alter(client, "so", {"so-t": [(0, 1), (1, 0), (7, 0)], "so-missing": [(0, 0)]})
        assert altered.error_code == 0, altered
        results = {
            (t.topic_name, p.partition_index): (p.error_code, p.error_message)
            for t in altered.responses
            for p in t.partitions
        }
        assert results == {
            ("so-t", 0): (0, None),
            ("so-t", 1): (0, None),
            ("so-t", 7): (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN),
            ("so-missing", 0): (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN),
        }
        # The altered state: nothing in flight, so the lag counts every record from the new
        # start offset.
        assert offsets(describe(client, "so", None)) == {
            ("so-t", 0): (1, 0, 4),
            ("so-t", 1): (0, 0, 0),
        }
        stored = stored_states(broker.data_dir)
        assert (stored[("so", topic_id, 0)].start_offset, stored[("so", topic_id, 0)].batches) == (
            1,
            (),
        )
        assert stored[("so", topic_id, 1)].start_offset == 0
        # A new member gets records 1-4 again, as first deliveries.
        assert heartbeat(client, "so", "m2", 0, ["so-t"]).error_code == 0
        _, got = fetch_until(client, "so", "m2", 0, topic_id, 10)
        assert got == [(1, 4, 1)]
        assert heartbeat(client, "so", "m2", -1).error_code == 0

        deleted = delete(client, "so", ["so-t", "so-missing", "so-t2"])
        assert deleted.error_code == 0, deleted
        assert [
            (t.topic_name, bytes(t.topic_id), t.error_code, t.error_message)
            for t in deleted.responses
        ] == [
            ("so-t", topic_id, 0, None),
            ("so-missing", ZERO_UUID, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN),
            ("so-t2", ZERO_UUID, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN),
        ]
        again = delete(client, "so", ["so-t"]).responses[0]
        assert (again.error_code, again.error_message) == (
            UNKNOWN_TOPIC_OR_PARTITION,
            "There is no offset information to delete.",
        )
        assert describe(client, "so", None).topics == []
        assert not [k for k in stored_states(broker.data_dir) if k[0] == "so"]
        # The group itself stays (Empty) until DeleteGroups, without initialized partitions.
        assert stored_groups(broker.data_dir)["so"].initialized == frozenset()


def test_offset_apis_refuse_missing_invalid_and_other_groups(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        create_partitioned_topic(client, "so-other", 1)
        assert consumer_join(client, "so-consumer", "so-other").error_code == 0
        for answer in (
            alter(client, "so-consumer", {"so-other": [(0, 0)]}),
            delete(client, "so-consumer", ["so-other"]),
        ):
            assert (answer.error_code, answer.error_message, answer.responses) == (
                GROUP_ID_NOT_FOUND,
                "Group so-consumer is not a share group.",
                [],
            )
        missing = delete(client, "so-absent", ["so-other"])
        assert (missing.error_code, missing.error_message) == (
            GROUP_ID_NOT_FOUND,
            "Group so-absent not found.",
        )
        for answer in (alter(client, "", {"so-other": [(0, 0)]}), delete(client, "", [])):
            assert (answer.error_code, answer.error_message) == (
                INVALID_GROUP_ID,
                "The group id is invalid.",
            )
        # AlterShareGroupOffsets makes the share group it names (Empty, epoch 1).
        assert alter(client, "so-made", {"so-other": [(0, 0)]}).error_code == 0
        made = client.request(
            SHARE_GROUP_DESCRIBE,
            1,
            Message(group_ids=["so-made"], include_authorized_operations=False),
        ).groups[0]
        assert (made.error_code, made.group_state, made.group_epoch) == (0, "Empty", 1)


def test_one_group_id_names_one_kind_of_group(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        create_partitioned_topic(client, "so-kind", 1)
        assert heartbeat(client, "so-share", "m1", 0, ["so-kind"]).error_code == 0
        for version in (5, 9):
            joined = client.request(
                JOIN_GROUP,
                version,
                Message(
                    group_id="so-share",
                    session_timeout_ms=10000,
                    rebalance_timeout_ms=10000,
                    member_id="",
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=[Message(name="range", metadata=b"")],
                    reason=None,
                ),
            )
            assert (joined.error_code, joined.member_id, joined.generation_id) == (
                INCONSISTENT_GROUP_PROTOCOL,
                "",
                -1,
            )
        refused = consumer_join(client, "so-share", "so-kind")
        assert (refused.error_code, refused.error_message, refused.member_id) == (
            GROUP_ID_NOT_FOUND,
            "Group so-share is not a consumer group.",
            None,
        )
        committed = client.request(
            OFFSET_COMMIT,
            9,
            Message(
                group_id="so-share",
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=[
                    Message(
                        name="so-kind",
                        partitions=[
                            Message(
                                partition_index=0,
                                committed_offset=0,
                                committed_leader_epoch=-1,
                                committed_metadata="",
                            )
                        ],
                    )
                ],
            ),
        )
        assert committed.topics[0].partitions[0].error_code == GROUP_ID_NOT_FOUND
        # Empty, the share group is deleted with its state by DeleteGroups.
        assert heartbeat(client, "so-share", "m1", -1).error_code == 0
        assert alter(client, "so-share", {"so-kind": [(0, 0)]}).error_code == 0
        assert any(k[0] == "so-share" for k in stored_states(broker.data_dir))
        assert delete_groups(client, "so-share", "so-never") == {
            "so-share": 0,
            "so-never": GROUP_ID_NOT_FOUND,
        }
        listed = client.request(LIST_GROUPS, 5, Message(states_filter=[], types_filter=[]))
        assert "so-share" not in [g.group_id for g in listed.groups]
        assert not any(k[0] == "so-share" for k in stored_states(broker.data_dir))
        assert "so-share" not in stored_groups(broker.data_dir)
        # The id is free again: a consumer group may take it.
        assert consumer_join(client, "so-share", "so-kind").error_code == 0


def test_offset_apis_check_acls(tmp_path: Path) -> None:
    overrides = {
        **SHARE,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    }
    with running(tmp_path / "data", overrides) as proc, RawClient(proc.port) as client:
        create_partitioned_topic(client, "acl-open", 1)
        create_partitioned_topic(client, "acl-hidden", 1)
        # ResourceType GROUP 3 / TOPIC 2; operations READ 3, DELETE 6, DESCRIBE 8; DENY 2.
        deny = [
            (3, "acl-g-read", 3),
            (3, "acl-g-describe", 8),
            (3, "acl-g-delete", 6),
            (2, "acl-hidden", 3),
            (2, "acl-hidden", 8),
        ]
        created = client.request(
            CREATE_ACLS,
            3,
            Message(
                creations=[
                    Message(
                        resource_type=rtype,
                        resource_name=name,
                        resource_pattern_type=3,
                        principal="User:ANONYMOUS",
                        host="*",
                        operation=op,
                        permission_type=2,
                    )
                    for rtype, name, op in deny
                ]
            ),
        )
        assert [r.error_code for r in created.results] == [0] * len(deny)
        refused = alter(client, "acl-g-read", {"acl-open": [(0, 0)]})
        assert (refused.error_code, refused.error_message) == (
            GROUP_AUTH,
            "Group authorization failed.",
        )
        refused = delete(client, "acl-g-delete", ["acl-open"])
        assert (refused.error_code, refused.error_message) == (
            GROUP_AUTH,
            "Group authorization failed.",
        )
        assert describe(client, "acl-g-describe", None).error_code == GROUP_AUTH
        # READ on each topic for Alter and Delete; DESCRIBE for Describe.
        altered = alter(client, "acl-g", {"acl-hidden": [(0, 0)], "acl-open": [(0, 0)]})
        assert [
            (t.topic_name, t.partitions[0].error_code, t.partitions[0].error_message)
            for t in altered.responses
        ] == [("acl-hidden", TOPIC_AUTH, "Topic authorization failed."), ("acl-open", 0, None)]
        alter(client, "acl-g", {"acl-open": [(0, 0)]})
        described = describe(client, "acl-g", [("acl-hidden", [0]), ("acl-open", [0])])
        assert [
            (t.topic_name, t.partitions[0].error_code, t.partitions[0].start_offset)
            for t in described.topics
        ] == [("acl-open", 0, 0), ("acl-hidden", TOPIC_AUTH, -1)]
        deleted = delete(client, "acl-g", ["acl-hidden", "acl-open"])
        assert [(t.topic_name, t.error_code) for t in deleted.responses] == [
            ("acl-hidden", TOPIC_AUTH),
            ("acl-open", 0),
        ]


def test_share_groups_and_offsets_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running(data, SHARE) as proc, RawClient(proc.port) as client:
        topic_id = create_partitioned_topic(client, "kept-t", 1)
        produce_values(client, "kept-t", 4)
        first = heartbeat(client, "kept", "m1", 0, ["kept-t"])
        assert first.error_code == 0
        assert heartbeat(client, "kept", "m1", -1).error_code == 0
        assert alter(client, "kept", {"kept-t": [(0, 2)]}).error_code == 0
        # A group config, read by the share-partitions made after the restart.
        other_id = create_partitioned_topic(client, "kept-t2", 1)
        produce_values(client, "kept-t2", 3)
        configured = client.request(
            INCREMENTAL_ALTER_CONFIGS,
            1,
            Message(
                resources=[
                    Message(
                        resource_type=32,
                        resource_name="kept",
                        configs=[
                            Message(
                                name="share.auto.offset.reset", config_operation=0, value="earliest"
                            )
                        ],
                    )
                ],
                validate_only=False,
            ),
        )
        assert configured.responses[0].error_code == 0
        epoch = (
            client.request(
                SHARE_GROUP_DESCRIBE,
                1,
                Message(group_ids=["kept"], include_authorized_operations=False),
            )
            .groups[0]
            .group_epoch
        )
    assert stored_groups(data) == {
        "kept": share_group_store.SavedShareGroup(epoch, frozenset({(topic_id, 0)}))
    }
    assert stored_states(data)[("kept", topic_id, 0)].start_offset == 2
    with running(data, SHARE) as proc, RawClient(proc.port) as client:
        listed = client.request(LIST_GROUPS, 5, Message(states_filter=[], types_filter=["share"]))
        assert [(g.group_id, g.group_state) for g in listed.groups] == [("kept", "Empty")]
        described = client.request(
            SHARE_GROUP_DESCRIBE,
            1,
            Message(group_ids=["kept"], include_authorized_operations=False),
        ).groups[0]
        assert (described.group_state, described.group_epoch, described.members) == (
            "Empty",
            epoch,
            [],
        )
        assert offsets(describe(client, "kept", None)) == {("kept-t", 0): (2, 0, 2)}
        # The id is still a share group's after the restart.
        assert consumer_join(client, "kept", "kept-t").error_code == GROUP_ID_NOT_FOUND
        joined = heartbeat(client, "kept", "m2", 0, ["kept-t"])
        assert joined.error_code == 0 and joined.member_epoch > epoch
        _, got = fetch_until(client, "kept", "m2", 0, topic_id, 10)
        assert got == [(2, 3, 1)]
        # share.auto.offset.reset=earliest kept: records from before the first fetch.
        with RawClient(proc.port) as other:
            assert heartbeat(other, "kept", "m3", 0, ["kept-t2"]).error_code == 0
            _, got = fetch_until(other, "kept", "m3", 0, other_id, 10)
            assert got == [(0, 2, 1)]
