"""Producers of the Python clients run against a simulated cluster while its nodes stop and
start, and what the cluster stored checked against what they acknowledged.

Each producer writes record i (value ``<tag>-<i>``) to partition i % 3 and keeps every
acknowledgement as (i, partition, offset); ``cycle_leaders`` stops and starts partition
leaders' nodes in turn while it runs; ``assert_stored_once`` reads the segment files.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minikafka import ThreadedBroker
from protocol.records import decode_records
from tests.support.produce import stored

PARTITIONS = 3


def value_of(tag: str, i: int) -> bytes:
    return f"{tag}-{i}".encode()


def index_of(value: bytes) -> int:
    return int(value.rsplit(b"-", 1)[1])


@dataclass
class ProducerRun:
    """One client's producer: what it was acknowledged and the errors it reported."""

    client: str
    tag: str
    acked: list[tuple[int, int, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    seconds: float = 0.0
    # Record index -> an event the producer waits for before sending that record (while
    # still taking acknowledgements): it cannot run ahead of the failovers planned.
    gates: dict[int, threading.Event] = field(default_factory=dict)

    def ack(self, i: int, partition: int, offset: int) -> None:
        self.acked.append((i, partition, offset))

    def gate(self, i: int, serve: Callable[[], None]) -> None:
        """Before record ``i``: wait for its gate, if any, calling ``serve`` meanwhile."""
        event = self.gates.get(i)
        deadline = time.monotonic() + 120
        while event is not None and not event.is_set():
            if time.monotonic() > deadline:
                self.errors.append(f"gate before {i} not opened in 120 s")
                return
            serve()

    def progress(self) -> int:
        return len(self.acked) + len(self.errors)


# -- the three Python clients ------------------------------------------------------------


def _confluent(bootstrap: str, topic: str, indexes: range, acks: str, run: ProducerRun) -> None:
    from confluent_kafka import KafkaError, Producer
    from confluent_kafka import Message as CkMessage

    idempotent = acks == "all"
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": idempotent,
            "acks": acks,
            "linger.ms": 5,
            # The Java client's default (librdkafka's is 1 MB): many requests in flight, so
            # a stop catches some.
            "batch.size": 16384,
        }
    )

    def report(i: int) -> Callable[[KafkaError | None, CkMessage], None]:
        def on_delivery(err: KafkaError | None, msg: CkMessage) -> None:
            if err is None:
                run.ack(i, msg.partition(), msg.offset())
            else:
                run.errors.append(f"{i}: {err}")

        return on_delivery

    for i in indexes:
        run.gate(i, lambda: producer.poll(0.01))
        while True:
            try:
                producer.produce(
                    topic, value_of(run.tag, i), partition=i % PARTITIONS, on_delivery=report(i)
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(120)
    if left:
        run.errors.append(f"{left} records still unacknowledged after 120 s")


def _kafka_python(bootstrap: str, topic: str, indexes: range, acks: str, run: ProducerRun) -> None:
    import kafka

    idempotent = acks == "all"
    producer = kafka.KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all" if idempotent else 1,
        enable_idempotence=idempotent,
        linger_ms=5,
    )
    try:
        for i in indexes:
            run.gate(i, lambda: time.sleep(0.01))

            def on_ack(meta: Any, i: int = i) -> None:
                run.ack(i, meta.partition, meta.offset)

            def on_error(exc: BaseException, i: int = i) -> None:
                run.errors.append(f"{i}: {exc!r}")

            future = producer.send(topic, value_of(run.tag, i), partition=i % PARTITIONS)
            future.add_callback(on_ack).add_errback(on_error)
        producer.flush(120)
    finally:
        producer.close(10)


def _aiokafka(bootstrap: str, topic: str, indexes: range, acks: str, run: ProducerRun) -> None:
    from aiokafka import AIOKafkaProducer

    idempotent = acks == "all"

    async def main() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all" if idempotent else 1,
            enable_idempotence=idempotent,
            linger_ms=5,
            request_timeout_ms=30_000,
        )
        await producer.start()
        try:
            pending: set[asyncio.Future[Any]] = set()

            def report(i: int) -> Callable[[asyncio.Future[Any]], None]:
                def done(future: asyncio.Future[Any]) -> None:
                    pending.discard(future)
                    exc = future.exception()
                    if exc is not None:
                        run.errors.append(f"{i}: {exc!r}")
                    else:
                        meta = future.result()
                        run.ack(i, meta.partition, meta.offset)

                return done

            for i in indexes:
                event = run.gates.get(i)
                deadline = time.monotonic() + 120
                while event is not None and not event.is_set():
                    if time.monotonic() > deadline:
                        run.errors.append(f"gate before {i} not opened in 120 s")
                        break
                    await asyncio.sleep(0.01)
                future = await producer.send(topic, value_of(run.tag, i), partition=i % PARTITIONS)
                pending.add(future)
                future.add_done_callback(report(i))
                while len(pending) >= 5000:
                    await asyncio.wait(set(pending), return_when=asyncio.FIRST_COMPLETED)
            if pending:
                await asyncio.wait(set(pending))
        finally:
            await producer.stop()

    asyncio.run(main())


