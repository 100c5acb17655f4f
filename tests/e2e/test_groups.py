"""Consumer groups with stock clients: rebalances, leave, expiry, mixed clients, restarts
(committed offsets and the members themselves survive a broker restart).

Each consumer runs in its own process (the embedded ``CONSUMER`` script) so that one can be
killed with SIGKILL, leaving the group without a LeaveGroup. The script prints JSON lines:
its assignment whenever it changes and every record it consumed; it commits synchronously
after each batch. The test drives the churn and checks, at each stable point, that the live
consumers own disjoint partitions covering the topic, and at the end that every produced
record was consumed (at least once). The kafka-python consumer also reports each change of
its (generation, member id) and each call of its listener's on_partitions_assigned.

ListOffsets is not served by this broker yet, so before the consumers start the test
commits offset 0 for every partition as a simple consumer (generation -1): the consumers
then start from committed offsets and never need an offset reset.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.heartbeat import HEARTBEAT
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.schema import Message
from storage.committed_offsets import GroupRecord
from tests.support.broker_process import BrokerProcess, running
from tests.support.group_offsets import committed_offsets, committed_topic
from tests.support.produce import create_topic
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS
from tests.support.stored_groups import stored_groups

pytestmark = KAFKA_PYTHON_SCHEMA_READS

PARTITIONS = 6
SETTLE_S = 25.0
OVERRIDES = {"num.partitions": str(PARTITIONS), "group.initial.rebalance.delay.ms": "100"}

CONSUMER = r"""
import asyncio, json, signal, sys, warnings
warnings.simplefilter("ignore")
client, bootstrap, topic, group = sys.argv[1:5]
instance = sys.argv[5] if len(sys.argv) > 5 else None  # group.instance.id (KIP-345)
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
def emit(kind, **kw):
    print(json.dumps({"k": kind, **kw}), flush=True)
COMMON = dict(session_timeout_ms=6000, heartbeat_interval_ms=500, enable_auto_commit=False,
              auto_offset_reset="earliest")
if client == "kafka-python":
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            pass
        def on_partitions_assigned(self, assigned):
            emit("assigned", parts=sorted(tp.partition for tp in assigned))
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance,
                      **COMMON)
    c.subscribe(topic.split(","), listener=Listener())
    last = None
    membership = None
    while not stop:
        batch = c.poll(timeout_ms=100)
        for tp, recs in batch.items():
            for r in recs:
                emit("rec", p=tp.partition, o=r.offset, v=r.value.decode())
        if batch:
            try:
                c.commit()
            except Exception as exc:  # a rebalance: the records will be redelivered
                emit("commit-failed", error=repr(exc))
        now = sorted(tp.partition for tp in c.assignment())
        if now != last:
            emit("assign", parts=now)
            last = now
        meta = c.group_metadata()
        if (meta.generation_id, meta.member_id) != membership:
            membership = (meta.generation_id, meta.member_id)
            emit("member", gen=meta.generation_id, member=meta.member_id)
    c.close()
elif client == "confluent":
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "partition.assignment.strategy": "range"})
    def on_assign(consumer, parts):
        emit("assign", parts=sorted(p.partition for p in parts))
    def on_revoke(consumer, parts):
        emit("assign", parts=[])
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    while not stop:
        msgs = c.consume(num_messages=100, timeout=0.1)
        for m in msgs:
            if m.error() is None:
                emit("rec", p=m.partition(), o=m.offset(), v=m.value().decode())
        if msgs:
            try:
                c.commit(asynchronous=False)
            except Exception as exc:
                emit("commit-failed", error=repr(exc))
    c.close()
else:
    from aiokafka import AIOKafkaConsumer
    async def main():
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, **COMMON)
        await c.start()
        last = None
        while not stop:
            batch = await c.getmany(timeout_ms=100)
            for tp, recs in batch.items():
                for r in recs:
                    emit("rec", p=tp.partition, o=r.offset, v=r.value.decode())
            if batch:
                try:
                    await c.commit()
                except Exception as exc:
                    emit("commit-failed", error=repr(exc))
            now = sorted(tp.partition for tp in c.assignment())
            if now != last:
                emit("assign", parts=now)
                last = now
        await c.stop()
    asyncio.run(main())
