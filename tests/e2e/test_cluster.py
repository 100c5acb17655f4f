"""A simulated 3-node cluster (minikafka.cluster.size=3) as real clients see it: every node in
Metadata, leaders spread, replicas and ISRs, records produced and consumed through the nodes
that lead them, and the errors a request to the wrong node gets, checked on the wire."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka import ThreadedBroker
from protocol.errors import ErrorCode
from protocol.messages.fetch import FETCH
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.schema import Message
from tests.support.produce import batch, fetch_request, produce_request, stored_values
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = [
    pytest.mark.minikafka(racks=["a", "b", "c"], default_replication_factor=3),
    *KAFKA_PYTHON_SCHEMA_READS,
]


def nodes(cluster: ThreadedBroker) -> dict[int, int]:
    """Node id -> port, from the bootstrap list (node k is the k-th address)."""
    ports = [int(a.rsplit(":", 1)[1]) for a in cluster.bootstrap.split(",")]
    return {1 + k: port for k, port in enumerate(ports)}


def metadata(port: int, topics: list[str] | None = None) -> Message:
    with RawClient(port) as client:
        request = Message(
            topics=None
            if topics is None
            else [Message(name=t, topic_id=b"\0" * 16) for t in topics],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        return client.request(METADATA, 12, request)


def create(cluster: ThreadedBroker, name: str, partitions: int, replicas: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, replicas)])[name].result(10)


def partitions_of(port: int, topic: str) -> dict[int, Message]:
    [entry] = metadata(port, [topic]).topics
    assert entry.error_code == ErrorCode.NONE
    return {p.partition_index: p for p in entry.partitions}


def test_every_client_sees_three_nodes_with_racks_and_spread_leaders(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "spread", 6, 3)
    ports = nodes(kafka_cluster)
    assert len(set(ports.values())) == 3

    md = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap}).list_topics(timeout=10)
    assert {b.id: b.port for b in md.brokers.values()} == ports
    assert md.controller_id in ports
    parts = md.topics["spread"].partitions.values()
    assert Counter(p.leader for p in parts) == {1: 2, 2: 2, 3: 2}
    for p in parts:
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3]
        assert p.leader == p.replicas[0]

    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap)
    try:
        described = admin.describe_cluster()
        assert {(b["broker_id"], b["port"], b["rack"]) for b in described["brokers"]} == {
            (1, ports[1], "a"),
            (2, ports[2], "b"),
            (3, ports[3], "c"),
        }
        assert described["controller_id"] in ports
    finally:
        admin.close()

    # Each node answers the same partitions (it is one cluster), through its own address.
    for port in ports.values():
        seen = partitions_of(port, "spread")
        assert {i: p.leader_id for i, p in seen.items()} == {
            i: p.leader for i, p in md.topics["spread"].partitions.items()
        }
        assert all(p.leader_epoch == 0 and p.offline_replicas == [] for p in seen.values())


def test_create_topics_refuses_more_replicas_than_nodes_as_kafka(
    kafka_cluster: ThreadedBroker,
) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    future = admin.create_topics([NewTopic("too-many", 1, 4)])["too-many"]
    with pytest.raises(Exception, match="only 3 broker\\(s\\) are registered") as raised:
        future.result(10)
    assert raised.value.args[0].code() == ErrorCode.INVALID_REPLICATION_FACTOR


def _wait_consumed(poll: Any, want: int, timeout: float = 30.0) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        got += poll()
    return got


def test_confluent_and_kafka_python_produce_and_consume_through_every_leader(
    kafka_cluster: ThreadedBroker,
) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    create(kafka_cluster, "through", 6, 2)
    leaders = {i: p.leader_id for i, p in partitions_of(nodes(kafka_cluster)[1], "through").items()}
    assert set(leaders.values()) == {1, 2, 3}

    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "enable.idempotence": True})
    for i in range(300):
        producer.produce("through", f"ck-{i}".encode(), partition=i % 6)
    assert producer.flush(30) == 0
    kp = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap, acks="all")
    for i in range(300):
        kp.send("through", f"kp-{i}".encode(), partition=i % 6)
    kp.flush(30)
    kp.close()

    data_dir = kafka_cluster.data_dir
    assert data_dir is not None
    for p in range(6):
        values = stored_values(Path(data_dir), "through", p)
        assert values == [f"ck-{i}".encode() for i in range(p, 300, 6)] + [
            f"kp-{i}".encode() for i in range(p, 300, 6)
        ]

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap,
            "group.id": "ck-group",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["through"])

    def ck_poll() -> list[bytes]:
        m = consumer.poll(0.2)
        return [] if m is None or m.error() else [m.value()]

    try:
        assert len(_wait_consumed(ck_poll, 600)) == 600
    finally:
        consumer.close()

    kc = KafkaConsumer(
        bootstrap_servers=kafka_cluster.bootstrap,
        group_id="kp-group",
        auto_offset_reset="earliest",
    )
    kc.subscribe(["through"])

    def kp_poll() -> list[bytes]:
        return [r.value for rs in kc.poll(200).values() for r in rs]

    try:
        got = _wait_consumed(kp_poll, 600)
        assert Counter(got) == Counter(
            [f"ck-{i}".encode() for i in range(300)] + [f"kp-{i}".encode() for i in range(300)]
        )
        # The group's coordinator is the leader of its __consumer_offsets partition.
        kc.commit()
        assert kc.committed(TopicPartition("through", 0)) == 100
    finally:
        kc.close()


def test_produce_to_a_follower_names_the_leader_in_kip_951_fields(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "wrong-node", 1, 2)
    ports = nodes(kafka_cluster)
    part = partitions_of(ports[1], "wrong-node")[0]
    leader, follower = part.replica_nodes
    other = ({1, 2, 3} - {leader, follower}).pop()
    records = batch(-1, -1, -1, count=1)
    for node in (follower, other):
        with RawClient(ports[node]) as client:
            answer = client.request(PRODUCE, 11, produce_request("wrong-node", records))
        p = answer.responses[0].partition_responses[0]
        assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (leader, 0)
        assert [(e.node_id, e.host, e.port, e.rack) for e in answer.node_endpoints] == [
            (leader, "127.0.0.1", ports[leader], "abc"[leader - 1])
        ]
    # Before KIP-951 (v9): the error alone.
    with RawClient(ports[follower]) as client:
        answer = client.request(PRODUCE, 9, produce_request("wrong-node", records))
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    with RawClient(ports[leader]) as client:
        answer = client.request(PRODUCE, 11, produce_request("wrong-node", records))
    p = answer.responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset) == (ErrorCode.NONE, 0)
    assert answer.get("node_endpoints", []) == []

    # Fetch: a follower serves v11+ (KIP-392), not v10; a node without a replica never.
    def fetch(node: int, version: int) -> tuple[Message, Message]:
        with RawClient(ports[node]) as client:
            request = fetch_request("wrong-node", 0, topic_id=b"\0" * 16)
            if version >= 13:
                [entry] = metadata(ports[node], ["wrong-node"]).topics
                request.topics[0].topic_id = entry.topic_id
            answer = client.request(FETCH, version, request)
        return answer, answer.responses[0].partitions[0]

    assert fetch(follower, 10)[1].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    served = fetch(follower, 12)[1]
    assert served.error_code == ErrorCode.NONE and len(served.records) > 0
    answer, refused = fetch(other, 16)
    assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (refused.current_leader.leader_id, refused.current_leader.leader_epoch) == (leader, 0)
    assert [(e.node_id, e.port) for e in answer.node_endpoints] == [(leader, ports[leader])]


def test_a_group_is_listed_and_described_by_its_coordinator_node_only(
    kafka_cluster: ThreadedBroker,
) -> None:
    from protocol.messages.describe_groups import DESCRIBE_GROUPS
    from protocol.messages.find_coordinator import FIND_COORDINATOR
    from protocol.messages.list_groups import LIST_GROUPS

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap,
            "group.id": "listed",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        create(kafka_cluster, "listed-topic", 1, 1)
        consumer.subscribe(["listed-topic"])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert consumer.assignment()
        ports = nodes(kafka_cluster)
        with RawClient(ports[1]) as client:
            found = client.request(
                FIND_COORDINATOR, 4, Message(key_type=0, coordinator_keys=["listed"])
            ).coordinators[0]
        home = found.node_id
        assert (found.host, found.port) == ("127.0.0.1", ports[home])
        for node, port in ports.items():
            with RawClient(port) as client:
                listed = client.request(LIST_GROUPS, 4, Message(states_filter=[]))
                described = client.request(
                    DESCRIBE_GROUPS,
                    5,
                    Message(groups=["listed"], include_authorized_operations=False),
                ).groups[0]
            names = [g.group_id for g in listed.groups]
            if node == home:
                assert names == ["listed"] and described.error_code == ErrorCode.NONE
            else:
                assert names == [] and described.error_code == ErrorCode.NOT_COORDINATOR
        admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
        result = admin.list_consumer_groups().result(10)
        assert [g.group_id for g in result.valid] == ["listed"]
    finally:
        consumer.close()


def test_aiokafka_sees_the_nodes_and_leaders(kafka_cluster: ThreadedBroker) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer

    create(kafka_cluster, "aio", 3, 3)
    leaders = {i: p.leader_id for i, p in partitions_of(nodes(kafka_cluster)[2], "aio").items()}

    from aiokafka.structs import TopicPartition as AioPartition

    async def run() -> tuple[set[int], dict[int, int]]:
        producer = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap)
        await producer.start()
        try:
            for p in range(3):
                await producer.send_and_wait("aio", b"x", partition=p)
            cluster = producer.client.cluster
            seen = {b.nodeId for b in cluster.brokers()}
            return seen, {p: cluster.leader_for_partition(AioPartition("aio", p)) for p in range(3)}
        finally:
            await producer.stop()

    seen, aio_leaders = asyncio.run(run())
    assert seen == {1, 2, 3}
    assert aio_leaders == leaders


def test_transactions_commit_through_the_transactional_id_s_coordinator_node(
    kafka_cluster: ThreadedBroker,
) -> None:
    from protocol.messages.find_coordinator import FIND_COORDINATOR
    from protocol.messages.init_producer_id import INIT_PRODUCER_ID

    create(kafka_cluster, "txn-out", 3, 3)
    ports = nodes(kafka_cluster)
    with RawClient(ports[1]) as client:
        found = client.request(
            FIND_COORDINATOR, 4, Message(key_type=1, coordinator_keys=["tx-1"])
        ).coordinators[0]
    elsewhere = next(n for n in ports if n != found.node_id)
    with RawClient(ports[elsewhere]) as client:
        refused = client.request(
            INIT_PRODUCER_ID,
            4,
            Message(
                transactional_id="tx-1",
                transaction_timeout_ms=60000,
                producer_id=-1,
                producer_epoch=-1,
            ),
        )
    assert refused.error_code == ErrorCode.NOT_COORDINATOR

    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "transactional.id": "tx-1"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(30):
        producer.produce("txn-out", f"t-{i}".encode(), partition=i % 3)
    producer.commit_transaction(30)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap,
            "group.id": "txn-reader",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe(["txn-out"])

    def poll() -> list[bytes]:
        m = consumer.poll(0.2)
        return [] if m is None or m.error() else [m.value()]

    try:
        assert sorted(_wait_consumed(poll, 30)) == sorted(f"t-{i}".encode() for i in range(30))
    finally:
        consumer.close()


def test_describe_producers_and_consumer_group_describe_answer_on_the_right_node_only(
    kafka_cluster: ThreadedBroker,
) -> None:
    from protocol.messages.consumer_group_describe import CONSUMER_GROUP_DESCRIBE
    from protocol.messages.describe_producers import DESCRIBE_PRODUCERS
    from protocol.messages.find_coordinator import FIND_COORDINATOR

    create(kafka_cluster, "producers", 1, 3)
    ports = nodes(kafka_cluster)
    leader = partitions_of(ports[1], "producers")[0].leader_id
    request = Message(topics=[Message(name="producers", partition_indexes=[0])])
    for node, port in ports.items():
        with RawClient(port) as client:
            part = client.request(DESCRIBE_PRODUCERS, 0, request).topics[0].partitions[0]
        expected = ErrorCode.NONE if node == leader else ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert part.error_code == expected

    with RawClient(ports[1]) as client:
        home = (
            client.request(FIND_COORDINATOR, 4, Message(key_type=0, coordinator_keys=["kip848"]))
            .coordinators[0]
            .node_id
        )
    for node, port in ports.items():
        with RawClient(port) as client:
            described = client.request(
                CONSUMER_GROUP_DESCRIBE,
                0,
                Message(group_ids=["kip848"], include_authorized_operations=False),
            ).groups[0]
        expected = ErrorCode.GROUP_ID_NOT_FOUND if node == home else ErrorCode.NOT_COORDINATOR
        assert described.error_code == expected
