"""acks=1 on a simulated 3-node cluster loses what Kafka loses, and exactly that.

The leader acknowledges an acks=1 append as soon as it has it; its followers fetch it later
(the replication-delay fault). When the leader's node stops first, a follower of the ISR
leads with the log it had (ReplicationControlManager elects from the ISR; nothing unclean),
so the records acknowledged beyond that log's end are gone: when the old leader comes back
as a follower it truncates to its new leader's epoch end (KIP-101/KIP-279, what
OffsetForLeaderEpoch answers), and the offsets that held them are written again by later
records. The test computes the lost offsets from the acknowledgements and the new leader's
epoch end and asserts the stored logs, on disk and as a consumer reads them, are exactly the
rest: after bursts each flushed before the stop (each Python client), and in a stream the
stop cuts mid-flight (confluent-kafka and kafka-python).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka import ThreadedBroker
from protocol.errors import ErrorCode
from protocol.messages.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from protocol.schema import Message
from tests.e2e.test_cluster_failover import partitions, ports_of
from tests.support.cluster_producers import (
    PARTITIONS,
    ProducerRun,
    consumed_by_partition,
    high_watermarks,
    produce,
    start_producing,
    stored_by_partition,
    value_of,
    wait_for,
)
from tests.support.produce import stored
from tests.support.raw_client import RawClient

pytestmark = [
    pytest.mark.minikafka(default_replication_factor=3),
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]

# Records per phase: replicated (A), acknowledged by the leaders alone (B), after (C).
A, B, C = 1_500, 600, 300
# Longer than the test: B is fetched by no follower. Well under replica.lag.time.max.ms
# (30 s), so the followers stay in the ISR meanwhile, as Kafka's would.
FAR_BEHIND_MS = 60_000


def epoch_end(port: int, topic: str, partition: int, epoch: int, current: int) -> int:
    """OffsetForLeaderEpoch: where ``epoch`` ended in the log of the leader at ``port``."""
    with RawClient(port) as client:
        answer = client.request(
            OFFSET_FOR_LEADER_EPOCH,
            4,
            Message(
                replica_id=-1,
                topics=[
                    Message(
                        topic=topic,
                        partitions=[
                            Message(
                                partition=partition,
                                current_leader_epoch=current,
                                leader_epoch=epoch,
                            )
                        ],
                    )
                ],
            ),
        )
    part = answer.topics[0].partitions[0]
    assert part.error_code == ErrorCode.NONE, part
    assert part.leader_epoch == epoch
    return int(part.end_offset)


def acked_offsets(run: ProducerRun, indexes: range) -> dict[int, dict[int, int]]:
    """partition -> offset -> record index, of the acknowledgements for ``indexes``."""
    result: dict[int, dict[int, int]] = {p: {} for p in range(PARTITIONS)}
    for i, p, o in run.acked:
        if i in indexes:
            result[p][o] = i
    return result


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka"])
def test_acks_1_records_beyond_the_new_leaders_log_are_lost_exactly(
    kafka_cluster: ThreadedBroker, client: str
) -> None:
    topic = f"acks1-{client}"
    run = ProducerRun(client, client)

    def send(indexes: range) -> None:
        produce(kafka_cluster.bootstrap, topic, indexes, "1", run)

    lose_a_burst(kafka_cluster, topic, run, send)


def lose_a_burst(
    kafka_cluster: ThreadedBroker, topic: str, run: ProducerRun, send: Callable[[range], None]
) -> None:
    """Bursts A, B and C, each sent with acks=1 by ``send`` into ``run``; the node leading
    partition 0 stops between B and C, losing B there (see the module's header)."""
    client = run.tag
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(10)
    ports = ports_of(kafka_cluster)
    data_dir = Path(str(kafka_cluster.data_dir))

    # A: acknowledged by the leaders, then fetched by the followers (committed).
    kafka_cluster.faults.replication_delay(200)
    send(range(A))
    assert run.errors == []
    ends_a = {p: max(acked_offsets(run, range(A))[p]) + 1 for p in range(PARTITIONS)}
    wait_for(lambda: high_watermarks(kafka_cluster, topic) == ends_a, 10, "A not committed")

    # B: acknowledged by the leaders alone.
    kafka_cluster.faults.replication_delay(FAR_BEHIND_MS)
    send(range(A, A + B))
    assert run.errors == []
    acked_b = acked_offsets(run, range(A, A + B))
    for p in range(PARTITIONS):
        # Each at the offset the leader said, right after A; not committed.
        assert sorted(acked_b[p]) == list(range(ends_a[p], ends_a[p] + len(acked_b[p])))
    assert high_watermarks(kafka_cluster, topic) == ends_a

    before = partitions(ports[1], topic)
    victim = before[0].leader_id
    led = sorted(p for p, part in before.items() if part.leader_id == victim)
    assert kafka_cluster.stop_node(victim)
    live = next(n for n in ports if n != victim)
    after = partitions(ports[live], topic)

    # What each partition lost, from the acknowledgements and its new leader's log end.
    lost: dict[int, list[int]] = {}
    for p in range(PARTITIONS):
        leader, epoch = after[p].leader_id, after[p].leader_epoch
        assert leader != victim
        if p in led:
            # An ISR member leads, one epoch on (no unclean election).
            assert leader in before[p].isr_nodes and epoch == before[p].leader_epoch + 1
        end = epoch_end(ports[leader], topic, p, before[p].leader_epoch, epoch)
        lost[p] = sorted(o for o in acked_b[p] if o >= end)
        stored_offsets = [o for o, _ in stored_by_partition(data_dir, topic)[p]]
        assert stored_offsets == list(range(end)), f"partition {p} on disk"
    # Exactly B's records on the partitions the stopped node led; nothing elsewhere.
    assert lost == {p: sorted(acked_b[p]) if p in led else [] for p in range(PARTITIONS)}
    assert any(lost.values())

    # The old leader comes back as a follower of the new logs and catches up.
    kafka_cluster.faults.replication_delay(0)
    assert kafka_cluster.start_node(victim)
    wait_for(
        lambda: all(sorted(q.isr_nodes) == [1, 2, 3] for q in partitions(ports[1], topic).values()),
        10,
        "ISRs not full again",
    )

    # C: written after; on the partitions that lost B it takes B's offsets again.
    send(range(A + B, A + B + C))
    assert run.errors == []
    acked_c = acked_offsets(run, range(A + B, A + B + C))
    for p in range(PARTITIONS):
        start = ends_a[p] + len(acked_b[p]) - len(lost[p])
        assert sorted(acked_c[p]) == list(range(start, start + len(acked_c[p])))

    # Stored: each partition is A, the B it kept, then C, each at its acknowledged offset.
    survivors = {i for i, p, o in run.acked if o not in lost[p] or i >= A + B or i < A}
    expected = {
        p: [
            (o, value_of(client, i))
            for i, q, o in sorted(run.acked, key=lambda a: a[2])
            if q == p and i in survivors
        ]
        for p in range(PARTITIONS)
    }
    on_disk = stored_by_partition(data_dir, topic)
    assert on_disk == expected
    assert sum(len(v) for v in on_disk.values()) == A + B + C - sum(map(len, lost.values()))
    # The batches written again carry the new leader's epoch.
    for p in led:
        epochs = {
            h.partition_leader_epoch
            for h, _ in stored(data_dir, topic, p)
            if h.base_offset >= ends_a[p]
        }
        assert epochs == {after[p].leader_epoch}
    wait_for(
        lambda: (
            high_watermarks(kafka_cluster, topic)
            == {p: len(expected[p]) for p in range(PARTITIONS)}
        ),
        10,
        "C not committed",
    )
    assert consumed_by_partition(kafka_cluster.bootstrap, topic) == expected
    print(
        f"{client}: lost offsets "
        + ", ".join(f"p{p} {v[0]}-{v[-1]}" for p, v in lost.items() if v)
        + f" ({sum(map(len, lost.values()))} records)"
    )


class WatchingConsumer:
    """A confluent-kafka consumer reading every partition from its start in a thread."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.seen: list[tuple[int, int, bytes]] = []
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"watch-{topic}",
                "enable.auto.commit": False,
            }
        )
        self._consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        self._thread = threading.Thread(target=self._run, name="watching-consumer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for m in self._consumer.consume(500, 0.05):
                    if m.error() is None:
                        self.seen.append((m.partition(), m.offset(), m.value()))
        finally:
            self._consumer.close()

    def stop(self) -> list[tuple[int, int, bytes]]:
        self._stop.set()
        self._thread.join(10)
        return self.seen


def old_epoch_acks(acks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A partition's (index, offset) acknowledgements in arrival order, up to the first whose
    offset is below one before it: the new leader's, which writes from its own log end again
    (what a user sees when acks=1 records were lost)."""
    for k in range(1, len(acks)):
        if acks[k][1] < acks[k - 1][1]:
            return acks[:k]
    return acks


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_acks_1_stream_loses_exactly_the_acknowledged_offsets_past_the_new_leaders_log(
    kafka_cluster: ThreadedBroker, client: str
) -> None:
    """The leader stops mid-stream, with appends in flight: the acknowledged records past the
    new leader's log end are gone and their offsets hold later records; every other
    acknowledged record is at its offset. Without idempotence a retried append whose answer
    the stop cut off may be stored twice, as in Kafka."""
    topic = f"stream1-{client}"
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(10)
    ports = ports_of(kafka_cluster)
    total, trail_from, stop_at = 12_000, 3_000, 6_000
    run = ProducerRun(client, client)
    # Held back at 3,000 until those are committed and the followers trail by a minute, and
    # at 9,000 until the stop: every planned step happens mid-stream.
    run.gates[trail_from] = trailing = threading.Event()
    run.gates[9_000] = stopped = threading.Event()
    reader = WatchingConsumer(kafka_cluster.bootstrap, topic)
    thread = start_producing(kafka_cluster.bootstrap, topic, total, run, acks="1")
    try:
        wait_for(lambda: run.progress() == trail_from, 60, "no progress")
        ends = {p: trail_from // PARTITIONS for p in range(PARTITIONS)}
        wait_for(lambda: high_watermarks(kafka_cluster, topic) == ends, 10, "not committed")
        kafka_cluster.faults.replication_delay(FAR_BEHIND_MS)
        trailing.set()
        wait_for(lambda: run.progress() >= stop_at, 60, "no progress")
        before = partitions(ports[1], topic)
        victim = before[0].leader_id
        led = sorted(p for p, part in before.items() if part.leader_id == victim)
        assert kafka_cluster.stop_node(victim)
    finally:
        trailing.set()
        stopped.set()
    assert run.done.wait(120)
    thread.join(10)
    assert run.errors == []
    assert sorted({i for i, _, _ in run.acked}) == list(range(total))
    live = next(n for n in ports if n != victim)
    after = partitions(ports[live], topic)
    kafka_cluster.faults.replication_delay(0)
    assert kafka_cluster.start_node(victim)

    data_dir = Path(str(kafka_cluster.data_dir))
    on_disk = stored_by_partition(data_dir, topic)
    on_disk_at = {p: dict(records) for p, records in on_disk.items()}
    duplicates = 0
    lost_count = 0
    for p in range(PARTITIONS):
        acks = [(i, o) for i, q, o in run.acked if q == p]
        log = dict(on_disk[p])
        assert sorted(log) == list(range(len(log)))
        at = {value_of(client, i): o for i, o in acks}  # the offset each was acked at last
        if p in led:
            end = epoch_end(ports[after[p].leader_id], topic, p, 0, after[p].leader_epoch)
            # The followers had what was committed before they fell behind.
            assert end == ends[p]
            old = old_epoch_acks(acks)
            lost = [o for _, o in old if o >= end]
            # Acknowledged past the new leader's end: a contiguous run, not empty (followers
            # trailed by a minute), gone: its offsets hold records acknowledged there later.
            assert lost and lost == list(range(end, end + len(lost)))
            lost_values = {value_of(client, i) for i, o in old if o >= end}
            assert not lost_values & set(log.values())
            assert all(log.get(o) != value_of(client, i) for i, o in old if o >= end)
            lost_count += len(lost)
        else:
            lost_values = set()
        for i, o in acks:
            value = value_of(client, i)
            if value not in lost_values:
                assert log.get(o) == value, (p, i, o, len(log), led, acks[:3], acks[-3:])
        # Anything stored where it was not acknowledged was stored again later by a retry.
        extra = [(o, v) for o, v in log.items() if at.get(v) != o]
        assert all(at[v] > o for o, v in extra), extra[:5]
        duplicates += len(extra)
    assert consumed_by_partition(kafka_cluster.bootstrap, topic) == on_disk
    # A consumer reading all along saw only what stayed: never a record that was lost
    # (the high watermark never passed the followers' log ends).
    seen = reader.stop()
    assert seen, "the consumer read nothing meanwhile"
    assert all(on_disk_at[p].get(o) == v for p, o, v in seen)
    print(
        f"{client}: stream lost {lost_count} acknowledged records on"
        f" partitions {led}; {duplicates} stored twice by retries"
    )
