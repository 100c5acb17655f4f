"""offsets.topic.num.partitions and transaction.state.log.num.partitions set to 7 and 3: a
transaction with send_offsets_to_transaction (confluent-kafka) puts the group's
__consumer_offsets-<abs(hashCode) % 7> in the transaction (DescribeTransactions, the
__transaction_state records), writes its offsets there and its state at
__transaction_state-<abs(hashCode) % 3>, checked on the segment files; WriteTxnMarkers knows
7 offsets partitions; in a simulated cluster FindCoordinator names the leader of the key's
partition of the configured count."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import coordinator_records as cr
from protocol import transaction_log_records as tl
from protocol.errors import ErrorCode
from protocol.messages.describe_transactions import DESCRIBE_TRANSACTIONS
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.messages.write_txn_markers import WRITE_TXN_MARKERS
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess, running
from tests.support.compaction import read_partition
from tests.support.internal_topics import java_partition
from tests.support.raw_client import RawClient

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")

OFFSETS = "__consumer_offsets"
TXN_STATE = "__transaction_state"
SETTINGS = {"offsets.topic.num.partitions": "7", "transaction.state.log.num.partitions": "3"}
GROUP, TXN_ID = "ledger-app", "ledger-tx"


def partitions_of(data_dir: Path, topic: str) -> list[int]:
    return sorted(int(p.name.rsplit("-", 1)[1]) for p in data_dir.glob(f"{topic}-*"))


def described_partitions(broker: BrokerProcess, txn_id: str) -> dict[str, list[int]]:
    with RawClient(broker.port) as client:
        answer = client.request(DESCRIBE_TRANSACTIONS, 0, Message(transactional_ids=[txn_id]))
    [state] = answer.transaction_states
    assert state.error_code == ErrorCode.NONE
    return {t.topic: sorted(t.partitions) for t in state.topics}


def marker_errors(broker: BrokerProcess, partitions: list[int]) -> list[int]:
    marker = Message(
        producer_id=987654,
        producer_epoch=0,
        transaction_result=True,
        topics=[Message(name=OFFSETS, partition_indexes=partitions)],
        coordinator_epoch=0,
    )
    with RawClient(broker.port) as client:
        answer = client.request(WRITE_TXN_MARKERS, 1, Message(markers=[marker]))
    return [p.error_code for m in answer.markers for t in m.topics for p in t.partitions]


def test_a_transaction_with_offsets_uses_the_configured_partition_counts(
    tmp_path: Path,
) -> None:
    offsets_partition, state_partition = java_partition(GROUP, 7), java_partition(TXN_ID, 3)
    # Partitions 50 would have picked: the test tells the two apart.
    assert offsets_partition != java_partition(GROUP, 50)
    with running(tmp_path / "data", SETTINGS) as broker:
        admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([confluent_admin.NewTopic("inputs", 1, 1)])["inputs"].result(10)
        consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": GROUP}
        )
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": broker.bootstrap, "transactional.id": TXN_ID}
        )
        try:
            producer.init_transactions(15)
            producer.begin_transaction()
            producer.produce("inputs", value=b"out", partition=0)
            producer.send_offsets_to_transaction(
                [confluent_kafka.TopicPartition("inputs", 0, 5)],
                consumer.consumer_group_metadata(),
                15,
            )
            assert described_partitions(broker, TXN_ID) == {
                "inputs": [0],
                OFFSETS: [offsets_partition],
            }
            producer.commit_transaction(15)
            [committed] = consumer.committed([confluent_kafka.TopicPartition("inputs", 0)], 10)
            assert committed.offset == 5
        finally:
            consumer.close()

        # WriteTxnMarkers: __consumer_offsets has partitions 0-6.
        errors = marker_errors(broker, [6, 7])
        assert errors[0] != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert errors[1] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        data = broker.data_dir

    assert partitions_of(data, OFFSETS) == list(range(7))
    assert partitions_of(data, TXN_STATE) == list(range(3))
    commits = []
    for p in range(7):
        for r in read_partition(data, OFFSETS, p):
            assert r.key is not None
            kind, key = cr.decode_key(r.key)
            if kind == cr.OFFSET_COMMIT and r.value is not None:
                commits.append((p, key.group, key.topic, cr.decode_value(kind, r.value)[1].offset))
    assert commits == [(offsets_partition, GROUP, "inputs", 5)]

    states = []
    for p in range(3):
        for r in read_partition(data, TXN_STATE, p):
            assert r.key is not None and r.value is not None
            assert tl.decode_key(r.key).transactional_id == TXN_ID
            states.append((p, tl.decode_value(r.value)[1]))
    assert {p for p, _ in states} == {state_partition}
    ongoing = [v for _, v in states if v.transaction_status == 1]
    assert ongoing, "no Ongoing record"
    listed = {e.topic: sorted(e.partition_ids) for e in ongoing[-1].transaction_partitions}
    assert listed == {"inputs": [0], OFFSETS: [offsets_partition]}


@pytest.mark.parametrize(("key_type", "topic", "count"), [(0, OFFSETS, 7), (1, TXN_STATE, 3)])
def test_in_a_simulated_cluster_the_coordinator_leads_the_keys_partition(
    tmp_path: Path, key_type: int, topic: str, count: int
) -> None:
    keys = [f"key-{i}" for i in range(12)]
    with running(tmp_path / "data", {**SETTINGS, "minikafka.cluster.size": "3"}) as broker:
        with RawClient(broker.port) as client:
            found = client.request(
                FIND_COORDINATOR, 4, Message(key_type=key_type, coordinator_keys=keys)
            ).coordinators
        admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
        listed = admin.list_topics(topic, timeout=10).topics[topic]
    assert len(listed.partitions) == count
    assert all(c.error_code == ErrorCode.NONE for c in found)
    nodes = {c.key: c.node_id for c in found}
    leaders = {k: listed.partitions[java_partition(k, count)].leader for k in keys}
    assert nodes == leaders
    # With 50 partitions some of these keys would be coordinated elsewhere.
    assert len(set(nodes.values())) > 1


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, {OFFSETS: 3, TXN_STATE: 3}),
        (
            {
                "offsets.topic.replication.factor": "2",
                "transaction.state.log.replication.factor": "1",
            },
            {OFFSETS: 2, TXN_STATE: 1},
        ),
        ({"offsets.topic.replication.factor": "5"}, {OFFSETS: 3, TXN_STATE: 3}),
    ],
)
def test_in_a_simulated_cluster_the_internal_topics_have_their_replication_factors(
    tmp_path: Path, settings: dict[str, str], expected: dict[str, int]
) -> None:
    """offsets.topic.replication.factor / transaction.state.log.replication.factor give each
    partition's replicas (Metadata), capped at the cluster's size; the ISR holds them all."""
    overrides = {**SETTINGS, **settings, "minikafka.cluster.size": "3"}
    with running(tmp_path / "data", overrides) as broker:
        with RawClient(broker.port) as client:
            for key_type in (0, 1):  # a group, a transactional id: each topic is created
                answer = client.request(
                    FIND_COORDINATOR, 4, Message(key_type=key_type, coordinator_keys=["rf-key"])
                )
                assert answer.coordinators[0].error_code == ErrorCode.NONE
        admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
        found = {}
        for topic in expected:
            listed = admin.list_topics(topic, timeout=10).topics[topic]
            found[topic] = {len(p.replicas) for p in listed.partitions.values()}
            assert all(set(p.isrs) == set(p.replicas) for p in listed.partitions.values())
    assert found == {topic: {rf} for topic, rf in expected.items()}
