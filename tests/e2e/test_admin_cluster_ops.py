"""The cluster-admin APIs a single node answers as a one-broker Kafka 4.0 (KRaft, node 1):
ElectLeaders, Alter/ListPartitionReassignments, AlterReplicaLogDirs and DescribeQuorum,
checked on the answer fields and on the partitions the broker keeps on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.alter_partition_reassignments import ALTER_PARTITION_REASSIGNMENTS
from protocol.messages.alter_replica_log_dirs import ALTER_REPLICA_LOG_DIRS
from protocol.messages.describe_quorum import DESCRIBE_QUORUM
from protocol.messages.elect_leaders import ELECT_LEADERS
from protocol.messages.list_partition_reassignments import LIST_PARTITION_REASSIGNMENTS
from protocol.messages.metadata import METADATA
from protocol.schema import Message
from tests.e2e.test_admin_configs import create
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, produce, stored
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS

NOT_NEEDED = "Leader election not needed for topic partition."


def _results(answer: Message) -> dict[tuple[str, int], tuple[int, str | None]]:
    return {
        (t.topic, p.partition_id): (p.error_code, p.error_message)
        for t in answer.replica_election_results
        for p in t.partition_result
    }


def _partition_dirs(data_dir: Path, topic: str) -> list[str]:
    return sorted(d for d in os.listdir(data_dir) if d.startswith(f"{topic}-"))


def _replicas(client: RawClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    answer = client.request(METADATA, 12, Message(topics=[Message(name=topic, topic_id=None)]))
    (found,) = answer.topics
    return {
        p.partition_index: (p.leader_id, p.replica_nodes, p.isr_nodes) for p in found.partitions
    }


@pytest.mark.parametrize("version", range(3))
def test_elect_leaders_answers_election_not_needed_for_every_partition(
    shared_broker: BrokerProcess, version: int
) -> None:
    topic = f"elect-v{version}"
    with RawClient(shared_broker.port) as client:
        create(client, topic, 2)
        answer = client.request(
            ELECT_LEADERS,
            version,
            Message(
                election_type=0,
                topic_partitions=[
                    Message(topic=topic, partitions=[0, 1, 7]),
                    Message(topic="elect-missing", partitions=[0]),
                ],
                timeout_ms=1000,
            ),
        )
        unclean = client.request(
            ELECT_LEADERS,
            max(version, 1),
            Message(election_type=1, topic_partitions=[Message(topic=topic, partitions=[1])]),
        )
        leaders = _replicas(client, topic)
    assert answer.error_code == 0
    assert _results(answer) == {
        (topic, 0): (ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED),
        (topic, 1): (ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED),
        (topic, 7): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-7"),
        ("elect-missing", 0): (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "No such topic as elect-missing",
        ),
    }
    assert _results(unclean) == {(topic, 1): (ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED)}
    assert leaders == {0: (1, [1], [1]), 1: (1, [1], [1])}


def test_elect_leaders_for_all_partitions_lists_topics_without_partitions(
    shared_broker: BrokerProcess,
) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "elect-all", 3)
        answer = client.request(ELECT_LEADERS, 2, Message(topic_partitions=None))
        empty = client.request(ELECT_LEADERS, 2, Message(topic_partitions=[]))
    # Kafka leaves out the partitions that already have their preferred leader.
    topics = {t.topic: t.partition_result for t in answer.replica_election_results}
    assert topics["elect-all"] == []
    assert answer.error_code == 0
    assert empty.replica_election_results == [] and empty.error_code == 0


def test_elect_leaders_with_an_unknown_election_type_is_an_invalid_request(
    shared_broker: BrokerProcess,
) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "elect-type", 1)
        answer = client.request(
            ELECT_LEADERS,
            2,
            Message(
                election_type=2, topic_partitions=[Message(topic="elect-type", partitions=[0])]
            ),
        )
    assert answer.error_code == ErrorCode.INVALID_REQUEST
    assert _results(answer) == {
        ("elect-type", 0): (ErrorCode.INVALID_REQUEST, "Unknown election type 2")
    }


def _reassign(client: RawClient, topics: list[Message]) -> Message:
    return client.request(ALTER_PARTITION_REASSIGNMENTS, 0, Message(timeout_ms=1000, topics=topics))


def test_partition_reassignment_to_this_broker_only(shared_broker: BrokerProcess) -> None:
    topic = "reassign"
    with RawClient(shared_broker.port) as client:
        create(client, topic, 2)
        produce(client, topic, batch(-1, -1, -1, count=3, tag="r"))
        answer = _reassign(
            client,
            [
                Message(
                    name=topic,
                    partitions=[
                        Message(partition_index=0, replicas=[1]),
                        Message(partition_index=1, replicas=[2]),
                        Message(partition_index=0, replicas=[1, 1]),
                        Message(partition_index=1, replicas=[]),
                        Message(partition_index=0, replicas=None),
                        Message(partition_index=5, replicas=[1]),
                    ],
                ),
                Message(
                    name="reassign-missing", partitions=[Message(partition_index=0, replicas=[1])]
                ),
            ],
        )
        listed = client.request(LIST_PARTITION_REASSIGNMENTS, 0, Message(topics=None))
        listed_one = client.request(
            LIST_PARTITION_REASSIGNMENTS,
            0,
            Message(topics=[Message(name=topic, partition_indexes=[0, 1])]),
        )
        empty = _reassign(client, [])
        replicas = _replicas(client, topic)
    assert answer.error_code == 0 and answer.error_message is None
    results = [
        (t.name, p.partition_index, p.error_code, p.error_message)
        for t in answer.responses
        for p in t.partitions
    ]
    assert results == [
        (topic, 0, 0, None),
        (
            topic,
            1,
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 2, but no such broker is registered.",
        ),
        (
            topic,
            0,
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes the broker 1 more than once.",
        ),
        (
            topic,
            1,
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        ),
        (topic, 0, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None),
        (topic, 5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:5."),
        (
            "reassign-missing",
            0,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "Unable to find a topic named reassign-missing.",
        ),
    ]
    # A reassignment to the replicas a partition has completes at once: nothing is ongoing.
    assert listed.error_code == 0 and listed.error_message is None and listed.topics == []
    assert listed_one.topics == []
    # Kafka's QuorumController answers an empty request without setting the message ("").
    assert empty.error_code == 0 and empty.error_message == "" and empty.responses == []
    assert replicas == {0: (1, [1], [1]), 1: (1, [1], [1])}
    assert _partition_dirs(shared_broker.data_dir, topic) == [f"{topic}-0", f"{topic}-1"]
    assert len(stored(shared_broker.data_dir, topic, 0)) == 1


@pytest.mark.parametrize("version", [1, 2])
def test_alter_replica_log_dirs_to_the_current_dir_is_accepted_and_moves_nothing(
    shared_broker: BrokerProcess, version: int
) -> None:
    topic = f"logdir-v{version}"
    current = str(shared_broker.data_dir.resolve())
    with RawClient(shared_broker.port) as client:
        create(client, topic, 2)
        produce(client, topic, batch(-1, -1, -1, count=2, tag="d"))
        before = stored(shared_broker.data_dir, topic, 0)
        answer = client.request(
            ALTER_REPLICA_LOG_DIRS,
            version,
            Message(
                dirs=[
                    Message(path=current, topics=[Message(name=topic, partitions=[0, 1, 4])]),
                    Message(
                        path="/nowhere/else",
                        topics=[Message(name=f"{topic}-other", partitions=[0])],
                    ),
                    Message(path=current, topics=[Message(name="logdir-missing", partitions=[0])]),
                ]
            ),
        )
    results = {
        (t.topic_name, p.partition_index): p.error_code
        for t in answer.results
        for p in t.partitions
    }
    assert results == {
        (topic, 0): 0,
        (topic, 1): 0,
        (topic, 4): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (f"{topic}-other", 0): ErrorCode.LOG_DIR_NOT_FOUND,
        ("logdir-missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert stored(shared_broker.data_dir, topic, 0) == before
    assert _partition_dirs(shared_broker.data_dir, topic) == [f"{topic}-0", f"{topic}-1"]
    assert not [d for d in os.listdir(shared_broker.data_dir) if d.endswith("-future")]


def _quorum_request(topic: str = "__cluster_metadata", partition: int = 0) -> Message:
    return Message(
        topics=[Message(topic_name=topic, partitions=[Message(partition_index=partition)])]
    )


def _directory_id(data_dir: Path) -> str:
    props = dict(
        line.split("=", 1)
        for line in (data_dir / "meta.properties").read_text().splitlines()
        if "=" in line
    )
    return props["directory.id"]


@pytest.mark.parametrize("version", range(3))
def test_describe_quorum_reports_this_node_as_the_only_voter_and_leader(
    shared_broker: BrokerProcess, version: int
) -> None:
    from storage.store import uuid_to_str

    with RawClient(shared_broker.port) as client:
        answer = client.request(DESCRIBE_QUORUM, version, _quorum_request())
        later = client.request(DESCRIBE_QUORUM, version, _quorum_request())
    assert answer.error_code == 0
    (topic,) = answer.topics
    assert topic.topic_name == "__cluster_metadata"
    (partition,) = topic.partitions
    assert (partition.partition_index, partition.error_code) == (0, 0)
    assert partition.leader_id == 1 and partition.leader_epoch >= 1
    (voter,) = partition.current_voters
    assert voter.replica_id == 1
    # A quorum of one commits what it appends: its log end is the high watermark.
    assert voter.log_end_offset == partition.high_watermark > 0
    assert later.topics[0].partitions[0].high_watermark >= partition.high_watermark
    assert partition.observers == []
    if version >= 1:
        assert voter.last_fetch_timestamp == voter.last_caught_up_timestamp > 0
    if version >= 2:
        assert uuid_to_str(voter.replica_directory_id) == _directory_id(shared_broker.data_dir)
        (node,) = answer.nodes
        assert node.node_id == 1
        assert [(lst.host, lst.port) for lst in node.listeners] == [
            ("127.0.0.1", shared_broker.port)
        ]


@pytest.mark.parametrize("version", [0, 2])
def test_describe_quorum_of_another_partition_is_unknown(
    shared_broker: BrokerProcess, version: int
) -> None:
    with RawClient(shared_broker.port) as client:
        answer = client.request(DESCRIBE_QUORUM, version, _quorum_request("orders", 0))
        wrong_partition = client.request(DESCRIBE_QUORUM, version, _quorum_request(partition=1))
    for result, name, index in ((answer, "orders", 0), (wrong_partition, "__cluster_metadata", 1)):
        assert result.error_code == 0
        (topic,) = result.topics
        assert topic.topic_name == name
        (partition,) = topic.partitions
        assert (partition.partition_index, partition.error_code) == (
            index,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        )
        if version >= 2:
            assert partition.error_message


def test_kafka_python_admin_cluster_operations(shared_broker: BrokerProcess) -> None:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    topic = "kp-cluster-ops"
    with RawClient(shared_broker.port) as client:
        create(client, topic, 2)
    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        elected = admin.elect_leaders(0, {topic: [0, 1]}, raise_errors=False)
        reassigned = admin.alter_partition_reassignments(
            {TopicPartition(topic, 0): [1], TopicPartition(topic, 1): [3]}
        )
        ongoing = admin.list_partition_reassignments()
        moved = admin.alter_replica_log_dirs({(topic, 0, 1): str(shared_broker.data_dir.resolve())})
        quorum = admin.describe_metadata_quorum()
    finally:
        admin.close()
    assert {p.error_code for t in elected.replica_election_results for p in t.partition_result} == {
        ErrorCode.ELECTION_NOT_NEEDED
    }
    assert reassigned[TopicPartition(topic, 0)] is None
    assert reassigned[TopicPartition(topic, 1)].errno == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert ongoing == {}
    assert [e.errno for e in moved.values()] == [0]
    assert _partition_dirs(shared_broker.data_dir, topic) == [f"{topic}-0", f"{topic}-1"]
    (partition,) = quorum["topics"][0]["partitions"]
    assert (partition["leader_id"], partition["error"]) == (1, None)
    assert [v["replica_id"] for v in partition["current_voters"]] == [1]
    assert [n["node_id"] for n in quorum["nodes"]] == [1]


def test_confluent_elect_leaders(shared_broker: BrokerProcess) -> None:
    from confluent_kafka import ElectionType, KafkaError, TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = "ck-elect"
    with RawClient(shared_broker.port) as client:
        create(client, topic, 1)
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    future = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)])
    result = future.result(10)
    error = result[TopicPartition(topic, 0)]
    assert isinstance(error, KafkaError)
    assert error.code() == ErrorCode.ELECTION_NOT_NEEDED