"""


class ConsumerProcess:
    def __init__(
        self, client: str, bootstrap: str, topic: str, group: str, instance: str | None = None
    ) -> None:
        self.client = client
        self.assignment: list[int] = []
        self.records: list[tuple[int, int, str]] = []
        self.first_assigned_at: float | None = None
        self.commit_failures: list[str] = []
        self.memberships: list[tuple[int, str]] = []  # (generation, member id), kafka-python
        self.assigned_calls = 0  # on_partitions_assigned, kafka-python
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CONSUMER, client, bootstrap, topic, group]
            + ([instance] if instance is not None else []),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=os.getcwd(),
        )
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            with self._lock:
                if event["k"] == "commit-failed":
                    self.commit_failures.append(event["error"])
                elif event["k"] == "assign":
                    self.assignment = event["parts"]
                    if event["parts"] and self.first_assigned_at is None:
                        self.first_assigned_at = time.monotonic()
                elif event["k"] == "rec":
                    self.records.append((event["p"], event["o"], event["v"]))
                elif event["k"] == "member":
                    self.memberships.append((event["gen"], event["member"]))
                elif event["k"] == "assigned":
                    self.assigned_calls += 1

    def alive(self) -> bool:
        return self.proc.poll() is None

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(20)
        self._close()

    def _close(self) -> None:
        self._reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self._close()
        self.assignment = []


def wait_until(predicate: Any, what: str, timeout: float = SETTLE_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def balanced(consumers: list[ConsumerProcess], per_member: int) -> bool:
    """Every live consumer owns ``per_member`` partitions and no partition has two owners."""
    owned = [p for c in consumers for p in c.assignment]
    return all(len(c.assignment) == per_member for c in consumers) and sorted(owned) == list(
        range(PARTITIONS)
    )


def produce(bootstrap: str, topic: str, tag: str, n: int = 60) -> set[str]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    values = [f"{tag}-{i}" for i in range(n)]
    for i, value in enumerate(values):
        producer.send(topic, value=value.encode(), partition=i % PARTITIONS)
    producer.flush(30)
    producer.close(10)
    return set(values)


def commit_zero(port: int, group: str, topic: str) -> None:
    with RawClient(port) as client:
        create_topic(client, topic)
        answer = client.request(
            OFFSET_COMMIT,
            8,
            Message(
                group_id=group,
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=[committed_topic(topic, dict.fromkeys(range(PARTITIONS), 0), "start")],
            ),
        )
        assert all(p.error_code == 0 for t in answer.topics for p in t.partitions), answer


def committed(port: int, group: str, topic: str) -> dict[int, int]:
    return {p: offset for (t, p), offset in committed_offsets(port, group).items() if t == topic}


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running(tmp_path_factory.mktemp("groups") / "data", OVERRIDES) as proc:
        yield proc


@pytest.mark.timeout(90)
@pytest.mark.parametrize("client", ["kafka-python", "confluent", "aiokafka"])
def test_three_consumers_rebalance_on_leave_and_expiry(
    group_broker: BrokerProcess, client: str
) -> None:
    topic, group = f"churn-{client}", f"g-churn-{client}"
    commit_zero(group_broker.port, group, topic)
    expected = produce(group_broker.bootstrap, topic, "before")
    started = time.monotonic()
    consumers = [ConsumerProcess(client, group_broker.bootstrap, topic, group) for _ in range(3)]
    try:
        wait_until(lambda: balanced(consumers, 2), "three consumers with two partitions each")
        first_join = min(c.first_assigned_at or 0 for c in consumers) - started
        all_consuming = max(c.first_assigned_at or 0 for c in consumers) - started
        print(f"{client}: first assignment {first_join:.2f}s, all assigned {all_consuming:.2f}s")
        expected |= produce(group_broker.bootstrap, topic, "stable")

        # A clean leave (LeaveGroup): the two others take its partitions.
        consumers[2].leave()
        expected |= produce(group_broker.bootstrap, topic, "after-leave")
        wait_until(lambda: balanced(consumers[:2], 3), "two consumers with three each")

        # Killed without leaving: expelled after session.timeout.ms (6 s).
        killed_at = time.monotonic()
        consumers[1].kill()
        expected |= produce(group_broker.bootstrap, topic, "after-kill")
        wait_until(lambda: balanced(consumers[:1], 6), "the survivor owning everything")
        expelled_after = time.monotonic() - killed_at
        print(f"{client}: killed member expelled and reassigned after {expelled_after:.2f}s")
        # Expelled by its session running out, not earlier on some other ground.
        group_broker.wait_for_log(rf"group {group}: member \S+ removed: session timeout expired")

        expected |= produce(group_broker.bootstrap, topic, "end")
        seen = lambda: {v for c in consumers for _, _, v in c.records}  # noqa: E731
        wait_until(lambda: expected <= seen(), "every record consumed")
    finally:
        for c in consumers:
            if c.alive():
                c.leave()
    # At-least-once: everything consumed; committed offsets are at the end of each partition.
    assert expected <= {v for c in consumers for _, _, v in c.records}
    wait_until(
        lambda: sum(committed(group_broker.port, group, topic).values()) == len(expected),
        "final commits",
        timeout=5,
    )


@pytest.mark.timeout(60)
def test_mixed_kafka_python_and_confluent_group(group_broker: BrokerProcess) -> None:
    topic, group = "mixed", "g-mixed"
    commit_zero(group_broker.port, group, topic)
    expected = produce(group_broker.bootstrap, topic, "mixed")
    consumers = [
        ConsumerProcess("kafka-python", group_broker.bootstrap, topic, group),
        ConsumerProcess("confluent", group_broker.bootstrap, topic, group),
    ]
    try:
        # Both offer "range": the group settles on it and splits the partitions 3/3.
        wait_until(lambda: balanced(consumers, 3), "a 3/3 split between the two clients")
        wait_until(
            lambda: expected <= {v for c in consumers for _, _, v in c.records},
            "every record consumed",
        )
    finally:
        for c in consumers:
            if c.alive():
                c.leave()


@pytest.mark.timeout(90)
def test_restarted_static_member_takes_its_place_without_rebalance(
    group_broker: BrokerProcess, tmp_path: Path
) -> None:
    """KIP-345 with kafka-python: a static member that closes (static members send no
    LeaveGroup) and restarts rejoins under a new member id with its old assignment; the
    other member is not reassigned and the group record keeps the generation. The restarted
    member subscribes to one more topic: the protocol the group selects stays "range", so
    Kafka does not rebalance (updateStaticMemberThenRebalanceOrCompleteJoin)."""
    topic, group = "static", "g-static"
    commit_zero(group_broker.port, group, topic)
    commit_zero(group_broker.port, "g-static-extra", "static-extra")  # creates the topic
    a = ConsumerProcess("kafka-python", group_broker.bootstrap, topic, group)
    b = ConsumerProcess("kafka-python", group_broker.bootstrap, topic, group, "static-b")
    b2: ConsumerProcess | None = None
    try:
        wait_until(lambda: balanced([a, b], 3), "a 3/3 split")
        wait_until(lambda: bool(b.memberships) and b.memberships[-1][0] > 0, "b's membership")
        a_membership, a_calls = a.memberships[-1], a.assigned_calls
        generation, b_member = b.memberships[-1]
        b_parts = b.assignment
        log_mark = len(group_broker.lines)
        b.leave()
        b2 = ConsumerProcess(
            "kafka-python", group_broker.bootstrap, f"{topic},static-extra", group, "static-b"
        )
        wait_until(lambda: b2 is not None and b2.assignment == b_parts, "b2 owning b's partitions")
        wait_until(lambda: any(m[0] > 0 for m in b2.memberships), "b2's membership")
        new_generation, b2_member = next(m for m in b2.memberships if m[0] > 0)
        assert (new_generation, b2_member != b_member) == (generation, True)
        assert heartbeat(group_broker.port, group, generation, a_membership[1]) == 0
        assert a.memberships[-1] == a_membership and a.assigned_calls == a_calls
        described = describe(group_broker.port, group)
        assert described.group_state == "Stable"
        assert {m.member_id for m in described.members} == {a_membership[1], b2_member}
        record = stored_group(group_broker.data_dir, tmp_path, group)
        assert record is not None and record.generation == generation
        assert {m.member_id for m in record.members} == {a_membership[1], b2_member}
        rebalances = [
            line
            for line in group_broker.lines[log_mark:]
            if f"group {group}: preparing to rebalance" in line
        ]
        assert rebalances == []
    finally:
        for c in (a, b, b2):
            if c is not None and c.alive():
                c.leave()


def stored_group(data_dir: Path, tmp_path: Path, group: str) -> GroupRecord | None:
    """The group's record as the broker stored it in ``__consumer_offsets``."""
    del tmp_path  # read in place: the segment files are only read
    return stored_groups(data_dir).groups().get(group)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("restart", ["consumer", "clean", "sigkill"])
