"""KIP-392 in a simulated cluster: with replica.selector.class=RackAwareReplicaSelector a
partition's leader sends a consumer in another rack to a replica in its own rack
(preferred_read_replica, no records), and that follower serves it up to its high watermark,
as a Kafka 4.0 cluster does."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from minikafka import ThreadedBroker
from protocol.errors import ErrorCode
from protocol.messages.fetch import FETCH
from protocol.schema import Message
from tests.e2e.test_cluster_failover import partitions, ports_of
from tests.e2e.test_cluster_replication import create, deliver
from tests.support.produce import fetch_request
from tests.support.raw_client import RawClient

SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
RACKS = {1: "a", 2: "b", 3: "c"}


def fetch_in_rack(port: int, topic: str, rack: str) -> Message:
    request = fetch_request(topic, 0, min_bytes=0)
    request.__dict__["rack_id"] = rack
    with RawClient(port) as client:
        answer = client.request(FETCH, 12, request)
    result: Message = answer.responses[0].partitions[0]
    return result


@pytest.mark.minikafka(
    default_replication_factor=3, racks=["a", "b", "c"], replica_selector_class=SELECTOR
)
def test_the_leader_sends_a_consumer_to_the_replica_in_its_rack(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "near")
    ports = ports_of(kafka_cluster)
    assert deliver(kafka_cluster, "near", "all", count=4) == []
    part = partitions(ports[1], "near")[0]
    leader = part.leader_id
    follower = next(n for n in part.replica_nodes if n != leader)

    sent = fetch_in_rack(ports[leader], "near", RACKS[follower])
    assert (sent.error_code, sent.preferred_read_replica) == (ErrorCode.NONE, follower)
    assert len(sent.records) == 0 and sent.high_watermark == 4
    # Its own rack, no rack, or a rack without a replica: the leader serves.
    for rack in (RACKS[leader], "", "elsewhere"):
        here = fetch_in_rack(ports[leader], "near", rack)
        assert here.preferred_read_replica == -1 and len(here.records) > 0
    served = fetch_in_rack(ports[follower], "near", RACKS[follower])
    assert served.error_code == ErrorCode.NONE and served.high_watermark == 4
    assert len(served.records) > 0

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap,
            "group.id": "near-readers",
            "client.rack": RACKS[follower],
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition("near", 0, 0)])
        got = []
        for _ in range(100):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) == 4:
                break
        assert got == [b"m-0", b"m-1", b"m-2", b"m-3"]
    finally:
        consumer.close()


@pytest.mark.minikafka(default_replication_factor=3, racks=["a", "b", "c"])
def test_without_the_selector_the_leader_always_serves(kafka_cluster: ThreadedBroker) -> None:
    create(kafka_cluster, "plain")
    ports = ports_of(kafka_cluster)
    assert deliver(kafka_cluster, "plain", "all", count=1) == []
    part = partitions(ports[1], "plain")[0]
    follower = next(n for n in part.replica_nodes if n != part.leader_id)
    here = fetch_in_rack(ports[part.leader_id], "plain", RACKS[follower])
    assert here.preferred_read_replica == -1 and len(here.records) > 0
