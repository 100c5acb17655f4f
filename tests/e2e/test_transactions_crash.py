"""Exactly-once through broker crashes: a consume-transform-produce loop (confluent-kafka)
copies numbered records from an input topic to an output topic, committing the consumed
offsets in each transaction, while the broker is SIGKILLed and restarted three times.

Checked at the end on what the broker STORED and SENT: the output partitions' segment files
(data batches all transactional, every transaction closed by a COMMIT or ABORT marker,
committed records = every input record exactly once, each ABORT listed in the segment's
.txnindex with its first offset and marker offset), a read_committed consumer's view, and
the group's committed offsets (OffsetFetch with require_stable and the committed-offsets
file) at the end of the input.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from protocol.messages.offset_fetch import OFFSET_FETCH
from protocol.records import decode_records
from protocol.schema import Message
from storage.txn_index import read_entries
from tests.support.broker_process import BrokerProcess
from tests.support.produce import stored
from tests.support.raw_client import RawClient
from tests.support.stored_groups import stored_groups

confluent_kafka = pytest.importorskip("confluent_kafka")

IN, OUT, GROUP, TXN_ID = "ctp-in", "ctp-out", "ctp-group", "ctp-txn"
PARTITIONS = 2
TOTAL = 400
KILLS_AFTER_COMMITS = (2, 6, 10)
ABORT_EVERY = 4  # the loop itself aborts every 4th transaction
# librdkafka 2.1x re-bootstraps when every broker is down, decommissioning the broker
# handles; a TxnOffsetCommit queued for the group coordinator then waits forever on the old
# handle (send_offsets_to_transaction ignores its timeout). With one broker every SIGKILL
# is "all brokers down", so the loop keeps its broker handles and just reconnects.
NO_REBOOTSTRAP = {"metadata.recovery.strategy": "none"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Outcome:
    """What the stored output partition says: committed values, aborted transactions."""

    def __init__(self, data_dir: Path, partition: int) -> None:
        self.committed: list[int] = []
        self.aborted: list[tuple[int, int, int]] = []  # (producer id, first offset, marker)
        self.non_transactional = 0
        self.open: dict[int, tuple[int, list[int]]] = {}
        for header, raw in stored(data_dir, OUT, partition):
            pid = header.producer_id
            if header.is_control:
                (record,) = decode_records(raw, header)
                assert record.key is not None
                kind = struct.unpack(">hh", record.key)[1]
                if pid in self.open:
                    first, values = self.open.pop(pid)
                    if kind == 1:
                        self.committed.extend(values)
                    else:
                        self.aborted.append((pid, first, header.base_offset))
                continue
            if not header.is_transactional:
                self.non_transactional += 1
            first, values = self.open.setdefault(pid, (header.base_offset, []))
            values.extend(int(r.value or b"-1") for r in decode_records(raw, header))

    def txn_index(self, data_dir: Path, partition: int) -> list[tuple[int, int, int]]:
        entries = []
        for path in sorted((data_dir / f"{OUT}-{partition}").glob("*.txnindex")):
            entries.extend(
                (e.producer_id, e.first_offset, e.last_offset) for e in read_entries(path)
            )
        return entries


def produce_input(bootstrap: str) -> None:
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True}
    )
    for n in range(TOTAL):
        producer.produce(IN, b"%d" % n, partition=n % PARTITIONS)
    assert producer.flush(30) == 0


def create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (IN, OUT)])
    for future in futures.values():
        future.result(30)


class CopyLoop:
    """The consume-transform-produce loop with librdkafka's documented error handling:
    retriable -> retry the call, abortable -> abort and rewind to the committed offsets,
    fatal -> a new producer (which fences the old one) and a rewind."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.commits = 0
        self.aborts = 0
        self.attempts = 0
        self.consumed_to = [0] * PARTITIONS
        self.consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 200,
                **NO_REBOOTSTRAP,
            }
        )
        self.producer = self._new_producer()
        self.rewind()

    def _new_producer(self) -> Any:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": TXN_ID,
                "transaction.timeout.ms": 10_000,
                "linger.ms": 1,
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 200,
                **NO_REBOOTSTRAP,
            }
        )
        self._retrying(lambda: producer.init_transactions(30))
        return producer

    def _retrying(self, call: Any) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                call()
                return
            except confluent_kafka.KafkaException as e:
                if not e.args[0].retriable() or time.monotonic() > deadline:
                    raise

    def rewind(self) -> None:
        tps = [confluent_kafka.TopicPartition(IN, p) for p in range(PARTITIONS)]
        committed = self.consumer.committed(tps, timeout=30)
        for tp in committed:
            if tp.offset < 0:
                tp.offset = confluent_kafka.OFFSET_BEGINNING
        self.consumer.assign(committed)
        self.consumed_to = [max(tp.offset, 0) for tp in committed]

    def step(self) -> None:
        messages = [m for m in self.consumer.consume(25, timeout=0.5) if m.error() is None]
        if not messages:
            return
        producer = self.producer
        producer.begin_transaction()
        positions = list(self.consumed_to)
        for m in messages:
            producer.produce(OUT, m.value(), partition=int(m.value()) % PARTITIONS)
            positions[m.partition()] = m.offset() + 1
        offsets = [confluent_kafka.TopicPartition(IN, p, o) for p, o in enumerate(positions)]
        self.attempts += 1
        if self.attempts % ABORT_EVERY == 0:
            # The application gives up on this one after its records reached the log: an
            # ABORT marker and a .txnindex entry, and the same input copied again later.
            self._retrying(lambda: producer.flush(30))
            self._retrying(lambda: producer.abort_transaction(30))
            self.aborts += 1
            self.rewind()
            return
        try:
            self._retrying(
                lambda: producer.send_offsets_to_transaction(
                    offsets, self.consumer.consumer_group_metadata(), 30
                )
            )
            self._retrying(lambda: producer.commit_transaction(30))
        except confluent_kafka.KafkaException as e:
            error = e.args[0]
            if error.txn_requires_abort():
                self.aborts += 1
                self._retrying(lambda: producer.abort_transaction(30))
            elif error.fatal():
                self.aborts += 1
                self.producer = self._new_producer()
            else:
                raise
            self.rewind()
            return
        self.commits += 1
        self.consumed_to = positions

    def close(self) -> None:
        self.consumer.close()
        self.producer.flush(5)


