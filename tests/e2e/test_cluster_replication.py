"""Replication in a simulated cluster: followers trail their leader (the replication-delay
fault), consumers see only up to the high watermark (the ISR's least log end), acks=all
answers once the ISR has the batch or times out, min.insync.replicas refuses writes, and
ISRs shrink and expand as Kafka's (stopped node at once, lagging follower after
replica.lag.time.max.ms, back once caught up), and on failover the new leader's log is what
it had: acks=1 records beyond it are gone."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer, TopicPartition
from confluent_kafka import Message as CkMessage
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka import ThreadedBroker
from protocol.errors import ErrorCode
from protocol.messages.fetch import FETCH
from protocol.messages.list_offsets import LIST_OFFSETS
from protocol.messages.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from protocol.messages.produce import PRODUCE
from protocol.records import build_batch
from protocol.schema import Message
from tests.e2e.test_cluster_failover import _post, partitions, ports_of
from tests.support.produce import fetch_partition, fetch_request, stored, stored_values
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.minikafka(default_replication_factor=3)


def create(cluster: ThreadedBroker, name: str, configs: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, 1, 3, config=configs or {})])[name].result(10)


def wait_until(what: Callable[[], bool], timeout: float = 10.0) -> float:
    """Poll ``what`` until true; the seconds it took (fails at ``timeout``)."""
    started = time.monotonic()
    while not what():
        assert time.monotonic() - started < timeout, "condition not reached in time"
        time.sleep(0.02)
    return time.monotonic() - started


def produce_raw(port: int, topic: str, values: list[bytes], acks: int, timeout_ms: int) -> Message:
    data = build_batch([(None, v) for v in values])
    with RawClient(port) as client:
        answer = client.request(
            PRODUCE,
            11,
            Message(
                transactional_id=None,
                acks=acks,
                timeout_ms=timeout_ms,
                topic_data=[Message(name=topic, partition_data=[Message(index=0, records=data)])],
            ),
        )
    result: Message = answer.responses[0].partition_responses[0]
    return result


def latest(port: int, topic: str) -> int:
    """ListOffsets' latest offset of partition 0 (the high watermark), from its leader."""
    with RawClient(port) as client:
        answer = client.request(
            LIST_OFFSETS,
            7,
            Message(
                replica_id=-1,
                isolation_level=0,
                topics=[
                    Message(
                        name=topic,
                        partitions=[
                            Message(partition_index=0, current_leader_epoch=-1, timestamp=-1)
                        ],
                    )
                ],
            ),
        )
    part = answer.topics[0].partitions[0]
    assert part.error_code == ErrorCode.NONE
    return int(part.offset)


def leader_and_followers(cluster: ThreadedBroker, topic: str) -> tuple[int, list[int]]:
    part = partitions(ports_of(cluster)[1], topic)[0]
    return part.leader_id, [n for n in part.replica_nodes if n != part.leader_id]


def deliver(cluster: ThreadedBroker, topic: str, acks: str, count: int = 1) -> list[KafkaError]:
    """confluent-kafka's delivery reports (no retries: the broker's first answer counts)."""
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: CkMessage) -> None:
        if err is not None:
            errors.append(err)

    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": acks, "retries": 0, "linger.ms": 0}
    )
    for i in range(count):
        producer.produce(topic, f"m-{i}".encode(), partition=0, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    return errors


def test_acks_all_below_min_insync_replicas_is_refused_and_nothing_is_stored(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "strict", {"min.insync.replicas": "3"})
    create(kafka_cluster, "lenient", {"min.insync.replicas": "2"})
    _, followers = leader_and_followers(kafka_cluster, "strict")
    assert deliver(kafka_cluster, "strict", "all") == []
    assert kafka_cluster.stop_node(followers[0])

    errors = deliver(kafka_cluster, "strict", "all", count=3)
    assert [e.code() for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS] * 3
    data_dir = Path(str(kafka_cluster.data_dir))
    assert stored_values(data_dir, "strict") == [b"m-0"]
    # acks=1 is not held to min.insync.replicas (Partition.appendRecordsToLeader).
    assert deliver(kafka_cluster, "strict", "1") == []
    assert stored_values(data_dir, "strict") == [b"m-0", b"m-0"]

    # Two of three in sync satisfy min.insync.replicas=2.
    assert deliver(kafka_cluster, "lenient", "all", count=5) == []
    assert len(stored_values(data_dir, "lenient")) == 5


# kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text, deprecated
# since Python 3.11; pytest runs with warnings as errors.
@pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")
@pytest.mark.minikafka(min_insync_replicas=2)
def test_broker_min_insync_replicas_refuses_kafka_python_when_both_followers_stop(
    kafka_cluster: ThreadedBroker,
) -> None:
    import kafka
    import kafka.errors

    create(kafka_cluster, "guarded")
    leader, followers = leader_and_followers(kafka_cluster, "guarded")
    for node in followers:
        assert kafka_cluster.stop_node(node)
    part = partitions(ports_of(kafka_cluster)[leader], "guarded")[0]
    assert part.isr_nodes == [leader] and sorted(part.offline_replicas) == sorted(followers)

    producer = kafka.KafkaProducer(
        bootstrap_servers=kafka_cluster.bootstrap, acks="all", retries=0, linger_ms=0
    )
    try:
        with pytest.raises(kafka.errors.NotEnoughReplicasError):
            producer.send("guarded", b"refused", partition=0).get(timeout=30)
    finally:
        producer.close()
    assert stored_values(Path(str(kafka_cluster.data_dir)), "guarded") == []

    # One follower back and caught up: the ISR is two again and acks=all is taken.
    assert kafka_cluster.start_node(followers[0])
    producer = kafka.KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap, acks="all")
    try:
        sent = producer.send("guarded", b"taken", partition=0).get(timeout=30)
    finally:
        producer.close()
    assert sent.offset == 0
    assert stored_values(Path(str(kafka_cluster.data_dir)), "guarded") == [b"taken"]


