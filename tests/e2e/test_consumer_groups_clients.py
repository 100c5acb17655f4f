"""KIP-848 consumer groups with a real client: confluent-kafka (librdkafka 2.16) consumers with
group.protocol=consumer split the partitions, hand them over when one leaves, and never read
a record twice when they commit on revocation; checked against what the broker stored."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from tests.e2e.test_consumer_groups_raw import create, describe  # noqa: E402
from tests.support.broker_process import BrokerProcess, running  # noqa: E402
from tests.support.confluent_group import (  # noqa: E402
    QUICK_CONSUMER_GROUPS,
    CommittingConsumer,
    produce_spread,
)
from tests.support.group_offsets import committed_offsets  # noqa: E402
from tests.support.raw_client import RawClient  # noqa: E402

TOPIC, GROUP, PARTITIONS = "kip848-rd", "kip848-rd-group", 6
STALE_MEMBER_EPOCH = 113


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(tmp_path / "data", QUICK_CONSUMER_GROUPS) as proc:
        yield proc


def produce(broker: BrokerProcess, count: int, start: int) -> None:
    produce_spread(broker.bootstrap, TOPIC, PARTITIONS, count, start)


class Consumer(CommittingConsumer):
    """A consumer that commits what it read when partitions are revoked and at close. A
    commit racing the heartbeat that moves the member to its next epoch gets
    STALE_MEMBER_EPOCH; the Java consumer retries it with the new epoch, and so does this."""

    def __init__(self, broker: BrokerProcess, name: str) -> None:
        super().__init__(
            broker.bootstrap,
            GROUP,
            TOPIC,
            name,
            retriable={STALE_MEMBER_EPOCH},
            forget_revoked=False,
        )


def wait_until(condition: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {condition}"
        time.sleep(0.05)  # polling with a deadline


def committed(broker: BrokerProcess) -> dict[int, int]:
    return {p: offset for (_, p), offset in committed_offsets(broker.port, GROUP).items()}


def test_confluent_consumers_split_partitions_and_hand_them_over_without_rereading(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as client:
        create(client, TOPIC, PARTITIONS)
    produce(broker, 300, 0)
    started = time.monotonic()
    consumers = [Consumer(broker, f"rd-{i}") for i in range(3)]
    for c in consumers:
        c.start()
    try:
        wait_until(
            lambda: sorted(len(c.assignment) for c in consumers) == [2, 2, 2],
            "three members owning two partitions each",
        )
        print(f"three confluent-kafka members consuming after {time.monotonic() - started:.2f} s")
        with RawClient(broker.port) as client:
            described = describe(client, GROUP)
        assert len(described.members) == 3
        # The first member leaves: it commits on revocation, the others take its partitions.
        consumers[0].stop.set()
        consumers[0].join(20)
        assert consumers[0].error is None
        produce(broker, 300, 300)
        wait_until(
            lambda: sorted(len(c.assignment) for c in consumers[1:]) == [3, 3],
            "the two remaining members taking over",
        )
        wait_until(lambda: sum(len(c.read) for c in consumers) >= 600, "every record read", 30)
    finally:
        for c in consumers:
            c.stop.set()
        for c in consumers:
            c.join(20)
    assert all(c.error is None for c in consumers)
    read = [r for c in consumers for r in c.read]
    # Every stored record read exactly once across the group.
    assert len(read) == len(set(read)) == 600
    assert sorted({p for p, _ in read}) == list(range(PARTITIONS))
    assert committed(broker) == {p: 100 for p in range(PARTITIONS)}


def test_confluent_group_survives_a_broker_restart_without_rereading(tmp_path: Path) -> None:
    """Issue 18: a restart of the broker keeps the group. The members come back at the same
    epochs with the same partitions (what the broker reloaded from its offsets log), no one is
    fenced or revoked, and every record is read exactly once across the restart."""
    settings = {
        "group.consumer.heartbeat.interval.ms": "200",
        "group.consumer.session.timeout.ms": "6000",
    }
    broker = BrokerProcess(tmp_path / "data", settings).start()
    consumers: list[Consumer] = []
    try:
        with RawClient(broker.port) as client:
            create(client, TOPIC, PARTITIONS)
        produce(broker, 300, 0)
        consumers = [Consumer(broker, f"rd-restart-{i}") for i in range(3)]
        for c in consumers:
            c.start()
        wait_until(
            lambda: sorted(len(c.assignment) for c in consumers) == [2, 2, 2],
            "three members owning two partitions each",
        )
        wait_until(lambda: sum(len(c.read) for c in consumers) >= 300, "the first 300 read")
        with RawClient(broker.port) as client:
            before = describe(client, GROUP)
        assert before.group_state == "Stable"

        # SIGTERM and start again on the same port: the clients reconnect by themselves.
        port = broker.port
        assert broker.stop() == 0
        broker.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{port}"
        broker.start()
        with RawClient(broker.port) as client:
            after = describe(client, GROUP)
        assert after.error_code == 0 and after.group_state == "Stable"
        # Reloaded from the offsets log, not rebuilt by the members' heartbeats: same epochs.
        assert after.group_epoch == before.group_epoch
        assert after.assignment_epoch == before.assignment_epoch
        assert {m.member_id: m.member_epoch for m in after.members} == {
            m.member_id: m.member_epoch for m in before.members
        }

        produce(broker, 300, 300)
        wait_until(lambda: sum(len(c.read) for c in consumers) >= 600, "every record read", 30)
        with RawClient(broker.port) as client:
            still = describe(client, GROUP)
        assert still.group_epoch == before.group_epoch  # no member fenced, none rejoined
        assert sorted(len(c.assignment) for c in consumers) == [2, 2, 2]
    finally:
        for c in consumers:
            c.stop.set()
        for c in consumers:
            c.join(20)
        try:
            stored = committed(broker)
        finally:
            broker.stop()
    assert all(c.error is None for c in consumers)
    read = [r for c in consumers for r in c.read]
    assert len(read) == len(set(read)) == 600
    assert stored == {p: 100 for p in range(PARTITIONS)}
