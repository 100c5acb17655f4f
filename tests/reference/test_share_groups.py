"""Share groups (KIP-932): one raw conversation against Apache Kafka 4.4.0 (its jars, share
groups on by default there) and against minikafka with minikafka.share.version=1, compared.

What is compared: ApiVersions' share-group API versions, ShareGroupHeartbeat's errors and
messages, ShareGroupDescribe's answers and their order, ShareFetch's acquired records,
acknowledgements (ACCEPT, RELEASE, REJECT, below the start offset, a bad range), share
session epochs and the final epoch, leaving. Not compared: the group epoch values (Kafka
bumps it once more when the share-group state is initialized) and timings. Then three Java
KafkaShareConsumers pass the same checks on both. A second conversation compares the admin
side: Describe/Alter/DeleteShareGroupOffsets (start offsets, lag, errors and messages),
DeleteGroups, ListGroups and DescribeGroups on a share group, and JoinGroup and
ConsumerGroupHeartbeat refusing a share group's id.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from protocol.messages.delete_groups import DELETE_GROUPS
from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.messages.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.list_groups import LIST_GROUPS
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.offset_fetch import OFFSET_FETCH
from protocol.messages.share_group_describe import SHARE_GROUP_DESCRIBE
from protocol.messages.share_group_offsets import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
)
from protocol.records import build_batch
from protocol.schema import Message
from tests.compat.test_java_share_consumer import (
    DELIVERY_LIMIT,
    RECORDS,
    check_deliveries,
    compile_program,
    produce_records,
    run_java,
)
from tests.e2e.test_share_groups_raw import (
    ACCEPT,
    REJECT,
    RELEASE,
    heartbeat,
    produce_values,
    share_ack,
    share_fetch,
)
from tests.support.broker_process import BrokerProcess, running
from tests.support.kafka_reference import KafkaReference
from tests.support.produce import create_partitioned_topic, produce
from tests.support.raw_client import RawClient

MEMBER = "member-aaaaaaaaaaaaaaaaaaaaa"
NOT_LEADER = 6
# Errors a coordinator answers while it loads its partition: asked again.
LOADING = (14, 15, 16)


@pytest.fixture(scope="module")
def kafka_44() -> Iterator[KafkaReference]:
    ref = KafkaReference(
        "4.4.0", overrides={"group.share.delivery.count.limit": str(DELIVERY_LIMIT)}
    )
    ref.start()
    try:
        yield ref
    finally:
        ref.stop()


@pytest.fixture(scope="module")
def ours_shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = Path(tmp_path_factory.mktemp("share-reference")) / "data"
    overrides = {
        "minikafka.share.version": "1",
        "group.share.delivery.count.limit": str(DELIVERY_LIMIT),
    }
    with running(data, overrides) as proc:
        yield proc


def _acquired(answer: Message) -> list[tuple[int, int, int]]:
    return [
        (r.first_offset, r.last_offset, r.delivery_count)
        for t in answer.responses
        for p in t.partitions
        for r in p.acquired_records
    ]


def _ack_errors(answer: Message) -> tuple[int, list[int]]:
    return answer.error_code, [p.error_code for t in answer.responses for p in t.partitions]


def _join_group(
    client: RawClient, group: str, topic: str, keys: range
) -> tuple[list[tuple[int, int, int]], str, Message, float]:
    """ApiVersions' entries for ``keys``, then the group's coordinator found, ``topic``
    created and MEMBER joined (asked again while the coordinator loads): the versions, the
    topic's id, the join's answer and the conversation's deadline."""
    versions = client.request(
        API_VERSIONS, 4, Message(client_software_name="raw", client_software_version="1")
    )
    entries = [
        (k.api_key, k.min_version, k.max_version) for k in versions.api_keys if k.api_key in keys
    ]
    deadline = time.monotonic() + 60
    while True:
        found = client.request(FIND_COORDINATOR, 6, Message(key_type=0, coordinator_keys=[group]))
        if all(c.error_code == 0 for c in found.coordinators):
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.3)
    topic_id = create_partitioned_topic(client, topic, 1)
    while (joined := heartbeat(client, group, MEMBER, 0, [topic])).error_code in LOADING:
        assert time.monotonic() < deadline, joined
        time.sleep(0.3)
    return entries, topic_id, joined, deadline


