"""Replica placement (Kafka's rack-aware round robin) and a simulated cluster's elections."""

from __future__ import annotations

from collections import Counter

import pytest

from broker.cluster.placement import rack_alternated, replicas_for, seed_of
from broker.cluster.state import NO_LEADER, Cluster, UnknownNode
from broker.config.loader import make_config
from broker.config.model import ConfigError

NODES = [1, 2, 3]
NO_RACKS: list[str | None] = [None, None, None]


def test_round_robin_as_kafka_assigns_with_a_fixed_start_and_shift() -> None:
    # AdminUtils.assignReplicasToBrokersRackUnaware with startIndex 0, nextReplicaShift 0
    # (its unit tests' fixed start) on brokers 0..4: partition p leads on p % 5, followers
    # shifted by 1 + (shift + j) % 4, the shift growing each full round.
    nodes = [0, 1, 2, 3, 4]
    got = [replicas_for(p, 3, nodes, [None] * 5, (0, 0)) for p in range(10)]
    assert got[:5] == [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1]]
    assert got[5:] == [[0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2]]


def test_leaders_spread_evenly_and_replicas_are_distinct() -> None:
    seed = seed_of(b"\x01" * 16)
    placed = [replicas_for(p, 3, NODES, NO_RACKS, seed) for p in range(12)]
    assert Counter(r[0] for r in placed) == {1: 4, 2: 4, 3: 4}
    assert all(sorted(r) == NODES for r in placed)


def test_placement_is_a_function_of_the_topic_and_partition() -> None:
    seed = seed_of(b"a" * 16)
    first = [replicas_for(p, 2, NODES, NO_RACKS, seed) for p in range(6)]
    assert first == [replicas_for(p, 2, NODES, NO_RACKS, seed) for p in range(6)]
    # Topics start on different nodes (Kafka draws the start index at random).
    starts = {replicas_for(0, 2, NODES, NO_RACKS, seed_of(bytes([i]) * 16))[0] for i in range(30)}
    assert starts == set(NODES)


def test_rack_alternated_list_takes_one_node_per_rack_in_turn() -> None:
    # AdminUtils.getRackAlternatedBrokerList's own example: racks rack1: 0, 1, 2;
    # rack2: 3; rack3: 4, 5 -> 0, 3, 4, 1, 5, 2.
    racks: list[str | None] = ["rack1", "rack1", "rack1", "rack2", "rack3", "rack3"]
    assert rack_alternated([0, 1, 2, 3, 4, 5], racks) == [0, 3, 4, 1, 5, 2]


def test_rack_aware_placement_puts_no_two_replicas_on_one_rack_while_a_rack_is_unused() -> None:
    nodes = [1, 2, 3, 4, 5, 6]
    racks: list[str | None] = ["a", "a", "b", "b", "c", "c"]
    rack_of = dict(zip(nodes, racks, strict=True))
    for p in range(30):
        replicas = replicas_for(p, 3, nodes, racks, seed_of(b"t" * 16))
        assert len(set(replicas)) == 3
        assert len({rack_of[n] for n in replicas}) == 3
    leaders = Counter(replicas_for(p, 3, nodes, racks, (0, 0))[0] for p in range(30))
    assert set(leaders.values()) == {5}


def test_replication_factor_above_the_nodes_is_refused() -> None:
    with pytest.raises(ValueError):
        replicas_for(0, 4, NODES, NO_RACKS, (0, 0))


def _cluster(**props: str) -> Cluster:
    return Cluster(make_config({"minikafka.cluster.size": "3", **props}))


TOPIC = b"\x07" * 16


def test_stopping_a_leader_elects_the_next_in_sync_replica_with_a_bumped_epoch() -> None:
    cluster = _cluster(**{"default.replication.factor": "3"})
    before = cluster.partition(TOPIC, 0)
    old_leader, replicas = before.leader, before.replicas
    assert before.leader_epoch == 0 and before.isr == list(replicas)
    cluster.stop(old_leader, [(TOPIC, 0)])
    after = cluster.partition(TOPIC, 0)
    assert after.leader == next(n for n in replicas if n != old_leader)
    assert after.leader_epoch == 1
    assert old_leader not in after.isr
    assert cluster.offline_replicas(after) == [old_leader]
    cluster.start(old_leader)
    assert sorted(after.isr) == sorted(replicas)
    # Back in the ISR, not the leader: leaders move back only by preferred election.
    assert after.leader != old_leader and after.leader_epoch == 1


def test_a_partition_whose_replicas_all_stopped_has_no_leader_until_its_last_isr_returns() -> None:
    cluster = _cluster()  # default.replication.factor 1
    part = cluster.partition(TOPIC, 0)
    (only,) = part.replicas
    cluster.stop(only, [(TOPIC, 0)])
    assert part.leader == NO_LEADER and part.leader_epoch == 1 and part.isr == [only]
    cluster.start(only)
    assert part.leader == only and part.leader_epoch == 2


def test_a_follower_that_stops_only_leaves_the_isr() -> None:
    cluster = _cluster(**{"default.replication.factor": "2"})
    part = cluster.partition(TOPIC, 0)
    follower = part.replicas[1]
    cluster.stop(follower, [])
    assert part.leader == part.replicas[0] and part.leader_epoch == 0
    assert part.isr == [part.replicas[0]]


def test_unknown_node_ids_are_refused_with_the_cluster_s_ids() -> None:
    cluster = _cluster()
    with pytest.raises(UnknownNode, match=r"no node 9 .*1, 2, 3"):
        cluster.stop(9, [])


@pytest.mark.parametrize("size", ["0", "17", "-1"])
def test_cluster_size_out_of_range_is_a_config_error(size: str) -> None:
    with pytest.raises(ConfigError, match=r"minikafka\.cluster\.size"):
        make_config({"minikafka.cluster.size": size})


def test_racks_must_name_one_rack_per_node() -> None:
    with pytest.raises(ConfigError, match="one rack per node"):
        make_config({"minikafka.cluster.size": "3", "minikafka.cluster.racks": "a,b"})
    config = make_config({"minikafka.cluster.size": "2", "minikafka.cluster.racks": "a,b"})
    assert Cluster(config).racks == {1: "a", 2: "b"}