@pytest.mark.minikafka(control=True)
def test_high_watermark_trails_the_log_end_by_the_replication_delay(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "trailing")
    leader, _ = leader_and_followers(kafka_cluster, "trailing")
    port = ports_of(kafka_cluster)[leader]
    status, _ = _post(kafka_cluster, "replication-delay", {"delay_ms": 1500})
    assert status == 200

    started = time.monotonic()
    answer = produce_raw(port, "trailing", [b"a", b"b", b"c"], acks=1, timeout_ms=30_000)
    assert answer.error_code == ErrorCode.NONE and answer.base_offset == 0
    assert time.monotonic() - started < 1.0
    # On the leader's disk at once, but not committed: consumers see nothing yet.
    data_dir = Path(str(kafka_cluster.data_dir))
    assert stored_values(data_dir, "trailing") == [b"a", b"b", b"c"]
    assert latest(port, "trailing") == 0
    with RawClient(port) as client:
        part = fetch_partition(client, "trailing", 0)
    assert part.high_watermark == 0 and part.records in (b"", None)
    took = wait_until(lambda: latest(port, "trailing") == 3)
    assert time.monotonic() - started >= 1.4
    assert took < 5
    with RawClient(port) as client:
        part = fetch_partition(client, "trailing", 0)
    assert part.high_watermark == 3 and len(part.records) > 0

    # acks=all answers once the followers have the batch: after the delay.
    started = time.monotonic()
    answer = produce_raw(port, "trailing", [b"d"], acks=-1, timeout_ms=30_000)
    assert answer.error_code == ErrorCode.NONE and answer.base_offset == 3
    assert time.monotonic() - started >= 1.4
    assert latest(port, "trailing") == 4

    # Within a shorter request timeout: REQUEST_TIMED_OUT, the append kept (DelayedProduce).
    answer = produce_raw(port, "trailing", [b"e"], acks=-1, timeout_ms=300)
    assert answer.error_code == ErrorCode.REQUEST_TIMED_OUT and answer.base_offset == 4
    assert stored_values(data_dir, "trailing")[-1] == b"e"
    wait_until(lambda: latest(port, "trailing") == 5)

    # A consumer (confluent-kafka) reads everything once committed.
    assert kafka_cluster.faults.replication_delay(0) == 1500
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap,
            "group.id": "trailer",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("trailing", 0), timeout=10)
        assert (low, high) == (0, 5)
    finally:
        consumer.close()


@pytest.mark.minikafka(replica_lag_time_max_ms=600)
def test_isr_shrinks_for_a_lagging_follower_and_expands_once_it_caught_up(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "lagging")
    leader, followers = leader_and_followers(kafka_cluster, "lagging")
    port = ports_of(kafka_cluster)[leader]

    def isr() -> list[int]:
        return list(partitions(port, "lagging")[0].isr_nodes)

    assert sorted(isr()) == [1, 2, 3]
    kafka_cluster.faults.replication_delay(3000)
    started = time.monotonic()
    answer = produce_raw(port, "lagging", [b"x"], acks=1, timeout_ms=30_000)
    assert answer.error_code == ErrorCode.NONE
    # Not caught up for replica.lag.time.max.ms: both followers leave the ISR, and the
    # high watermark (the ISR is the leader alone now) reaches the log end.
    wait_until(lambda: isr() == [leader], timeout=2.5)
    assert 0.6 <= time.monotonic() - started < 3.0
    assert latest(port, "lagging") == 1
    # They fetch the record after the delay, catch up, and rejoin.
    wait_until(lambda: sorted(isr()) == [1, 2, 3], timeout=5)
    assert time.monotonic() - started >= 2.9

    # A stopped follower leaves at once and comes back only once caught up after its start.
    # (A delay under replica.lag.time.max.ms: the other follower stays in sync.)
    kafka_cluster.faults.replication_delay(400)
    assert kafka_cluster.stop_node(followers[0])
    part = partitions(port, "lagging")[0]
    assert followers[0] not in part.isr_nodes and part.offline_replicas == [followers[0]]
    # acks=all: answered once the running follower has it, so the high watermark is past
    # what the stopped one has (a follower at the high watermark would rejoin at once).
    assert produce_raw(port, "lagging", [b"y"], acks=-1, timeout_ms=30_000).error_code == 0
    assert latest(port, "lagging") == 2
    assert kafka_cluster.start_node(followers[0])
    started = time.monotonic()
    part = partitions(port, "lagging")[0]
    assert followers[0] not in part.isr_nodes and part.offline_replicas == []
    wait_until(lambda: followers[0] in isr(), timeout=5)
    assert time.monotonic() - started >= 0.35
    # Kafka's ISR grows at its end.
    assert isr()[-1] == followers[0]