def conversation(port: int) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    with RawClient(port) as a, RawClient(port) as b:
        seen["versions"], topic_id, joined, deadline = _join_group(
            a, "sq", "share-ref", range(76, 80)
        )
        seen["join"] = (joined.error_code, joined.heartbeat_interval_ms, joined.assignment)
        for label, answer in (
            ("empty member id", heartbeat(a, "sq", "", 0, ["share-ref"])),
            ("unknown member", heartbeat(a, "sq", "zzz", 3)),
            ("fenced", heartbeat(a, "sq", MEMBER, joined.member_epoch + 50)),
            ("no topics first", heartbeat(a, "sq", "m2", 0)),
            ("missing group", heartbeat(a, "sq-none", "m2", 3)),
        ):
            seen[label] = (answer.error_code, answer.error_message, answer.member_id)
        described = a.request(
            SHARE_GROUP_DESCRIBE,
            1,
            Message(group_ids=["sq", "sq-none", ""], include_authorized_operations=False),
        ).groups
        seen["describe"] = [
            (
                g.error_code,
                g.error_message,
                g.group_id,
                g.group_state,
                g.assignor_name,
                *((m.member_id, m.client_id, m.subscribed_topic_names) for m in g.members),
            )
            for g in described
        ]
        configured = a.request(
            INCREMENTAL_ALTER_CONFIGS,
            1,
            Message(
                resources=[
                    Message(
                        resource_type=32,
                        resource_name="sq",
                        configs=[
                            Message(
                                name="share.auto.offset.reset",
                                config_operation=0,
                                value="earliest",
                            )
                        ],
                    )
                ],
                validate_only=False,
            ),
        )
        assert configured.responses[0].error_code == 0, configured
        produce_values(a, "share-ref", 6)
        epoch, got = 0, []
        while not got:
            assert time.monotonic() < deadline, "nothing acquired"
            got = _acquired(share_fetch(a, "sq", MEMBER, epoch, topic_id, max_wait_ms=500))
            epoch += 1
        seen["acquired"] = got
        seen["ack"] = _ack_errors(
            share_ack(a, "sq", MEMBER, epoch, topic_id, [(0, 3, [ACCEPT, ACCEPT, RELEASE, REJECT])])
        )
        epoch += 1
        seen["ack below start"] = _ack_errors(
            share_ack(a, "sq", MEMBER, epoch, topic_id, [(0, 0, [ACCEPT])])
        )
        epoch += 1
        seen["ack released"] = _ack_errors(
            share_ack(a, "sq", MEMBER, epoch, topic_id, [(2, 2, [ACCEPT])])
        )
        epoch += 1
        seen["ack bad range"] = _ack_errors(
            share_ack(a, "sq", MEMBER, epoch, topic_id, [(5, 4, [ACCEPT])])
        )
        epoch += 1
        seen["bad epoch"] = share_ack(a, "sq", MEMBER, 99, topic_id, []).error_code
        seen["no session"] = share_ack(a, "sq", "nobody", 1, topic_id, []).error_code
        seen["ack epoch 0"] = share_ack(a, "sq", MEMBER, 0, topic_id, []).error_code
        seen["fetch 0 with acks"] = share_fetch(
            b, "sq", "mb", 0, topic_id, acks=[(0, 0, [ACCEPT])]
        ).error_code
        seen["other member"] = _acquired(share_fetch(b, "sq", "mb", 0, topic_id, max_wait_ms=500))
        missing = share_fetch(b, "sq", "mb", 1, bytes(16 * [7]))
        seen["unknown topic"] = (
            missing.error_code,
            [(p.partition_index, p.error_code) for t in missing.responses for p in t.partitions],
        )
        final = share_fetch(a, "sq", MEMBER, -1, topic_id, acks=[(4, 5, [ACCEPT])])
        seen["final"] = (
            final.error_code,
            [
                (p.error_code, p.acknowledge_error_code)
                for t in final.responses
                for p in t.partitions
            ],
        )
        seen["after final"] = share_fetch(a, "sq", MEMBER, epoch, topic_id).error_code
        left = heartbeat(a, "sq", MEMBER, -1)
        seen["leave"] = (left.error_code, left.member_epoch, left.member_id)
    return seen


