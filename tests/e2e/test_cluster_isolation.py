"""Isolating a simulated cluster's node (fault operation broker-isolate): the zombie leader.

Its broker session expires, so the controller fences it (its leaderships move with an epoch
bump, it leaves the ISRs, other nodes stop listing it), while its ports stay open and it
answers from the view it had: it still believes it leads, takes acks=1 writes that never
reach the partition's log, cannot complete acks=all ones (REQUEST_TIMED_OUT, or
NOT_LEADER_OR_FOLLOWER once it rejoins), serves consumers up to its frozen high watermark
and refuses a newer leader epoch (UNKNOWN_LEADER_EPOCH), as a Kafka 4.0 broker cut off from
the KRaft controller and its peers does.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka import Message as CkMessage

from minikafka import ThreadedBroker
from protocol.errors import ErrorCode
from protocol.messages.fetch import FETCH
from protocol.messages.metadata import METADATA
from protocol.schema import Message
from tests.e2e.test_cluster_failover import _post, partitions, ports_of
from tests.e2e.test_cluster_replication import create, deliver, produce_raw, wait_until
from tests.support.produce import fetch_request, stored_values
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.minikafka(default_replication_factor=3)


def broker_ids(port: int) -> list[int]:
    with RawClient(port) as client:
        answer = client.request(
            METADATA,
            12,
            Message(
                topics=[],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
    return sorted(b.node_id for b in answer.brokers)


def fetch_with_epoch(port: int, topic: str, epoch: int) -> Message:
    request = fetch_request(topic, 0, min_bytes=0)
    request.topics[0].partitions[0].__dict__["current_leader_epoch"] = epoch
    with RawClient(port) as client:
        answer = client.request(FETCH, 12, request)
    result: Message = answer.responses[0].partitions[0]
    return result


def deliver_via(port: int, topic: str, count: int) -> list[KafkaError]:
    """acks=all with confluent-kafka bootstrapped on one node (not the zombie's stale view)."""
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: CkMessage) -> None:
        if err is not None:
            errors.append(err)

    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all"})
    for i in range(count):
        producer.produce(topic, f"m-{i}".encode(), partition=0, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    return errors


def zombie_waits(cluster: ThreadedBroker) -> int:
    """acks=all appends the broker holds (its produce purgatory), read off its state."""
    replication = cluster._broker.host.broker.state.replication
    return int(replication.waiting_appends())


def test_an_isolated_leader_answers_from_its_stale_view_and_loses_what_it_takes(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "zombie")
    ports = ports_of(kafka_cluster)
    assert deliver(kafka_cluster, "zombie", "all", count=3) == []
    before = partitions(ports[1], "zombie")[0]
    zombie, epoch = before.leader_id, before.leader_epoch
    other = next(n for n in ports if n != zombie)

    assert kafka_cluster.isolate_node(zombie)
    assert not kafka_cluster.isolate_node(zombie)  # isolated already

    # The controller's view, on the other nodes: fenced, out of the ISR, a new leader.
    moved = partitions(ports[other], "zombie")[0]
    assert moved.leader_id != zombie and moved.leader_epoch == epoch + 1
    assert zombie not in moved.isr_nodes
    assert zombie not in broker_ids(ports[other])
    # The zombie's own view: unchanged.
    stale = partitions(ports[zombie], "zombie")[0]
    assert (stale.leader_id, stale.leader_epoch) == (zombie, epoch)
    assert sorted(stale.isr_nodes) == [1, 2, 3] and broker_ids(ports[zombie]) == [1, 2, 3]

    # acks=1 to the zombie succeeds at its own next offsets; acks=all cannot complete.
    first = produce_raw(ports[zombie], "zombie", [b"lost-1", b"lost-2"], acks=1, timeout_ms=5000)
    assert (first.error_code, first.base_offset) == (ErrorCode.NONE, 3)
    second = produce_raw(ports[zombie], "zombie", [b"lost-3"], acks=1, timeout_ms=5000)
    assert (second.error_code, second.base_offset) == (ErrorCode.NONE, 5)
    timed_out = produce_raw(ports[zombie], "zombie", [b"lost-4"], acks=-1, timeout_ms=300)
    assert timed_out.error_code == ErrorCode.REQUEST_TIMED_OUT

    # The new leader takes writes (from producers that know of it); the zombie's consumers
    # see no further than they did.
    assert deliver_via(ports[other], "zombie", 2) == []
    served = fetch_with_epoch(ports[zombie], "zombie", epoch)
    assert served.error_code == ErrorCode.NONE and served.high_watermark == 3
    assert fetch_with_epoch(ports[zombie], "zombie", epoch + 1).error_code == (
        ErrorCode.UNKNOWN_LEADER_EPOCH
    )
    assert fetch_with_epoch(ports[moved.leader_id], "zombie", epoch).error_code == (
        ErrorCode.FENCED_LEADER_EPOCH
    )

    # An acks=all append waiting on the zombie answers NOT_LEADER_OR_FOLLOWER at its rejoin.
    answers: list[Message] = []
    waiting = threading.Thread(
        target=lambda: answers.append(
            produce_raw(ports[zombie], "zombie", [b"lost-5"], acks=-1, timeout_ms=30_000)
        )
    )
    waiting.start()
    wait_until(lambda: zombie_waits(kafka_cluster) == 1)
    started = time.monotonic()
    assert kafka_cluster.start_node(zombie)
    waiting.join(10)
    assert time.monotonic() - started < 10
    assert [a.error_code for a in answers] == [ErrorCode.NOT_LEADER_OR_FOLLOWER]

    # Rejoined as a follower: the controller's view everywhere, back in the ISR.
    def rejoined() -> bool:
        seen = partitions(ports[zombie], "zombie")[0]
        return seen.leader_id == moved.leader_id and zombie in seen.isr_nodes

    wait_until(rejoined)
    assert partitions(ports[zombie], "zombie")[0].leader_epoch == epoch + 1
    # Nothing the zombie took was kept.
    data_dir = Path(str(kafka_cluster.data_dir))
    assert stored_values(data_dir, "zombie") == [b"m-0", b"m-1", b"m-2", b"m-0", b"m-1"]


def test_a_producer_bootstrapped_on_the_zombie_is_told_success_and_loses_the_records(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "stale")
    ports = ports_of(kafka_cluster)
    assert deliver(kafka_cluster, "stale", "all", count=1) == []
    zombie = partitions(ports[1], "stale")[0].leader_id
    assert kafka_cluster.isolate_node(zombie)

    reports: list[tuple[KafkaError | None, int]] = []

    def on_delivery(err: KafkaError | None, msg: CkMessage) -> None:
        reports.append((err, msg.offset()))

    producer = Producer(
        {"bootstrap.servers": f"127.0.0.1:{ports[zombie]}", "acks": "1", "linger.ms": 0}
    )
    for i in range(3):
        producer.produce("stale", f"z-{i}".encode(), partition=0, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert reports == [(None, 1), (None, 2), (None, 3)]
    data_dir = Path(str(kafka_cluster.data_dir))
    assert stored_values(data_dir, "stale") == [b"m-0"]


@pytest.mark.minikafka(control=True)
def test_broker_isolate_over_http_and_a_stop_of_the_isolated_node_closes_its_ports(
    kafka_cluster: ThreadedBroker,
) -> None:
    ports = ports_of(kafka_cluster)
    status, text = _post(kafka_cluster, "broker-isolate", {"node": 9})
    assert status == 400 and "no node 9" in text
    status, text = _post(kafka_cluster, "broker-isolate", {"node": 3})
    assert status == 200 and "true" in text
    with RawClient(ports[3]):
        pass  # its ports stay open
    assert 3 not in broker_ids(ports[1])
    assert broker_ids(ports[3]) == [1, 2, 3]
    status, _ = _post(kafka_cluster, "broker-stop", {"node": 3})
    assert status == 200
    with pytest.raises(ConnectionRefusedError):
        RawClient(ports[3])
    assert kafka_cluster.start_node(3)
    wait_until(lambda: broker_ids(ports[1]) == [1, 2, 3])
    with RawClient(ports[3]):
        pass
