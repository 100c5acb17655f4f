"""Streams groups (KIP-1071) over raw StreamsGroupHeartbeat/StreamsGroupDescribe against a
broker with minikafka.streams.version=1: the switch, request checks, topology validation
(missing source topics, internal topics created with their partition counts), active tasks
spread evenly and kept across heartbeats, revocation before reassignment, leaving, session
timeouts and describe. Without the switch neither API nor the feature is advertised.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.messages.metadata import METADATA
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.streams_group import STREAMS_GROUP_DESCRIBE, STREAMS_GROUP_HEARTBEAT
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_partitioned_topic
from tests.support.raw_client import ConnectionClosed, RawClient

INVALID_REQUEST, UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND, FENCED_MEMBER_EPOCH = 42, 25, 69, 110
STALE_MEMBER_EPOCH, UNSUPPORTED_VERSION = 113, 35
MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS, ASSIGNMENT_DELAYED = 1, 3, 5
SESSION_MS = 1500


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    overrides = {
        "minikafka.streams.version": "1",
        "group.streams.initial.rebalance.delay.ms": "0",
        "group.streams.session.timeout.ms": str(SESSION_MS),
    }
    with running(tmp_path_factory.mktemp("streams") / "data", overrides) as proc:
        yield proc


@pytest.fixture(scope="module")
def plain_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running(tmp_path_factory.mktemp("plain") / "data") as proc:
        yield proc


def versions(client: RawClient) -> Message:
    return client.request(
        API_VERSIONS, 4, Message(client_software_name="raw", client_software_version="1")
    )


def topic_info(name: str, partitions: int = 0) -> Message:
    return Message(name=name, partitions=partitions, replication_factor=-1, topic_configs=[])


def topology(sources: list[str], changelogs: list[str] = (), epoch: int = 0) -> Message:  # type: ignore[assignment]
    return Message(
        epoch=epoch,
        subtopologies=[
            Message(
                subtopology_id="0",
                source_topics=sources,
                source_topic_regex=[],
                state_changelog_topics=[topic_info(n) for n in changelogs],
                repartition_sink_topics=[],
                repartition_source_topics=[],
                copartition_groups=[],
            )
        ],
    )


def beat(client: RawClient, version: int = 1, **fields: object) -> Message:
    request = dict(
        group_id="app",
        member_id="m1",
        member_epoch=0,
        endpoint_information_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=-1,
        topology=None,
        active_tasks=None,
        standby_tasks=None,
        warmup_tasks=None,
        process_id=None,
        user_endpoint=None,
        client_tags=None,
        task_offsets=None,
        task_end_offsets=None,
        shutdown_application=False,
    )
    request.update(fields)
    return client.request(STREAMS_GROUP_HEARTBEAT, version, Message(**request))


def join(client: RawClient, group: str, member: str, top: Message, version: int = 1) -> Message:
    return beat(
        client,
        version,
        group_id=group,
        member_id=member,
        process_id=f"process-{member}",
        topology=top,
        rebalance_timeout_ms=30000,
        active_tasks=[],
        standby_tasks=[],
        warmup_tasks=[],
        client_tags=[],
    )


def owned(client: RawClient, group: str, member: str, epoch: int, tasks: set[int]) -> Message:
    """A heartbeat that reports ``tasks`` of subtopology 0 as the member's."""
    ids = [Message(subtopology_id="0", partitions=sorted(tasks))] if tasks else []
    return beat(
        client,
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        active_tasks=ids,
        standby_tasks=[],
        warmup_tasks=[],
    )


def partitions(answer: Message) -> set[int]:
    return {p for t in answer.active_tasks for p in t.partitions}


def describe(client: RawClient, *groups: str, version: int = 1) -> list[Message]:
    request = Message(
        group_ids=list(groups),
        include_authorized_operations=False,
        include_topology_description=False,
    )
    return client.request(STREAMS_GROUP_DESCRIBE, version, request).groups