@pytest.mark.timeout(400)
def test_copy_loop_through_three_sigkills_commits_every_input_record_exactly_once(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    port = free_port()
    broker = BrokerProcess(
        data,
        {
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        },
    ).start()
    create_topics(broker.bootstrap)
    produce_input(broker.bootstrap)

    loop = CopyLoop(broker.bootstrap)
    kills = 0
    stop = threading.Event()
    killer_failed: list[BaseException] = []

    def killer() -> None:
        # SIGKILL at whatever point of a transaction the loop has reached once it has made
        # the next number of commits, then restart on the same data dir and port.
        nonlocal kills
        try:
            for after in KILLS_AFTER_COMMITS:
                while loop.commits < after and not stop.is_set():
                    stop.wait(0.01)
                if stop.is_set():
                    return
                broker.kill()
                kills += 1
                broker.start()
        except BaseException as e:  # reported by the test thread
            killer_failed.append(e)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    deadline = time.monotonic() + 300
    try:
        while sum(loop.consumed_to) < TOTAL or thread.is_alive():
            assert time.monotonic() < deadline, (loop.consumed_to, kills, loop.commits)
            assert not killer_failed, killer_failed
            loop.step()
    except BaseException:
        print(broker.log_text()[-20000:])  # the broker's side of a failure, in the report
        raise
    finally:
        stop.set()
        thread.join(60)
        loop.close()
    assert kills == len(KILLS_AFTER_COMMITS) and not killer_failed

    # The group's committed offsets are the ends of the input, read with require_stable
    # (no transactional offsets left pending).
    with RawClient(broker.port) as client:
        answer = client.request(
            OFFSET_FETCH,
            7,
            Message(
                group_id=GROUP,
                topics=[Message(name=IN, partition_indexes=list(range(PARTITIONS)))],
                require_stable=True,
            ),
        )
    fetched = {
        p.partition_index: (p.error_code, p.committed_offset) for p in answer.topics[0].partitions
    }
    assert fetched == {p: (0, TOTAL // PARTITIONS) for p in range(PARTITIONS)}

    committed_read = read_committed(broker.bootstrap)
    broker.stop()

    everything: list[int] = []
    aborted = 0
    for partition in range(PARTITIONS):
        outcome = Outcome(data, partition)
        assert outcome.non_transactional == 0
        assert not outcome.open, "every transaction ended with a marker"
        assert all(v % PARTITIONS == partition for v in outcome.committed)
        assert outcome.txn_index(data, partition) == outcome.aborted
        aborted += len(outcome.aborted)
        everything.extend(outcome.committed)
    assert sorted(everything) == list(range(TOTAL)), "every input record committed exactly once"
    assert sorted(committed_read) == list(range(TOTAL)), "read_committed sees each one once"
    assert aborted >= loop.aborts > 0, "the aborted copies are stored, marked and indexed"

    offsets = stored_groups(data)
    try:
        stored_offsets = {tp: o.offset for tp, o in offsets.offsets(GROUP).items()}
    finally:
        offsets.close()
    assert stored_offsets == {(IN, p): TOTAL // PARTITIONS for p in range(PARTITIONS)}


def read_committed(bootstrap: str) -> list[int]:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "ctp-check",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(OUT, p, 0) for p in range(PARTITIONS)])
    got: list[int] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < TOTAL and time.monotonic() < deadline:
            got.extend(
                int(m.value()) for m in consumer.consume(100, timeout=0.5) if m.error() is None
            )
        # Nothing more comes: a duplicate or an aborted record would arrive now.
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            got.extend(
                int(m.value()) for m in consumer.consume(100, timeout=0.2) if m.error() is None
            )
    finally:
        consumer.close()
    return got