def test_replication_delay_on_a_single_broker_is_refused(kafka_broker: ThreadedBroker) -> None:
    from broker.toolkit.faults import FaultError

    with pytest.raises(FaultError, match="not a cluster"):
        kafka_broker.faults.replication_delay(100)


def test_acks_1_records_the_new_leader_lacked_are_lost_on_failover_exactly(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "lossy")
    leader, followers = leader_and_followers(kafka_cluster, "lossy")
    ports = ports_of(kafka_cluster)
    data_dir = Path(str(kafka_cluster.data_dir))
    committed = produce_raw(ports[leader], "lossy", [b"c0", b"c1", b"c2"], -1, 30_000)
    assert committed.error_code == ErrorCode.NONE and committed.base_offset == 0

    # Followers far behind: acks=1 writes are acknowledged by the leader alone.
    kafka_cluster.faults.replication_delay(60_000)
    acked: dict[bytes, int] = {}

    def on_delivery(err: KafkaError | None, msg: CkMessage) -> None:
        assert err is None
        acked[msg.value()] = msg.offset()

    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "acks": "1"})
    for i in range(4):
        producer.produce("lossy", f"u{i}".encode(), partition=0, on_delivery=on_delivery)
        producer.flush(10)
    assert acked == {b"u0": 3, b"u1": 4, b"u2": 5, b"u3": 6}
    assert stored_values(data_dir, "lossy") == [b"c0", b"c1", b"c2", b"u0", b"u1", b"u2", b"u3"]
    assert latest(ports[leader], "lossy") == 3

    assert kafka_cluster.stop_node(leader)
    after = partitions(ports[followers[0]], "lossy")[0]
    assert after.leader_id == followers[0] and after.leader_epoch == 1
    new_port = ports[after.leader_id]
    # The new leader's log is what it had: offsets 3-6 went, 0-2 stayed.
    assert stored_values(data_dir, "lossy") == [b"c0", b"c1", b"c2"]
    assert latest(new_port, "lossy") == 3
    with RawClient(new_port) as client:
        assert fetch_partition(client, "lossy", 5).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert fetch_partition(client, "lossy", 3).error_code == ErrorCode.NONE

    # Writing goes on from offset 3 under the new epoch.
    kafka_cluster.faults.replication_delay(0)
    again = produce_raw(new_port, "lossy", [b"n0"], -1, 30_000)
    assert again.error_code == ErrorCode.NONE and again.base_offset == 3
    batches = stored(data_dir, "lossy")
    assert [(h.base_offset, h.partition_leader_epoch) for h, _ in batches] == [(0, 0), (3, 1)]
    # A consumer that fetched up to offset 5 in epoch 0 learns where its log diverged: epoch
    # 0 ended at 3 on the new leader's log (KIP-320, both ways a client asks).
    with RawClient(new_port) as client:
        ends = client.request(
            OFFSET_FOR_LEADER_EPOCH,
            4,
            Message(
                replica_id=-1,
                topics=[
                    Message(
                        topic="lossy",
                        partitions=[Message(partition=0, current_leader_epoch=1, leader_epoch=0)],
                    )
                ],
            ),
        )
        answer = ends.topics[0].partitions[0]
        assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, 0, 3)
        request = fetch_request("lossy", 5, min_bytes=0)
        request.topics[0].partitions[0].__dict__.update(
            current_leader_epoch=1, last_fetched_epoch=0
        )
        diverged = client.request(FETCH, 12, request).responses[0].partitions[0]
        assert diverged.error_code == ErrorCode.NONE
        assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (0, 3)
    # The old leader comes back as a follower of the truncated log.
    assert kafka_cluster.start_node(leader)
    wait_until(lambda: sorted(partitions(new_port, "lossy")[0].isr_nodes) == [1, 2, 3])
    assert latest(new_port, "lossy") == 4
