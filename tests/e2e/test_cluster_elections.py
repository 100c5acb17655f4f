"""ElectLeaders in a simulated cluster, as Kafka 4.0's controller answers it
(ReplicationControlManager.electLeader): a preferred election moves the leadership back to
the first replica once it is alive and in the ISR, with an epoch bump; an unclean one elects
a live replica outside the last ISR of a partition with no leader, and what that ISR had
beyond it is gone from the log."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import ElectionType, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka import ThreadedBroker
from protocol.errors import ErrorCode
from protocol.messages.elect_leaders import ELECT_LEADERS
from protocol.schema import Message
from tests.e2e.test_cluster_failover import partitions, ports_of
from tests.e2e.test_cluster_replication import create, deliver, produce_raw, wait_until
from tests.support.produce import stored, stored_values
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.minikafka(default_replication_factor=3)


def elect(cluster: ThreadedBroker, kind: ElectionType, topic: str) -> KafkaError | None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    tp = TopicPartition(topic, 0)
    outcome = admin.elect_leaders(kind, [tp]).result(10)
    [(_, error)] = outcome.items()
    if error is None:
        return None
    inner: KafkaError = error.args[0] if isinstance(error, Exception) else error
    return inner


def elect_raw(port: int, kind: int, topic: str) -> Message:
    with RawClient(port) as client:
        answer = client.request(
            ELECT_LEADERS,
            2,
            Message(
                election_type=kind,
                topic_partitions=[Message(topic=topic, partitions=[0])],
                timeout_ms=10_000,
            ),
        )
    result: Message = answer.replica_election_results[0].partition_result[0]
    return result


def test_preferred_election_moves_the_leadership_back_with_an_epoch_bump(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "pref")
    ports = ports_of(kafka_cluster)
    first = partitions(ports[1], "pref")[0]
    preferred, epoch = first.replica_nodes[0], first.leader_epoch
    assert first.leader_id == preferred
    err = elect(kafka_cluster, ElectionType.PREFERRED, "pref")
    assert err is not None and err.code() == KafkaError.ELECTION_NOT_NEEDED

    assert deliver(kafka_cluster, "pref", "all", count=3) == []
    assert kafka_cluster.stop_node(preferred)
    moved = partitions(ports[first.replica_nodes[1]], "pref")[0]
    assert moved.leader_id != preferred and moved.leader_epoch == epoch + 1
    other = next(n for n in ports if n != preferred)
    answer = elect_raw(ports[other], 0, "pref")
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        "The preferred leader was not available.",
    )

    assert kafka_cluster.start_node(preferred)
    wait_until(lambda: preferred in partitions(ports[other], "pref")[0].isr_nodes)
    # Not moved back by itself (leader.imbalance.check.interval.seconds is 300 by default).
    assert partitions(ports[other], "pref")[0].leader_id == moved.leader_id
    assert elect(kafka_cluster, ElectionType.PREFERRED, "pref") is None
    back = partitions(ports[other], "pref")[0]
    assert (back.leader_id, back.leader_epoch) == (preferred, epoch + 2)
    assert deliver(kafka_cluster, "pref", "all", count=2) == []
    data_dir = Path(str(kafka_cluster.data_dir))
    assert stored_values(data_dir, "pref") == [b"m-0", b"m-1", b"m-2", b"m-0", b"m-1"]
    # Every batch carries the epoch of the leader that wrote it.
    epochs = [h.partition_leader_epoch for h, _ in stored(data_dir, "pref")]
    assert epochs[-1] == epoch + 2 and epochs[0] == epoch


def test_unclean_election_loses_what_the_last_isr_had_beyond_the_new_leader(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "unclean")
    ports = ports_of(kafka_cluster)
    assert deliver(kafka_cluster, "unclean", "all", count=2) == []
    part = partitions(ports[1], "unclean")[0]
    leader = part.leader_id
    laggard = next(n for n in part.replica_nodes if n != leader)
    third = next(n for n in part.replica_nodes if n not in (leader, laggard))
    # The laggard stops holding offsets 0-1; the ISR (leader, third) goes on to offset 4.
    assert kafka_cluster.stop_node(laggard)
    assert deliver(kafka_cluster, "unclean", "all", count=2) == []
    assert kafka_cluster.stop_node(third)
    assert kafka_cluster.stop_node(leader)
    assert kafka_cluster.start_node(laggard)
    assert partitions(ports[laggard], "unclean")[0].leader_id == -1
    # A preferred election has no live ISR member to elect; an unclean one takes the laggard.
    preferred = elect_raw(ports[laggard], 0, "unclean")
    assert preferred.error_code == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    before = partitions(ports[laggard], "unclean")[0].leader_epoch
    assert elect(kafka_cluster, ElectionType.UNCLEAN, "unclean") is None
    now = partitions(ports[laggard], "unclean")[0]
    assert (now.leader_id, now.isr_nodes, now.leader_epoch) == (laggard, [laggard], before + 1)
    again = elect_raw(ports[laggard], 1, "unclean")
    assert (again.error_code, again.error_message) == (
        ErrorCode.ELECTION_NOT_NEEDED,
        "Leader election not needed for topic partition.",
    )
    data_dir = Path(str(kafka_cluster.data_dir))
    assert stored_values(data_dir, "unclean") == [b"m-0", b"m-1"]
    written = produce_raw(ports[laggard], "unclean", [b"after"], acks=1, timeout_ms=5000)
    assert (written.error_code, written.base_offset) == (ErrorCode.NONE, 2)
    assert stored_values(data_dir, "unclean") == [b"m-0", b"m-1", b"after"]


@pytest.mark.minikafka(cluster_size=4)
def test_unclean_election_with_no_replica_alive_finds_no_eligible_leader(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "dark")
    ports = ports_of(kafka_cluster)
    replicas = partitions(ports[1], "dark")[0].replica_nodes
    bystander = next(n for n in ports if n not in replicas)
    answer = elect_raw(ports[bystander], 1, "dark")
    assert answer.error_code == ErrorCode.ELECTION_NOT_NEEDED  # it has a leader
    for node in replicas:
        assert kafka_cluster.stop_node(node)
    answer = elect_raw(ports[bystander], 1, "dark")
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        "Eligible topic partition leaders are not available.",
    )


@pytest.mark.minikafka(leader_imbalance_check_interval_seconds=1)
def test_automatic_rebalancing_moves_leaders_back_once_the_stopped_node_returns(
    kafka_cluster: ThreadedBroker,
) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic("rebalanced", 3, 3)])["rebalanced"].result(10)
    ports = ports_of(kafka_cluster)
    start = partitions(ports[1], "rebalanced")
    assert all(p.leader_id == p.replica_nodes[0] for p in start.values())
    led = next(p for p in start.values())
    node = led.leader_id
    assert deliver(kafka_cluster, "rebalanced", "all", count=2) == []
    assert kafka_cluster.stop_node(node)
    other = next(n for n in ports if n != node)
    assert partitions(ports[other], "rebalanced")[led.partition_index].leader_id != node
    assert kafka_cluster.start_node(node)

    def balanced() -> bool:
        now = partitions(ports[other], "rebalanced")
        return all(p.leader_id == p.replica_nodes[0] for p in now.values())

    wait_until(balanced, timeout=15)
    back = partitions(ports[node], "rebalanced")[led.partition_index]
    assert (back.leader_id, back.leader_epoch) == (node, led.leader_epoch + 2)
    assert deliver(kafka_cluster, "rebalanced", "all", count=1) == []
    assert stored_values(Path(str(kafka_cluster.data_dir)), "rebalanced") == [
        b"m-0",
        b"m-1",
        b"m-0",
    ]


def _lose_the_isr(cluster: ThreadedBroker, topic: str) -> tuple[int, dict[int, int], int]:
    """Two records, the laggard stops, two more, then the rest of the ISR stops: the laggard
    (offsets 0-1) starts again. Its node id, the ports and the epoch before it started."""
    ports = ports_of(cluster)
    assert deliver(cluster, topic, "all", count=2) == []
    part = partitions(ports[1], topic)[0]
    leader = part.leader_id
    laggard = next(n for n in part.replica_nodes if n != leader)
    third = next(n for n in part.replica_nodes if n not in (leader, laggard))
    assert cluster.stop_node(laggard)
    assert deliver(cluster, topic, "all", count=2) == []
    assert cluster.stop_node(third)
    epoch = partitions(ports[leader], topic)[0].leader_epoch
    assert cluster.stop_node(leader)
    assert cluster.start_node(laggard)
    return laggard, ports, epoch


def test_a_topic_allowing_unclean_election_elects_the_returning_laggard_at_once(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "loose", {"unclean.leader.election.enable": "true"})
    laggard, ports, epoch = _lose_the_isr(kafka_cluster, "loose")
    now = partitions(ports[laggard], "loose")[0]
    assert (now.leader_id, now.isr_nodes, now.leader_epoch) == (laggard, [laggard], epoch + 2)
    data_dir = Path(str(kafka_cluster.data_dir))
    assert stored_values(data_dir, "loose") == [b"m-0", b"m-1"]
    # Without it (test_unclean_election_loses_...) the partition waits with no leader.


@pytest.mark.minikafka(unclean_leader_election_enable=True)
def test_the_broker_default_allows_unclean_election_for_every_topic(
    kafka_cluster: ThreadedBroker,
) -> None:
    create(kafka_cluster, "loose")
    laggard, ports, epoch = _lose_the_isr(kafka_cluster, "loose")
    now = partitions(ports[laggard], "loose")[0]
    assert (now.leader_id, now.isr_nodes, now.leader_epoch) == (laggard, [laggard], epoch + 2)
    assert stored_values(Path(str(kafka_cluster.data_dir)), "loose") == [b"m-0", b"m-1"]