def test_consumption_resumes_after_last_commit(tmp_path: Path, restart: str) -> None:
    broker = BrokerProcess(tmp_path / "data", OVERRIDES).start()
    topic, group = "resume", "g-resume"
    try:
        commit_zero(broker.port, group, topic)
        first = produce(broker.bootstrap, topic, "first")
        consumer = ConsumerProcess("kafka-python", broker.bootstrap, topic, group)
        wait_until(lambda: {v for _, _, v in consumer.records} >= first, "first batch consumed")
        wait_until(
            lambda: sum(committed(broker.port, group, topic).values()) == len(first),
            "first batch committed",
        )
        consumer.leave()
        if restart == "clean":
            broker.stop()
            broker.start()
        elif restart == "sigkill":
            broker.kill()
            broker.start()
        assert sum(committed(broker.port, group, topic).values()) == len(first)
        second = produce(broker.bootstrap, topic, "second")
        consumer = ConsumerProcess("kafka-python", broker.bootstrap, topic, group)
        wait_until(lambda: {v for _, _, v in consumer.records} >= second, "second batch consumed")
        consumer.leave()
        # Exactly after the last commit: nothing of the first batch is read again.
        assert {v for _, _, v in consumer.records} == second
    finally:
        broker.kill() if not broker.is_running() else broker.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def describe(port: int, group: str) -> Message:
    with RawClient(port) as client:
        answer = client.request(
            DESCRIBE_GROUPS, 5, Message(groups=[group], include_authorized_operations=False)
        )
    result: Message = answer.groups[0]
    return result