def partition_count(client: RawClient, topic: str) -> int | None:
    answer = client.request(
        METADATA,
        12,
        Message(
            topics=[Message(topic_id=b"\0" * 16, name=topic)],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    found = answer.topics[0]
    return None if found.error_code else len(found.partitions)


def test_off_by_default_neither_api_nor_feature(plain_broker: BrokerProcess) -> None:
    with RawClient(plain_broker.port) as client:
        answer = versions(client)
        keys = {k.api_key for k in answer.api_keys}
        assert not keys & {88, 89}
        names = {f.name for f in answer.supported_features + answer.finalized_features}
        assert "streams.version" not in names
        # An API the broker does not serve: the connection is closed, as Kafka closes it.
        with pytest.raises(ConnectionClosed):
            client.request(
                STREAMS_GROUP_DESCRIBE,
                0,
                Message(group_ids=["x"], include_authorized_operations=False),
            )


def test_switch_advertises_kafka_4_4_versions_and_feature(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        answer = versions(client)
    found = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert found[88] == (0, 1) and found[89] == (0, 1)
    supported = [(f.name, f.min_version, f.max_version) for f in answer.supported_features]
    assert ("streams.version", 0, 1) in supported
    names = [f.name for f in answer.supported_features]
    assert names.index("streams.version") == names.index("transaction.version") - 1
    finalized = [(f.name, f.min_version_level) for f in answer.finalized_features]
    assert finalized.index(("streams.version", 1)) == finalized.index(("metadata.version", 25)) + 1


def test_request_checks_answer_kafkas_messages(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        cases = [
            (dict(group_id=""), "GroupId can't be empty."),
            (dict(member_id=""), "MemberId can't be empty."),
            (dict(member_epoch=-3), "MemberEpoch is -3, but must be greater than or equal to -2."),
            (dict(), "RebalanceTimeoutMs must be provided in first request."),
            (
                dict(
                    rebalance_timeout_ms=1000,
                    active_tasks=[Message(subtopology_id="0", partitions=[0])],
                ),
                "ActiveTasks must be empty when (re-)joining.",
            ),
            (dict(rebalance_timeout_ms=1000), "Topology must be non-null when (re-)joining."),
            (
                dict(
                    rebalance_timeout_ms=1000,
                    topology=Message(
                        epoch=0,
                        subtopologies=[
                            Message(
                                subtopology_id="0",
                                source_topics=["a"],
                                source_topic_regex=[],
                                state_changelog_topics=[topic_info("c", 3)],
                                repartition_sink_topics=[],
                                repartition_source_topics=[],
                                copartition_groups=[],
                            )
                        ],
                    ),
                ),
                "Changelog topic c must have an undefined partition count, but it is set to 3.",
            ),
            (
                dict(member_epoch=4, topology=topology(["a"])),
                "Topology can only be provided when (re-)joining.",
            ),
            (
                dict(member_epoch=4, active_tasks=[]),
                "If one task-type is non-null, all must be non-null.",
            ),
        ]
        for fields, message in cases:
            answer = beat(client, **fields)
            assert (answer.error_code, answer.error_message) == (INVALID_REQUEST, message)
            assert (answer.member_id, answer.member_epoch, answer.heartbeat_interval_ms) == (
                "",
                0,
                0,
            )
        missing = beat(client, group_id="nowhere", member_epoch=3)
        assert (missing.error_code, missing.error_message) == (
            GROUP_ID_NOT_FOUND,
            "Streams group nowhere not found.",
        )


def test_missing_source_topics_leave_the_group_not_ready(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        joined = join(client, "no-src", "m1", topology(["absent-topic"]))
        assert joined.error_code == 0, joined
        assert [(s.status_code, s.status_detail) for s in joined.status] == [
            (MISSING_SOURCE_TOPICS, "Source topics absent-topic are missing.")
        ]
        assert joined.active_tasks == [] and joined.member_epoch == 1
        assert partition_count(client, "absent-topic") is None
        (group,) = describe(client, "no-src")
        assert group.group_state == "NotReady"


def test_internal_topics_created_then_tasks_spread_and_sticky(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        create_partitioned_topic(client, "words", 4)
        first = join(client, "wc", "m1", topology(["words"], ["wc-store-changelog"]))
        assert first.error_code == 0, first
        assert [(s.status_code, s.status_detail) for s in first.status] == [
            (MISSING_INTERNAL_TOPICS, "Internal topics are missing: wc-store-changelog")
        ]
        # Created by the broker with the subtopology's task count.
        assert partition_count(client, "wc-store-changelog") == 4
        assert (first.heartbeat_interval_ms, first.acceptable_recovery_lag) == (5000, 10000)
        assert first.task_offset_interval_ms == 60000
        one = owned(client, "wc", "m1", first.member_epoch, set())
        assert one.error_code == 0 and one.status == []
        assert partitions(one) == {0, 1, 2, 3}
        epoch1 = one.member_epoch
        again = owned(client, "wc", "m1", epoch1, {0, 1, 2, 3})
        assert again.active_tasks is None and again.member_epoch == epoch1

        second = join(client, "wc", "m2", topology(["words"], ["wc-store-changelog"]))
        assert second.error_code == 0 and second.member_epoch > epoch1
        # m1 still owns everything: m2 is given nothing until m1 gives its half up.
        assert partitions(second) == set()
        shrink = owned(client, "wc", "m1", epoch1, {0, 1, 2, 3})
        kept = partitions(shrink)
        assert len(kept) == 2 and shrink.member_epoch == epoch1
        done = owned(client, "wc", "m1", epoch1, kept)
        assert done.member_epoch == second.member_epoch
        given = owned(client, "wc", "m2", second.member_epoch, set())
        assert partitions(given) == {0, 1, 2, 3} - kept
        # Stable: heartbeats change nothing.
        for _ in range(3):
            assert owned(client, "wc", "m1", done.member_epoch, kept).active_tasks is None
            assert (
                owned(client, "wc", "m2", given.member_epoch, partitions(given)).active_tasks
                is None
            )
        (group,) = describe(client, "wc")
        assert (group.group_state, group.group_epoch, group.assignment_epoch) == (
            "Stable",
            second.member_epoch,
            second.member_epoch,
        )
        assert group.assignor_name == "sticky"
        assert group.topology.subtopologies[0].source_topics == ["words"]
        described = {m.member_id: m for m in group.members}
        assert {p for t in described["m1"].assignment.active_tasks for p in t.partitions} == kept
        assert described["m2"].process_id == "process-m2"
        assert described["m2"].client_host == "/127.0.0.1"
        (v0,) = describe(client, "wc", version=0)
        assert v0.assignor_name is None

        left = beat(client, group_id="wc", member_id="m2", member_epoch=-1)
        assert (left.error_code, left.member_id, left.member_epoch) == (0, "m2", -1)
        assert (left.heartbeat_interval_ms, left.acceptable_recovery_lag) == (0, -1)
        back = owned(client, "wc", "m1", done.member_epoch, kept)
        assert partitions(back) == {0, 1, 2, 3}


def test_unknown_and_fenced_members(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        create_partitioned_topic(client, "fence-in", 1)
        joined = join(client, "fence", "m1", topology(["fence-in"]))
        unknown = beat(client, group_id="fence", member_id="zz", member_epoch=3)
        assert (unknown.error_code, unknown.error_message) == (
            UNKNOWN_MEMBER_ID,
            "Member zz is not a member of group fence.",
        )
        fenced = beat(
            client, group_id="fence", member_id="m1", member_epoch=joined.member_epoch + 5
        )
        assert fenced.error_code == FENCED_MEMBER_EPOCH
        assert fenced.error_message == (
            f"Received member epoch {joined.member_epoch + 5} is newer than current member "
            f"epoch {joined.member_epoch}."
        )


def test_silent_member_removed_after_session_timeout(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        create_partitioned_topic(client, "quiet-in", 2)
        join(client, "quiet", "gone", topology(["quiet-in"]))
        answer = join(client, "quiet", "stay", topology(["quiet-in"]))
        epoch, tasks = answer.member_epoch, partitions(answer)
        members = {m.member_id for m in describe(client, "quiet")[0].members}
        assert members == {"gone", "stay"}
        # Only "stay" heartbeats: "gone" is removed after the session timeout and its tasks
        # come to "stay".
        deadline = time.monotonic() + 10 * SESSION_MS / 1000
        while members != {"stay"} or tasks != {0, 1}:
            assert time.monotonic() < deadline, (members, tasks)
            time.sleep(0.2)
            answer = owned(client, "quiet", "stay", epoch, tasks)
            assert answer.error_code == 0, answer
            epoch = answer.member_epoch
            if answer.active_tasks is not None:
                tasks = partitions(answer)
            members = {m.member_id for m in describe(client, "quiet")[0].members}
        gone = beat(client, group_id="quiet", member_id="gone", member_epoch=1)
        assert gone.error_code == UNKNOWN_MEMBER_ID


def commit(client: RawClient, group: str, member: str, epoch: int, version: int = 9) -> int:
    answer = client.request(
        OFFSET_COMMIT,
        version,
        Message(
            group_id=group,
            generation_id_or_member_epoch=epoch,
            member_id=member,
            group_instance_id=None,
            retention_time_ms=-1,
            topics=[
                Message(
                    name="commit-in",
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
    code: int = answer.topics[0].partitions[0].error_code
    return code


def cleanup_policy(client: RawClient, topic: str) -> str | None:
    answer = client.request(
        DESCRIBE_CONFIGS,
        4,
        Message(
            resources=[
                Message(resource_type=2, resource_name=topic, configuration_keys=["cleanup.policy"])
            ],
            include_synonyms=False,
            include_documentation=False,
        ),
    )
    value: str | None = answer.results[0].configs[0].value
    return value


def test_offset_commits_checked_against_the_streams_member(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        create_partitioned_topic(client, "commit-in", 1)
        top = topology(["commit-in"], ["commits-store-changelog"])
        top.subtopologies[0].state_changelog_topics[0].topic_configs = [
            Message(key="cleanup.policy", value="compact")
        ]
        joined = join(client, "commits", "m1", top)
        # The changelog is created with the configs the topology gives it.
        assert partition_count(client, "commits-store-changelog") == 1
        assert cleanup_policy(client, "commits-store-changelog") == "compact"
        epoch = owned(client, "commits", "m1", joined.member_epoch, set()).member_epoch
        assert commit(client, "commits", "zz", epoch) == UNKNOWN_MEMBER_ID
        assert commit(client, "commits", "m1", epoch + 1) == STALE_MEMBER_EPOCH
        assert commit(client, "commits", "m1", epoch, version=8) == UNSUPPORTED_VERSION
        assert commit(client, "commits", "m1", epoch) == 0