def test_share_group_conversation_as_kafka_4_4(
    kafka_44: KafkaReference, ours_shared: BrokerProcess
) -> None:
    theirs = conversation(kafka_44.port)
    mine = conversation(ours_shared.port)
    assert theirs["acquired"] == [(0, 5, 1)]
    assert {k: v for k, v in mine.items() if k != "join"} == {
        k: v for k, v in theirs.items() if k != "join"
    }
    assert mine["join"][:2] == theirs["join"][:2]


def test_java_share_consumers_as_on_kafka_4_4(
    kafka_44: KafkaReference, ours_shared: BrokerProcess, tmp_path: Path
) -> None:
    """Three Java KafkaShareConsumers on one partition deliver, redeliver and archive the
    same records on both (tests/compat/test_java_share_consumer.py's program and checks)."""
    program = compile_program(tmp_path)
    for port, bootstrap in (
        (kafka_44.port, kafka_44.bootstrap),
        (ours_shared.port, ours_shared.bootstrap),
    ):
        produce_records(port, "share-java")
        lines = run_java(program, bootstrap, "share-java", "sj", str(RECORDS), str(DELIVERY_LIMIT))
        check_deliveries(lines)


def _offsets(group: Message) -> tuple[Any, ...]:
    return (
        group.error_code,
        group.error_message,
        [
            (
                t.topic_name,
                [
                    (
                        p.partition_index,
                        p.start_offset,
                        p.leader_epoch,
                        p.lag,
                        p.error_code,
                        p.error_message,
                    )
                    for p in t.partitions
                ],
            )
            for t in group.topics
        ],
    )


def _describe_offsets(
    client: RawClient, group: str, topics: list[tuple[str, list[int]]] | None
) -> Any:
    # Kafka 4.4.0 computes the lag with a ListOffsets of its own: its first answers here
    # took up to 30 s.
    client.sock.settimeout(60)
    named = None if topics is None else [Message(topic_name=t, partitions=p) for t, p in topics]
    return _offsets(
        client.request(
            DESCRIBE_SHARE_GROUP_OFFSETS, 1, Message(groups=[Message(group_id=group, topics=named)])
        ).groups[0]
    )


