"""DescribeCluster, DescribeLogDirs, DescribeTopicPartitions and DescribeProducers, checked
against the broker's address, the segment files and the producer state they hold."""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode
from protocol.messages.describe_cluster import DESCRIBE_CLUSTER
from protocol.messages.describe_log_dirs import DESCRIBE_LOG_DIRS
from protocol.messages.describe_producers import DESCRIBE_PRODUCERS
from protocol.messages.describe_topic_partitions import DESCRIBE_TOPIC_PARTITIONS
from protocol.schema import Message
from tests.e2e.test_admin_configs import create
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, init_producer, produce, stored
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS


@pytest.mark.parametrize("version", range(3))
def test_describe_cluster_every_version(shared_broker: BrokerProcess, version: int) -> None:
    with RawClient(shared_broker.port) as client:
        answer = client.request(
            DESCRIBE_CLUSTER, version, Message(include_cluster_authorized_operations=True)
        )
        assert answer.error_code == 0
        assert answer.controller_id == 1
        assert [(b.broker_id, b.host, b.port) for b in answer.brokers] == [
            (1, "127.0.0.1", shared_broker.port)
        ]
        # Kafka 4.0 without an authorizer answered 8096 (CREATE, ALTER, DESCRIBE,
        # CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE), recorded in
        # kafka-oracle/admin_describe_cluster_logdirs #19; not asked for: Integer.MIN_VALUE.
        assert answer.cluster_authorized_operations == 8096
        unasked = client.request(
            DESCRIBE_CLUSTER, version, Message(include_cluster_authorized_operations=False)
        )
        assert unasked.cluster_authorized_operations == -(2**31)
        if version >= 1:
            wrong = client.request(DESCRIBE_CLUSTER, version, Message(endpoint_type=2))
            assert wrong.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
            assert wrong.error_message


def test_clients_describe_the_cluster(shared_broker: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        described = admin.describe_cluster()
    finally:
        admin.close()
    assert described["controller_id"] == 1
    assert [b["port"] for b in described["brokers"]] == [shared_broker.port]
    confluent = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    cluster = confluent.describe_cluster().result(10)
    assert cluster.controller.id == 1
    assert [n.port for n in cluster.nodes] == [shared_broker.port]
    assert cluster.cluster_id == described["cluster_id"]


@pytest.mark.parametrize("version", range(1, 5))
def test_describe_log_dirs_sizes_match_the_files(
    shared_broker: BrokerProcess, version: int
) -> None:
    name = f"dirs-v{version}"
    with RawClient(shared_broker.port) as client:
        create(client, name, 2)
        for i in range(3):
            produce(client, name, batch(-1, -1, -1, count=5, tag=f"x{i}"), partition=1)
        answer = client.request(
            DESCRIBE_LOG_DIRS,
            version,
            Message(topics=[Message(topic=name, partitions=[0, 1, 9])]),
        )
        everything = client.request(DESCRIBE_LOG_DIRS, version, Message(topics=None))
    (result,) = answer.results
    assert result.error_code == 0
    assert result.log_dir == str(shared_broker.data_dir.resolve())
    (topic,) = result.topics
    sizes = {p.partition_index: p.partition_size for p in topic.partitions}
    on_disk = sum(f.stat().st_size for f in (shared_broker.data_dir / f"{name}-1").glob("*.log"))
    assert sizes == {0: 0, 1: on_disk}
    if version >= 4:
        assert result.total_bytes > 0 and result.usable_bytes > 0
    assert name in {t.name for t in everything.results[0].topics}


def test_kafka_python_describe_log_dirs(shared_broker: BrokerProcess) -> None:
    from kafka.admin import KafkaAdminClient

    with RawClient(shared_broker.port) as client:
        create(client, "kp-dirs")
    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        described = admin.describe_log_dirs()
    finally:
        admin.close()
    assert "kp-dirs" in str(described)


def test_describe_topic_partitions_paginates(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "dtp-a", 3)
        create(client, "dtp-b", 2)

        def ask(limit: int, cursor: Message | None = None) -> Message:
            return client.request(
                DESCRIBE_TOPIC_PARTITIONS,
                0,
                Message(
                    topics=[Message(name="dtp-b"), Message(name="dtp-a"), Message(name="dtp-z")],
                    response_partition_limit=limit,
                    cursor=cursor,
                ),
            )

        first = ask(2)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in first.topics] == [
            ("dtp-a", [0, 1])
        ]
        assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("dtp-a", 2)
        second = ask(2, first.next_cursor)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in second.topics] == [
            ("dtp-a", [2]),
            ("dtp-b", [0]),
        ]
        third = ask(2, second.next_cursor)
        assert [(t.name, t.error_code) for t in third.topics] == [
            ("dtp-b", 0),
            ("dtp-z", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        assert third.next_cursor is None
        partition = third.topics[0].partitions[0]
        assert (partition.leader_id, partition.replica_nodes, partition.isr_nodes) == (1, [1], [1])


def test_kafka_python_describe_topic_partitions(shared_broker: BrokerProcess) -> None:
    from kafka.admin import KafkaAdminClient

    with RawClient(shared_broker.port) as client:
        create(client, "kp-dtp", 2)
    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        described = admin.describe_topic_partitions(["kp-dtp"])
    finally:
        admin.close()
    assert "kp-dtp" in str(described)


def test_describe_producers_matches_the_segment_files(shared_broker: BrokerProcess) -> None:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    with RawClient(shared_broker.port) as client:
        create(client, "producers", 2)
        pid = init_producer(client)
        for seq in (0, 3, 6):
            assert produce(client, "producers", batch(pid, 0, seq, count=3)).error_code == 0
        answer = client.request(
            DESCRIBE_PRODUCERS,
            0,
            Message(topics=[Message(name="producers", partition_indexes=[0, 1, 7])]),
        )
    parts = {p.partition_index: p for p in answer.topics[0].partitions}
    assert parts[7].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert parts[1].active_producers == []
    (state,) = parts[0].active_producers
    last_header, _ = stored(shared_broker.data_dir, "producers")[-1]
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (
        last_header.producer_id,
        last_header.producer_epoch,
        last_header.last_sequence,
    )
    assert (state.producer_id, state.last_sequence) == (pid, 8)
    assert state.last_timestamp == last_header.max_timestamp
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, -1)

    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        described = admin.describe_producers([TopicPartition("producers", 0)])
    finally:
        admin.close()
    (producer,) = described[TopicPartition("producers", 0)].active_producers
    assert (producer.producer_id, producer.last_sequence) == (pid, 8)


def test_describe_producers_after_a_real_idempotent_producer(shared_broker: BrokerProcess) -> None:
    from confluent_kafka import Producer

    with RawClient(shared_broker.port) as client:
        create(client, "cf-producers")
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap, "enable.idempotence": True})
    for i in range(7):
        producer.produce("cf-producers", key=b"k", value=b"v%d" % i, partition=0)
        producer.flush(10)
    with RawClient(shared_broker.port) as client:
        answer = client.request(
            DESCRIBE_PRODUCERS,
            0,
            Message(topics=[Message(name="cf-producers", partition_indexes=[0])]),
        )
    (state,) = answer.topics[0].partitions[0].active_producers
    headers = [h for h, _ in stored(shared_broker.data_dir, "cf-producers")]
    assert {h.producer_id for h in headers} == {state.producer_id}
    assert state.last_sequence == headers[-1].last_sequence == 6