def heartbeat(port: int, group: str, generation: int, member_id: str) -> int:
    with RawClient(port) as client:
        answer = client.request(
            HEARTBEAT,
            4,
            Message(
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=None,
            ),
        )
    error: int = answer.error_code
    return error


@pytest.mark.timeout(90)
@pytest.mark.parametrize("restart", ["clean", "sigkill"])
def test_members_survive_broker_restart_without_rebalance(tmp_path: Path, restart: str) -> None:
    """Kafka reloads each group's members from __consumer_offsets: after the restart the
    consumer keeps its member id and generation and goes on consuming, with no rebalance."""
    port = free_port()
    settings = {**OVERRIDES, "listeners": f"PLAINTEXT://127.0.0.1:{port}"}
    broker = BrokerProcess(tmp_path / "data", settings).start()
    topic, group = "keep", "g-keep"
    consumer: ConsumerProcess | None = None
    try:
        commit_zero(port, group, topic)
        first = produce(broker.bootstrap, topic, "first")
        consumer = ConsumerProcess("kafka-python", broker.bootstrap, topic, group)
        wait_until(lambda: {v for _, _, v in consumer.records} >= first, "first batch consumed")
        wait_until(
            lambda: sum(committed(port, group, topic).values()) == len(first),
            "first batch committed",
        )
        # The consumer reports its membership after the commit in the same loop turn: wait
        # for the report rather than race it.
        wait_until(lambda: any(m[0] > 0 for m in consumer.memberships), "membership reported")
        # A busy machine can make the first join go round twice (same member, generation
        # 2): the membership the restart must keep is the latest, confirmed by a heartbeat.
        joined = [m for m in consumer.memberships if m[0] > 0]
        generation, member = joined[-1]
        assert {m[1] for m in joined} == {member}, consumer.memberships
        before = describe(port, group)
        assert before.group_state == "Stable"
        assert [m.member_id for m in before.members] == [member]
        assert heartbeat(port, group, generation, member) == 0
        joined = [m for m in consumer.memberships if m[0] > 0]
        assert joined[-1] == (generation, member), consumer.memberships
        assigned_calls = consumer.assigned_calls
        assert assigned_calls >= 1

        log_mark = len(broker.lines)
        if restart == "clean":
            assert broker.stop() == 0
        else:
            broker.kill()
        broker.start()
        assert broker.port == port

        after = describe(port, group)
        assert after.group_state == "Stable"
        assert [(m.member_id, m.member_assignment) for m in after.members] == [
            (m.member_id, m.member_assignment) for m in before.members
        ]
        second = produce(broker.bootstrap, topic, "second")
        wait_until(lambda: {v for _, _, v in consumer.records} >= second, "second batch consumed")
        # Commits with the old generation are accepted by the restarted broker.
        wait_until(
            lambda: sum(committed(port, group, topic).values()) == len(first) + len(second),
            "second batch committed",
        )
        assert heartbeat(port, group, generation, member) == 0
        final = describe(port, group)
        assert final.group_state == "Stable"
        assert [m.member_id for m in final.members] == [member]
        assert [m for m in consumer.memberships if m[0] > 0] == joined
        assert consumer.assigned_calls == assigned_calls, "the consumer was reassigned"
        new_log = "".join(broker.lines[log_mark:])
        assert "loaded Stable" in new_log
        assert "preparing to rebalance" not in new_log
    finally:
        if consumer is not None and consumer.alive():
            consumer.leave()
        broker.kill() if not broker.is_running() else broker.stop()