def _alter(client: RawClient, group: str, starts: dict[str, list[tuple[int, int]]]) -> Any:
    answer = client.request(
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
    return (
        answer.error_code,
        answer.error_message,
        sorted(
            (t.topic_name, p.partition_index, p.error_code, p.error_message)
            for t in answer.responses
            for p in t.partitions
        ),
    )


def _delete(client: RawClient, group: str, topics: list[str]) -> Any:
    answer = client.request(
        DELETE_SHARE_GROUP_OFFSETS,
        0,
        Message(group_id=group, topics=[Message(topic_name=t) for t in topics]),
    )
    return (
        answer.error_code,
        answer.error_message,
        sorted((t.topic_name, t.error_code, t.error_message) for t in answer.responses),
    )


def admin_conversation(port: int) -> dict[str, Any]:
    """The share-group offset admin APIs, DeleteGroups and the one-kind-per-id refusals."""
    seen: dict[str, Any] = {}
    with RawClient(port) as a:
        seen["versions"], topic_id, joined, deadline = _join_group(
            a, "sa", "share-admin", range(90, 93)
        )
        assert joined.error_code == 0, joined
        configured = a.request(
            INCREMENTAL_ALTER_CONFIGS,
            1,
            Message(
                resources=[
                    Message(
                        resource_type=32,
                        resource_name="sa",
                        configs=[
                            Message(
                                name="share.auto.offset.reset",
                                config_operation=0,
                                value="earliest",
                            )
                        ],
                    )
                ],
                validate_only=False,
            ),
        )
        assert configured.responses[0].error_code == 0, configured
        produce_values(a, "share-admin", 6)
        epoch, got, member_epoch = 0, [], joined.member_epoch
        while not got:
            assert time.monotonic() < deadline, "nothing acquired"
            # Heartbeats go on, as a client's: Kafka initializes the assigned share-partitions
            # at a member's heartbeat after its join.
            beat = heartbeat(a, "sa", MEMBER, member_epoch)
            assert beat.error_code == 0, beat
            member_epoch = beat.member_epoch
            got = _acquired(share_fetch(a, "sa", MEMBER, epoch, topic_id, max_wait_ms=500))
            epoch += 1
        seen["acquired"] = got
        seen["ack"] = _ack_errors(
            share_ack(a, "sa", MEMBER, epoch, topic_id, [(0, 3, [ACCEPT, ACCEPT, RELEASE, REJECT])])
        )
        epoch += 1
        # Kafka persists a share-partition's start offset as it was before the write's
        # acknowledgements moved it; one more write brings it up to date on both sides.
        seen["ack rest"] = _ack_errors(
            share_ack(a, "sa", MEMBER, epoch, topic_id, [(4, 5, [ACCEPT])])
        )
        epoch += 1
        seen["describe all"] = _describe_offsets(a, "sa", None)
        seen["describe named"] = _describe_offsets(
            a, "sa", [("share-admin", [0, 3]), ("share-admin-none", [0])]
        )
        seen["describe empty"] = _describe_offsets(a, "sa", [])
        seen["describe missing group"] = _describe_offsets(a, "sa-none", None)
        seen["alter busy"] = _alter(a, "sa", {"share-admin": [(0, 0)]})
        seen["delete busy"] = _delete(a, "sa", ["share-admin"])
        seen["delete group busy"] = [
            (r.group_id, r.error_code)
            for r in a.request(DELETE_GROUPS, 2, Message(groups_names=["sa"])).results
        ]
        seen["join share id"] = [
            (j.error_code, j.member_id, j.generation_id)
            for j in [
                a.request(
                    JOIN_GROUP,
                    9,
                    Message(
                        group_id="sa",
                        session_timeout_ms=10000,
                        rebalance_timeout_ms=10000,
                        member_id="",
                        group_instance_id=None,
                        protocol_type="consumer",
                        protocols=[Message(name="range", metadata=b"")],
                        reason=None,
                    ),
                )
            ]
        ]
        consumer = a.request(
            CONSUMER_GROUP_HEARTBEAT,
            1,
            Message(
                group_id="sa",
                member_id="c1aaaaaaaaaaaaaaaaaaaa",
                member_epoch=0,
                instance_id=None,
                rack_id=None,
                rebalance_timeout_ms=30000,
                subscribed_topic_names=["share-admin"],
                subscribed_topic_regex=None,
                server_assignor=None,
                topic_partitions=[],
            ),
        )
        seen["consumer heartbeat share id"] = (consumer.error_code, consumer.error_message)
        committed = a.request(
            OFFSET_COMMIT,
            9,
            Message(
                group_id="sa",
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=[
                    Message(
                        name="share-admin",
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
        seen["offset commit share id"] = [
            (p.partition_index, p.error_code) for t in committed.topics for p in t.partitions
        ]
        fetched = a.request(
            OFFSET_FETCH,
            9,
            Message(
                groups=[
                    Message(
                        group_id="sa",
                        member_id=None,
                        member_epoch=-1,
                        topics=[Message(name="share-admin", partition_indexes=[0])],
                    )
                ],
                require_stable=False,
            ),
        ).groups[0]
        seen["offset fetch share id"] = (
            fetched.error_code,
            [
                (p.partition_index, p.committed_offset, p.error_code)
                for t in fetched.topics
                for p in t.partitions
            ],
        )
        left = heartbeat(a, "sa", MEMBER, -1)
        assert left.error_code == 0
        seen["alter"] = _alter(
            a, "sa", {"share-admin": [(0, 1), (7, 0)], "share-admin-none": [(0, 0)]}
        )
        seen["describe after alter"] = _describe_offsets(a, "sa", None)
        seen["delete"] = _delete(a, "sa", ["share-admin", "share-admin-none"])
        seen["delete again"] = _delete(a, "sa", ["share-admin"])
        seen["describe after delete"] = _describe_offsets(a, "sa", None)
        seen["delete missing group"] = _delete(a, "sa-none", ["share-admin"])
        seen["alter empty id"] = _alter(a, "", {"share-admin": [(0, 0)]})
        # Share-partitions are initialized at assignment, their start offsets -1 until a
        # write (an empty fetch writes nothing).
        other_id = create_partitioned_topic(a, "share-admin-2", 2)
        sb_joined = heartbeat(a, "sb", MEMBER, 0, ["share-admin-2"])
        assert sb_joined.error_code == 0
        seen["sb after join"] = _describe_offsets(a, "sb", None)
        batch = build_batch([(None, f"v{i}".encode()) for i in range(3)])
        # A new topic's leader may not be known yet to Kafka's produce path: asked again.
        while (sent := produce(a, "share-admin-2", batch).error_code) == NOT_LEADER:
            assert time.monotonic() < deadline, sent
            time.sleep(0.3)
        assert sent == 0
        fetched = share_fetch(a, "sb", MEMBER, 0, other_id, max_wait_ms=200)
        seen["sb fetch"] = _acquired(fetched)
        seen["sb after fetch"] = _describe_offsets(a, "sb", None)
        # The member's next heartbeat has the assigned share-partitions initialized (on
        # Kafka a moment after its answer: polled).
        assert heartbeat(a, "sb", MEMBER, sb_joined.member_epoch).error_code == 0
        while not (initialized := _describe_offsets(a, "sb", None))[2]:
            assert time.monotonic() < deadline + 30, initialized
            time.sleep(0.2)
        seen["sb after heartbeat"] = initialized
        assert heartbeat(a, "sb", MEMBER, -1).error_code == 0
        seen["sb alter"] = _alter(a, "sb", {"share-admin-2": [(1, 0)]})
        seen["sb after alter"] = _describe_offsets(a, "sb", None)
        seen["sb delete"] = _delete(a, "sb", ["share-admin-2"])
        seen["sb after delete"] = _describe_offsets(a, "sb", None)
        listed = a.request(LIST_GROUPS, 5, Message(states_filter=[], types_filter=["share"]))
        seen["listed"] = [
            (g.group_id, g.protocol_type, g.group_state, g.group_type)
            for g in listed.groups
            if g.group_id == "sa"
        ]
        described = a.request(
            DESCRIBE_GROUPS, 6, Message(groups=["sa"], include_authorized_operations=False)
        ).groups[0]
        seen["describe groups"] = (described.error_code, described.error_message)
        # Kafka answers the share groups after the others (not in request order).
        seen["delete group"] = sorted(
            (r.group_id, r.error_code)
            for r in a.request(DELETE_GROUPS, 2, Message(groups_names=["sa", "sa-none"])).results
        )
        gone = a.request(
            SHARE_GROUP_DESCRIBE, 1, Message(group_ids=["sa"], include_authorized_operations=False)
        ).groups[0]
        seen["after delete group"] = (gone.error_code, gone.error_message)
    return seen


def test_share_group_admin_apis_as_kafka_4_4(
    kafka_44: KafkaReference, ours_shared: BrokerProcess
) -> None:
    theirs = admin_conversation(kafka_44.port)
    mine = admin_conversation(ours_shared.port)
    assert theirs["acquired"] == [(0, 5, 1)]
    assert mine == theirs
