"""Online migration with a real client (Kafka 4.0's group.consumer.migration.policy, default
bidirectional): a classic group of three confluent-kafka consumers switched one by one to
group.protocol=consumer keeps consuming with no lost or repeated record when offsets are
committed on revocation, and the same the other way round. What the broker stored (the
committed offsets, the group's record and kind in the __consumer_offsets topic) is checked
after each run."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from protocol.messages.list_groups import LIST_GROUPS  # noqa: E402
from protocol.schema import Message  # noqa: E402
from tests.e2e.test_consumer_groups_raw import create  # noqa: E402
from tests.support.broker_process import BrokerProcess, running  # noqa: E402
from tests.support.confluent_group import (  # noqa: E402
    QUICK_CONSUMER_GROUPS,
    CommittingConsumer,
    produce_spread,
)
from tests.support.group_offsets import committed_offsets  # noqa: E402
from tests.support.raw_client import RawClient  # noqa: E402
from tests.support.stored_groups import stored_groups  # noqa: E402

TOPIC, GROUP, PARTITIONS = "migrate", "migrate-group", 6
# Commits racing a rebalance: the member retries with its next epoch/generation.
RETRIABLE = {22, 27, 113}  # ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, STALE_MEMBER_EPOCH


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(
        tmp_path / "data", {**QUICK_CONSUMER_GROUPS, "group.initial.rebalance.delay.ms": "0"}
    ) as proc:
        yield proc


def produce(broker: BrokerProcess, count: int, start: int) -> None:
    produce_spread(broker.bootstrap, TOPIC, PARTITIONS, count, start)


class Consumer(CommittingConsumer):
    """Reads, and commits what it read when partitions are revoked and at close; a revoked
    partition's position is forgotten (it may come back after another member read on)."""

    def __init__(self, broker: BrokerProcess, name: str, protocol: str) -> None:
        super().__init__(
            broker.bootstrap,
            GROUP,
            TOPIC,
            name,
            protocol=protocol,
            retriable=RETRIABLE,
            forget_revoked=True,
            settings=(
                {"session.timeout.ms": 6000, "heartbeat.interval.ms": 200}
                if protocol == "classic"
                else None
            ),
        )


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> float:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)  # polling with a deadline
    return time.monotonic()


def committed(broker: BrokerProcess) -> dict[int, int]:
    return {p: offset for (_, p), offset in committed_offsets(broker.port, GROUP).items()}


def listed(broker: BrokerProcess) -> tuple[str, str] | None:
    """(type, state) as ListGroups v5 reports the group."""
    with RawClient(broker.port) as client:
        answer = client.request(LIST_GROUPS, 5, Message(states_filter=[], types_filter=[]))
    for g in answer.groups:
        if g.group_id == GROUP:
            return str(g.group_type), str(g.group_state)
    return None


def group_type(broker: BrokerProcess) -> str | None:
    found = listed(broker)
    return found[0] if found else None


def group_stable(broker: BrokerProcess) -> bool:
    """Stable as the broker sees it: for a consumer group, every member (classic ones too)
    at the assignment epoch. A rolling restart waits for this before the next step: a
    classic member still behind the group epoch when the group is downgraded gets
    ILLEGAL_GENERATION (the classic generation is the group epoch, as in Kafka) and loses
    its partitions without a commit."""
    found = listed(broker)
    return found is not None and found[1] == "Stable"


def split_evenly(consumers: list[Consumer]) -> Callable[[], bool]:
    def check() -> bool:
        owned = [c.assignment for c in consumers]
        return sorted(len(a) for a in owned) == [2, 2, 2] and set().union(*owned) == set(
            range(PARTITIONS)
        )

    return check


def roll(
    broker: BrokerProcess, first: str, then: str, expect_type_before: str, expect_type: str
) -> list[Consumer]:
    """Three ``first`` consumers, then each replaced in turn by a ``then`` consumer, records
    produced at every step; returns every consumer that ran (all stopped)."""
    with RawClient(broker.port) as client:
        create(client, TOPIC, PARTITIONS)
    produce(broker, 120, 0)
    live = [Consumer(broker, f"{first}-{i}", first) for i in range(3)]
    everyone = list(live)
    for c in live:
        c.start()
    try:
        wait_until(split_evenly(live), f"three {first} members splitting the partitions")
        wait_until(lambda: group_stable(broker), "a Stable group")
        assert group_type(broker) == expect_type_before
        produced = 120
        for step in range(3):
            leaving = live.pop(0)
            leaving.stop.set()
            leaving.join(30)
            assert leaving.error is None
            newcomer = Consumer(broker, f"{then}-{step}", then)
            everyone.append(newcomer)
            live.append(newcomer)
            newcomer.start()
            produce(broker, 120, produced)
            produced += 120
            wait_until(split_evenly(live), f"step {step}: the partitions split again")
            wait_until(
                lambda n=produced: sum(len(c.read) for c in everyone) >= n,  # type: ignore[misc]
                f"step {step}: every record read",
            )
            wait_until(lambda: group_stable(broker), f"step {step}: a Stable group")
        assert group_type(broker) == expect_type
    finally:
        for c in live:
            c.stop.set()
        for c in live:
            c.join(30)
    assert all(c.error is None for c in everyone), [c.error for c in everyone]
    return everyone


def check_exactly_once(broker: BrokerProcess, everyone: list[Consumer], total: int) -> None:
    read = [r for c in everyone for r in c.read]
    assert len(read) == len(set(read)) == total, "a record was lost or read twice"
    per_partition = total // PARTITIONS
    assert committed(broker) == dict.fromkeys(range(PARTITIONS), per_partition)


def test_rolling_upgrade_from_classic_to_consumer_protocol(broker: BrokerProcess) -> None:
    everyone = roll(broker, "classic", "consumer", "classic", "consumer")
    check_exactly_once(broker, everyone, 480)
    broker.wait_for_log("Converted the classic group to a consumer group")
    # What the broker stored: the group is a consumer group (Empty now) with its offsets.
    broker.stop()
    store = stored_groups(broker.data_dir)
    try:
        assert GROUP in store.consumer_groups()
        assert GROUP not in store.groups()
        assert {p: v.offset for (_, p), v in store.offsets(GROUP).items()} == dict.fromkeys(
            range(PARTITIONS), 80
        )
    finally:
        store.close()


def test_rolling_downgrade_from_consumer_to_classic_protocol(broker: BrokerProcess) -> None:
    everyone = roll(broker, "consumer", "classic", "consumer", "classic")
    check_exactly_once(broker, everyone, 480)
    broker.wait_for_log("Converted the consumer group to a classic group")
    broker.stop()
    store = stored_groups(broker.data_dir)
    try:
        assert GROUP not in store.consumer_groups()
        assert GROUP in store.groups()
        assert {p: v.offset for (_, p), v in store.offsets(GROUP).items()} == dict.fromkeys(
            range(PARTITIONS), 80
        )
    finally:
        store.close()