PRODUCERS: dict[str, Callable[[str, str, range, str, ProducerRun], None]] = {
    "confluent-kafka": _confluent,
    "kafka-python": _kafka_python,
    "aiokafka": _aiokafka,
}


def produce(bootstrap: str, topic: str, indexes: range, acks: str, run: ProducerRun) -> None:
    """Produce ``indexes`` with ``run.client`` in this thread, to the end (flushed)."""
    started = time.monotonic()
    try:
        PRODUCERS[run.client](bootstrap, topic, indexes, acks, run)
    except Exception as exc:  # the thread's failure, reported to the test
        run.errors.append(f"producer failed: {exc!r}")
    finally:
        run.seconds += time.monotonic() - started


def gate_rounds(run: ProducerRun, total: int, rounds: int) -> Callable[[int], None]:
    """Gates that hold the producer half a round past each failover's progress mark (see
    ``cycle_leaders``) until that failover's stop; the ``on_stop`` that opens them."""
    share = total // (rounds + 2)
    for r in range(rounds):
        run.gates[(r + 1) * share + share // 2] = threading.Event()
    marks = sorted(run.gates)

    def on_stop(r: int) -> None:
        run.gates[marks[r]].set()

    return on_stop


def open_gates(run: ProducerRun) -> None:
    for event in run.gates.values():
        event.set()


def start_producing(
    bootstrap: str, topic: str, total: int, run: ProducerRun, acks: str = "all"
) -> threading.Thread:
    """A producer of records 0..total-1 in a thread (acks=all: idempotent); ``run.done`` is
    set when it flushed (or failed)."""

    def body() -> None:
        try:
            produce(bootstrap, topic, range(total), acks, run)
        finally:
            run.done.set()

    thread = threading.Thread(target=body, name=f"producer-{run.client}", daemon=True)
    thread.start()
    return thread


def high_watermarks(cluster: ThreadedBroker, topic: str) -> dict[int, int]:
    """Each partition's high watermark (of those appended to), from the broker's state."""
    broker = cluster._broker.host.broker
    assert broker is not None and broker.state.cluster is not None
    return {
        index: part.log.high_watermark
        for _, index, part in broker.state.cluster.tracked()
        if part.log is not None and part.log.topic == topic
    }


def in_flight(cluster: ThreadedBroker, topic: str, partition: int) -> bool:
    """Whether the partition's leader has appends its followers have not fetched yet (its
    log end is past the high watermark): what a stop now cuts."""
    broker = cluster._broker.host.broker
    assert broker is not None and broker.state.cluster is not None
    return any(
        part.log.log_end_offset > part.log.high_watermark
        for _, index, part in broker.state.cluster.tracked()
        if part.log is not None and part.log.topic == topic and index == partition
    )


def committed(cluster: ThreadedBroker, topic: str) -> int:
    """The sum of the topic's high watermarks: the progress of a producer seen only from
    outside (the Java one)."""
    return sum(high_watermarks(cluster, topic).values())


# -- stopping leaders in turn --------------------------------------------------------------


def wait_for(what: Callable[[], bool], timeout: float, message: str, every: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, message
        time.sleep(every)


@dataclass(frozen=True)
class Failover:
    partition: int
    node: int
    acked_at_stop: int
    new_leader: int
    # Records the stop cut from the logs of the partitions the node led: appended by it,
    # not yet fetched by the new leader, so not acknowledged under acks=all.
    truncated: int


def log_ends(cluster: ThreadedBroker) -> dict[tuple[bytes | str, int], int]:
    """Each replicated partition's leader log end offset, from the broker's state."""
    broker = cluster._broker.host.broker
    assert broker is not None and broker.state.cluster is not None
    return {
        (key, index): part.log.log_end_offset
        for key, index, part in broker.state.cluster.tracked()
        if part.log is not None
    }


def cycle_leaders(
    cluster: ThreadedBroker,
    topic: str,
    progress: Callable[[], int],
    finished: Callable[[], bool],
    total: int,
    rounds: int,
    on_stop: Callable[[int], None] = lambda r: None,
) -> list[Failover]:
    """Stop partition (round % 3)'s leader's node once ``progress`` reached
    ``(round + 1) * total / (rounds + 2)``, call ``on_stop(round)``, let the producer go on
    without the node for a while, start it again, wait for every ISR to be full: ``rounds``
    times at most, fewer if the producer finished first."""
    from tests.e2e.test_cluster_failover import partitions, ports_of

    ports = ports_of(cluster)

    def reached(goal: int) -> Callable[[], bool]:
        return lambda: progress() >= goal or finished()

    def cutting(partition: int) -> Callable[[], bool]:
        return lambda: in_flight(cluster, topic, partition) or finished()

    def rejoined(node: int) -> Callable[[], bool]:
        def full() -> bool:
            isrs = [sorted(q.isr_nodes) for q in partitions(ports[node], topic).values()]
            return all(isr == [1, 2, 3] for isr in isrs) or finished()

        return full

    done: list[Failover] = []
    for r in range(rounds):
        target = (r + 1) * total // (rounds + 2)
        # The leader looked up first (only this loop moves leaders), so the stop follows
        # the mark at once, with the producer's requests still in flight.
        before = partitions(ports[1], topic)
        p = r % PARTITIONS
        node = before[p].leader_id
        wait_for(reached(target), 120, f"no progress to {target}", every=0.001)
        if finished():
            break
        # Then, briefly, for appends the followers lack (a stop cuts them: the producer must
        # send them again); without them the stop goes ahead all the same.
        with contextlib.suppress(AssertionError):
            wait_for(cutting(p), 2, "", every=0.0005)
        acked = progress()
        # The stop runs on the broker's loop between two appends: the ends read before it
        # may grow until it runs, so the cut is at least (ends - ends after).
        ends = log_ends(cluster)
        assert cluster.stop_node(node)
        cut = sum(max(0, ends[k] - e) for k, e in log_ends(cluster).items() if k in ends)
        live = next(n for n in ports if n != node)
        after = partitions(ports[live], topic)
        assert after[p].leader_id not in (node, -1)
        assert after[p].leader_epoch == before[p].leader_epoch + 1
        done.append(Failover(p, node, acked, after[p].leader_id, cut))
        on_stop(r)
        # The producer goes on against the other two nodes for a while.
        wait_for(reached(acked + total // (rounds + 2) // 3), 120, "stalled without a node")
        assert cluster.start_node(node)
        wait_for(rejoined(node), 30, f"node {node} did not rejoin every ISR")
    return done


# -- what was stored -------------------------------------------------------------------------


def stored_by_partition(data_dir: Path, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """(offset, value) of every record in each partition's segment files, in offset order."""
    result: dict[int, list[tuple[int, bytes]]] = {}
    for p in range(PARTITIONS):
        records: list[tuple[int, bytes]] = []
        for header, data in stored(data_dir, topic, p):
            for r in decode_records(data, header):
                assert r.value is not None
                records.append((header.base_offset + r.offset_delta, r.value))
        result[p] = records
    return result


def assert_stored_once(
    data_dir: Path, topic: str, tag: str, total: int, run: ProducerRun
) -> dict[int, list[tuple[int, bytes]]]:
    """Every record acknowledged, stored exactly once at the offset acknowledged, each
    partition in send order with offsets from 0 without gaps, and nothing else stored; what
    is stored, by partition."""
    assert run.errors == [], run.errors[:5]
    assert sorted(i for i, _, _ in run.acked) == list(range(total))
    where = {i: (p, o) for i, p, o in run.acked}
    by_partition = stored_by_partition(data_dir, topic)
    counts = Counter(v for records in by_partition.values() for _, v in records)
    twice = [v for v, n in counts.items() if n > 1]
    assert twice == [], f"stored more than once: {twice[:5]}"
    for p, records in by_partition.items():
        assert [o for o, _ in records] == list(range(len(records))), f"gap in partition {p}"
        indexes = [index_of(v) for _, v in records]
        assert indexes == list(range(p, total, PARTITIONS)), f"partition {p} differs"
        assert all(where[index_of(v)] == (p, o) for o, v in records)
        assert all(v == value_of(tag, index_of(v)) for _, v in records)
    return by_partition


def consumed_by_partition(bootstrap: str, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """(offset, value) of every record a confluent-kafka consumer reads, each partition from
    its start to its high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "enable.auto.commit": False}
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + 60
        while any(len(got[p]) < ends[p] for p in got) and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.2):
                assert m.error() is None, m.error()
                got[m.partition()].append((m.offset(), m.value()))
        return got
    finally:
        consumer.close()
