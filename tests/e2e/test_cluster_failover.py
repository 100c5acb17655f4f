"""Stopping and starting a simulated cluster's nodes (fault operations broker-stop and
broker-start): leaders move with an epoch bump, clients ride through, nothing acknowledged is
lost or stored twice, and the group coordinator moves with its partition's leader."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka import Message as CkMessage
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka import ThreadedBroker
from protocol.errors import ErrorCode
from protocol.messages.describe_cluster import DESCRIBE_CLUSTER
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.messages.heartbeat import HEARTBEAT
from protocol.messages.metadata import METADATA
from protocol.records import decode_records
from protocol.schema import Message
from tests.support.produce import stored
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.minikafka(default_replication_factor=3)


def ports_of(cluster: ThreadedBroker) -> dict[int, int]:
    return {1 + k: int(a.rsplit(":", 1)[1]) for k, a in enumerate(cluster.bootstrap.split(","))}


def partitions(port: int, topic: str) -> dict[int, Message]:
    with RawClient(port) as client:
        answer = client.request(
            METADATA,
            12,
            Message(
                topics=[Message(name=topic, topic_id=b"\0" * 16)],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
    return {p.partition_index: p for p in answer.topics[0].partitions}


def coordinator_of(port: int, group: str) -> int:
    with RawClient(port) as client:
        answer = client.request(FIND_COORDINATOR, 4, Message(key_type=0, coordinator_keys=[group]))
    [found] = answer.coordinators
    assert found.error_code == ErrorCode.NONE
    return int(found.node_id)


def create(cluster: ThreadedBroker, name: str, count: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, count, 3)])[name].result(10)


def test_idempotent_producer_rides_through_its_leader_stopping_and_stores_each_record_once(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "failover", 3)
    ports = ports_of(kafka_cluster)
    before = partitions(ports[1], "failover")
    victim = before[0].leader_id
    led = sorted(i for i, p in before.items() if p.leader_id == victim)

    acked: list[bytes] = []
    failed: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: CkMessage) -> None:
        if err is None:
            acked.append(msg.value())
        else:
            failed.append(err)

    producer = Producer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
        }
    )
    total = 20_000
    for i in range(total):
        while True:
            try:
                producer.produce(
                    "failover", f"v-{i}".encode(), partition=i % 3, on_delivery=on_delivery
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
        if i == total // 3:
            # Mid-stream, with batches in flight to the victim.
            assert kafka_cluster.stop_node(victim)
    assert producer.flush(60) == 0
    assert failed == []
    assert len(acked) == total

    survivor = next(n for n in ports if n != victim)
    after = partitions(ports[survivor], "failover")
    for i in led:
        assert after[i].leader_id not in (victim, -1)
        assert after[i].leader_epoch == 1
        assert victim not in after[i].isr_nodes
        assert after[i].offline_replicas == [victim]
    for i in set(after) - set(led):
        assert after[i].leader_epoch == 0

    # Every acknowledged record on disk exactly once, in each partition's production order.
    data_dir = Path(str(kafka_cluster.data_dir))
    values: Counter[bytes] = Counter()
    epochs: set[int] = set()
    for p in range(3):
        batches = stored(data_dir, "failover", p)
        epochs |= {h.partition_leader_epoch for h, _ in batches}
        got = [r.value for h, b in batches for r in decode_records(b, h)]
        assert got == [f"v-{i}".encode() for i in range(p, total, 3)]
        values.update(v for v in got if v is not None)
    assert values == Counter(acked)
    # Batches the new leaders appended carry the bumped epoch (UnifiedLog's leader epoch).
    assert epochs == {0, 1}

    assert kafka_cluster.start_node(victim)
    back = partitions(ports[victim], "failover")
    for i in led:
        assert sorted(back[i].isr_nodes) == [1, 2, 3] and back[i].offline_replicas == []


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consumer_group_keeps_consuming_when_its_coordinator_node_stops(
    kafka_cluster: ThreadedBroker, protocol: str
) -> None:
    create(kafka_cluster, "moving", 3)
    ports = ports_of(kafka_cluster)
    group = f"mover-{protocol}"
    coordinator = coordinator_of(ports[1], group)

    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "enable.idempotence": True})
    for i in range(300):
        producer.produce("moving", f"a-{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "group.protocol": protocol,
        }
    )
    consumer.subscribe(["moving"])
    got: list[bytes] = []

    def consume_until(count: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())

    try:
        consume_until(300)
        assert len(got) == 300
        consumer.commit(asynchronous=False)

        # The wrong node refuses the group's requests (Kafka's NOT_COORDINATOR).
        elsewhere = next(n for n in ports if n != coordinator)
        with RawClient(ports[elsewhere]) as client:
            answer = client.request(
                HEARTBEAT,
                4,
                Message(group_id=group, generation_id=1, member_id="m", group_instance_id=None),
            )
        assert answer.error_code == ErrorCode.NOT_COORDINATOR

        assert kafka_cluster.stop_node(coordinator)
        survivor = next(n for n in ports if n != coordinator)
        moved = coordinator_of(ports[survivor], group)
        assert moved != coordinator

        for i in range(300):
            producer.produce("moving", f"b-{i}".encode(), partition=i % 3)
        assert producer.flush(30) == 0
        consume_until(600)
        assert Counter(got) == Counter(
            [f"a-{i}".encode() for i in range(300)] + [f"b-{i}".encode() for i in range(300)]
        )
        # Commits reach the new coordinator.
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition("moving", p) for p in range(3)], 10)
        assert [tp.offset for tp in committed] == [200, 200, 200]
    finally:
        consumer.close()


def test_a_stopped_node_leaves_describe_cluster_and_its_ports_refuse(
    kafka_cluster: ThreadedBroker,
) -> None:
    ports = ports_of(kafka_cluster)
    assert kafka_cluster.stop_node(2)
    assert not kafka_cluster.stop_node(2)  # already stopped
    with pytest.raises(ConnectionRefusedError):
        RawClient(ports[2])
    with RawClient(ports[1]) as client:
        live = client.request(
            DESCRIBE_CLUSTER,
            1,
            Message(include_cluster_authorized_operations=False, endpoint_type=1),
        )
        fenced = client.request(
            DESCRIBE_CLUSTER,
            2,
            Message(
                include_cluster_authorized_operations=False,
                endpoint_type=1,
                include_fenced_brokers=True,
            ),
        )
    assert [b.broker_id for b in live.brokers] == [1, 3]
    assert live.controller_id in (1, 3)
    assert [(b.broker_id, b.is_fenced) for b in fenced.brokers] == [
        (1, False),
        (2, True),
        (3, False),
    ]
    assert kafka_cluster.start_node(2)
    with RawClient(ports[2]) as client:
        answer = client.request(
            DESCRIBE_CLUSTER,
            1,
            Message(include_cluster_authorized_operations=False, endpoint_type=1),
        )
    assert [b.broker_id for b in answer.brokers] == [1, 2, 3]


def _post(cluster: ThreadedBroker, operation: str, body: dict[str, object]) -> tuple[int, str]:
    request = urllib.request.Request(
        f"{cluster.control_url}/v1/{operation}",
        data=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {cluster.control_token}",
            "Content-Type": "application/json",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.minikafka(control=True)
def test_broker_stop_over_http_and_bad_node_ids_get_a_clear_400(
    kafka_cluster: ThreadedBroker,
) -> None:
    status, text = _post(kafka_cluster, "broker-stop", {"node": 7})
    assert status == 400 and "no node 7" in text and "1, 2, 3" in text
    status, text = _post(kafka_cluster, "broker-stop", {"node": "two"})
    assert status == 400 and "integer" in text
    status, _ = _post(kafka_cluster, "broker-stop", {"node": 3})
    assert status == 200
    with pytest.raises(ConnectionRefusedError):
        RawClient(ports_of(kafka_cluster)[3])
    status, _ = _post(kafka_cluster, "broker-start", {"node": 3})
    assert status == 200
    with RawClient(ports_of(kafka_cluster)[3]):
        pass


def test_broker_stop_on_a_single_broker_is_refused(kafka_broker: ThreadedBroker) -> None:
    from broker.toolkit.faults import FaultError

    with pytest.raises(FaultError, match="not a cluster"):
        kafka_broker.faults.broker_stop(1)


def test_nodes_take_consecutive_ports_and_keep_them_through_a_crash_restart(
    kafka_cluster: ThreadedBroker,
) -> None:
    ports = ports_of(kafka_cluster)
    assert [ports[2] - ports[1], ports[3] - ports[1]] == [1, 2]
    create(kafka_cluster, "restarted", 3)
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "enable.idempotence": True})
    for i in range(30):
        producer.produce("restarted", f"r-{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    kafka_cluster.crash_restart()
    assert ports_of(kafka_cluster) == ports
    for i in range(30, 60):
        producer.produce("restarted", f"r-{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    data_dir = Path(str(kafka_cluster.data_dir))
    for p in range(3):
        got = [r.value for h, b in stored(data_dir, "restarted", p) for r in decode_records(b, h)]
        assert got == [f"r-{i}".encode() for i in range(p, 60, 3)]
    assert {p.leader_id for p in partitions(ports[1], "restarted").values()} == {1, 2, 3}


def test_replication_factors_and_manual_assignments_survive_a_restart(
    kafka_cluster: ThreadedBroker,
) -> None:
    from confluent_kafka.admin import NewPartitions

    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic("two", 3, 2)])["two"].result(10)
    admin.create_topics([NewTopic("manual", 2, replica_assignment=[[3, 1], [2, 3]])])[
        "manual"
    ].result(10)
    admin.create_partitions([NewPartitions("manual", 3, replica_assignment=[[1, 2]])])[
        "manual"
    ].result(10)
    port = ports_of(kafka_cluster)[1]

    def replicas(topic: str) -> dict[int, list[int]]:
        return {i: list(p.replica_nodes) for i, p in partitions(port, topic).items()}

    two, manual = replicas("two"), replicas("manual")
    assert all(len(r) == 2 for r in two.values())
    assert manual == {0: [3, 1], 1: [2, 3], 2: [1, 2]}
    kafka_cluster.crash_restart()
    assert replicas("two") == two
    assert replicas("manual") == manual


def test_a_partition_without_a_live_replica_has_no_leader_until_its_node_returns(
    kafka_cluster: ThreadedBroker,
) -> None:
    from protocol.messages.produce import PRODUCE
    from tests.support.produce import batch, produce_request

    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic("lonely", 1, 1)])["lonely"].result(10)
    ports = ports_of(kafka_cluster)
    (only,) = partitions(ports[1], "lonely")[0].replica_nodes
    assert kafka_cluster.stop_node(only)
    other = next(n for n in ports if n != only)
    part = partitions(ports[other], "lonely")[0]
    assert part.error_code == ErrorCode.LEADER_NOT_AVAILABLE
    assert (part.leader_id, part.leader_epoch) == (-1, 1)
    assert part.isr_nodes == [only] and part.offline_replicas == [only]
    with RawClient(ports[other]) as client:
        answer = client.request(PRODUCE, 11, produce_request("lonely", batch(-1, -1, -1, count=1)))
    refused = answer.responses[0].partition_responses[0]
    assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # No leader to name: KIP-951's fields keep their defaults (absent on the wire).
    assert (refused.current_leader.leader_id, refused.current_leader.leader_epoch) == (-1, -1)
    assert answer.get("node_endpoints", []) == []
    assert kafka_cluster.start_node(only)
    back = partitions(ports[only], "lonely")[0]
    assert (back.error_code, back.leader_id, back.leader_epoch) == (ErrorCode.NONE, only, 2)
