"""Three Java consumers (the newest kafka-clients, group.protocol=consumer) in one KIP-848 group
over six partitions: they split the work, one is killed (SIGKILL) while idle and restarted,
and no record is consumed twice or missed when each member commits after every poll and on
revocation. Checked against the offsets and the group record the broker stored.

Each member runs GroupMember (tests/compat/java) for as long as its stdin stays open."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.messages.list_groups import LIST_GROUPS
from protocol.records import build_batch
from protocol.schema import Message
from tests.compat.test_java_client import NEWEST, built, committed_offsets
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_partitioned_topic, produce
from tests.support.raw_client import RawClient
from tests.support.stored_groups import stored_groups

TOPIC, GROUP, PARTITIONS = "java-members", "java-members-group", 6


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(
        tmp_path / "data",
        {
            # Kafka's 5 s / 45 s would make the hand-over of a killed member slow.
            "group.consumer.heartbeat.interval.ms": "500",
            "group.consumer.session.timeout.ms": "6000",
        },
    ) as proc:
        yield proc


class Member:
    """One GroupMember JVM; its output lines are collected as they come."""

    def __init__(self, broker: BrokerProcess, name: str, protocol: str = "consumer") -> None:
        client = built(NEWEST)
        self.name = name
        self.lines: list[dict[str, Any]] = []
        self.owned: set[int] = set()
        self.proc = subprocess.Popen(
            client.command("GroupMember", broker.bootstrap, TOPIC, GROUP, protocol),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            item = json.loads(line)
            if "assigned" in item:
                self.owned |= set(item["assigned"])
            elif "revoked" in item:
                self.owned -= set(item["revoked"])
            self.lines.append(item)

    def records(self) -> list[tuple[int, int]]:
        return [(x["partition"], x["offset"]) for x in list(self.lines) if "offset" in x]

    def close(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(60)
        finally:
            self.proc.kill()
        self._reader.join(10)
        errors = self._close_pipes()
        assert code == 0, errors

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(10)
        self._close_pipes()

    def _close_pipes(self) -> str:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        errors = self.proc.stderr.read()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
        return errors


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)  # polling with a deadline


def split(members: list[Member], sizes: list[int]) -> Callable[[], bool]:
    def check() -> bool:
        owned = [m.owned for m in members]
        return sorted(len(o) for o in owned) == sizes and set().union(*owned) == set(
            range(PARTITIONS)
        )

    return check


def produce_round(broker: BrokerProcess, per_partition: int, tag: str) -> None:
    with RawClient(broker.port) as client:
        for p in range(PARTITIONS):
            data = build_batch([(None, f"{tag}-{p}-{i}".encode()) for i in range(per_partition)])
            assert produce(client, TOPIC, data, partition=p).error_code == 0


@pytest.mark.timeout(400)
def test_java_members_hand_partitions_over_after_a_kill_without_rereading(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as client:
        create_partitioned_topic(client, TOPIC, PARTITIONS)
    produce_round(broker, 50, "a")
    members = [Member(broker, f"m{i}") for i in range(3)]
    everyone = list(members)
    try:
        wait_until(split(members, [2, 2, 2]), "three members with two partitions each")
        ends = dict.fromkeys(range(PARTITIONS), 50)
        wait_until(lambda: committed_offsets(broker.port, GROUP, TOPIC) == ends, "commits")

        # Killed while idle (everything it read is committed): the others take its
        # partitions once its session expires, then a new incarnation gets its share back.
        members[0].kill()
        wait_until(split(members[1:], [3, 3]), "the two survivors owning everything")
        members[0] = Member(broker, "m0-restarted")
        everyone.append(members[0])
        wait_until(split(members, [2, 2, 2]), "the restarted member back in")
        produce_round(broker, 50, "b")
        ends = dict.fromkeys(range(PARTITIONS), 100)
        wait_until(lambda: committed_offsets(broker.port, GROUP, TOPIC) == ends, "commits")
    finally:
        for m in members:
            if m.proc.poll() is None:
                m.close()
    read = [r for m in everyone for r in m.records()]
    assert len(read) == len(set(read)), "a record was consumed twice"
    assert set(read) == {(p, o) for p in range(PARTITIONS) for o in range(100)}
    broker.stop()
    store = stored_groups(broker.data_dir)
    try:
        assert {p: v.offset for (_, p), v in store.offsets(GROUP).items()} == ends
        # Every member left: the consumer group stays, Empty, with its epoch history.
        record = store.consumer_groups()[GROUP]
        assert record.members == () and record.group_epoch > 3
    finally:
        store.close()


def group_listed(port: int) -> tuple[str, str] | None:
    """(type, state) as ListGroups v5 reports the group."""
    with RawClient(port) as client:
        answer = client.request(LIST_GROUPS, 5, Message(states_filter=[], types_filter=[]))
    for g in answer.groups:
        if g.group_id == GROUP:
            return str(g.group_type), str(g.group_state)
    return None


@pytest.mark.timeout(400)
def test_java_classic_group_upgraded_member_by_member_reads_every_record_once(
    broker: BrokerProcess,
) -> None:
    """A rolling upgrade of Java consumers: each classic member closed and replaced by one
    with group.protocol=consumer (online migration, Kafka's default bidirectional policy)."""
    with RawClient(broker.port) as client:
        create_partitioned_topic(client, TOPIC, PARTITIONS)
    produce_round(broker, 20, "r0")
    members = [Member(broker, f"classic-{i}", "classic") for i in range(3)]
    everyone = list(members)
    total = 20
    try:
        wait_until(split(members, [2, 2, 2]), "three classic members with two partitions each")
        assert group_listed(broker.port) == ("classic", "Stable")
        for step in range(3):
            members.pop(0).close()
            newcomer = Member(broker, f"consumer-{step}", "consumer")
            members.append(newcomer)
            everyone.append(newcomer)
            wait_until(split(members, [2, 2, 2]), f"step {step}: two partitions each")
            wait_until(lambda: group_listed(broker.port) == ("consumer", "Stable"), "Stable")
            produce_round(broker, 20, f"r{step + 1}")
            total += 20
            ends = dict.fromkeys(range(PARTITIONS), total)
            wait_until(
                lambda e=ends: committed_offsets(broker.port, GROUP, TOPIC) == e,  # type: ignore[misc]
                "commits",
            )
    finally:
        for m in members:
            if m.proc.poll() is None:
                m.close()
    read = [r for m in everyone for r in m.records()]
    assert len(read) == len(set(read)), "a record was consumed twice"
    assert set(read) == {(p, o) for p in range(PARTITIONS) for o in range(total)}
    broker.stop()
    store = stored_groups(broker.data_dir)
    try:
        assert GROUP in store.consumer_groups() and GROUP not in store.groups()
        assert {p: v.offset for (_, p), v in store.offsets(GROUP).items()} == ends
    finally:
        store.close()
