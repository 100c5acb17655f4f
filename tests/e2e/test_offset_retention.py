"""Committed offsets expire and empty groups go, as Kafka 4.0's periodic group cleanup does.

A real broker with a short retention (minikafka.offsets.retention.ms, since Kafka's
offsets.retention.minutes cannot go below a minute) checked every 100 ms. What the broker
answers (OffsetFetch, ListGroups) and what it stored (the committed-offsets log: tombstones)
are both checked; the rule itself is pinned down with an injected clock in
tests/broker/test_offset_expiration.py."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.leave_group import LEAVE_GROUP
from protocol.messages.list_groups import LIST_GROUPS
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.sync_group import SYNC_GROUP
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess, running
from tests.support.committed_offsets_log import LogRecord, read_log
from tests.support.group_offsets import committed_topic, offset_fetch_v7
from tests.support.produce import create_topic
from tests.support.raw_client import RawClient

RETENTION_MS = 1500
CHECK_INTERVAL_MS = 100
# The broker stamps a group's state and a commit after the client's clock reading.
CLOCK_SLACK_MS = 50
MEMBER_ID_REQUIRED = 79


@pytest.fixture
def retention_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(
        tmp_path / "data",
        {
            "minikafka.offsets.retention.ms": str(RETENTION_MS),
            "offsets.retention.check.interval.ms": str(CHECK_INTERVAL_MS),
            "group.initial.rebalance.delay.ms": "0",
        },
    ) as proc:
        yield proc


def wait_until(condition: Callable[[], bool], timeout: float = 15.0) -> float:
    """Poll until ``condition`` holds; returns the monotonic time at which it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic()
        time.sleep(0.02)
    raise AssertionError("condition not met before the deadline")


def commit(
    client: RawClient,
    group: str,
    topic: str,
    member: tuple[str, int] = ("", -1),
    *,
    version: int = 8,
    retention_time_ms: int = -1,
) -> None:
    member_id, generation = member
    answer = client.request(
        OFFSET_COMMIT,
        version,
        Message(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            retention_time_ms=retention_time_ms,
            topics=[committed_topic(topic, {0: 42}, "m")],
        ),
    )
    assert answer.topics[0].partitions[0].error_code == 0


def fetched(client: RawClient, group: str, topic: str) -> int:
    answer = offset_fetch_v7(client, group, topic, require_stable=False)
    assert answer.error_code == 0
    partition = answer.topics[0].partitions[0]
    assert partition.error_code == 0
    return int(partition.committed_offset)


def listed(client: RawClient) -> set[str]:
    answer = client.request(LIST_GROUPS, 4, Message(states_filter=[]))
    return {g.group_id for g in answer.groups}


def subscription(topic: str) -> bytes:
    # ConsumerProtocolSubscription v0: version, [topic], null user data.
    return struct.pack(">hih", 0, 1, len(topic)) + topic.encode() + struct.pack(">i", -1)


def join_and_sync(client: RawClient, group: str, topic: str) -> tuple[str, int]:
    def join(member_id: str) -> Message:
        return client.request(
            JOIN_GROUP,
            7,
            Message(
                group_id=group,
                session_timeout_ms=60_000,
                rebalance_timeout_ms=60_000,
                member_id=member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocols=[Message(name="range", metadata=subscription(topic))],
                reason=None,
            ),
        )

    first = join("")
    assert first.error_code == MEMBER_ID_REQUIRED
    joined = join(first.member_id)
    assert joined.error_code == 0
    synced = client.request(
        SYNC_GROUP,
        5,
        Message(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[Message(member_id=joined.member_id, assignment=b"")],
        ),
    )
    assert synced.error_code == 0
    return joined.member_id, joined.generation_id


def leave(client: RawClient, group: str, member_id: str) -> None:
    answer = client.request(
        LEAVE_GROUP, 5, Message(group_id=group, members=[Message(member_id=member_id)])
    )
    assert answer.error_code == 0 and answer.members[0].error_code == 0


def test_standalone_commit_expires_is_tombstoned_on_disk_and_stays_gone_after_a_restart(
    retention_broker: BrokerProcess,
) -> None:
    with RawClient(retention_broker.port) as client:
        create_topic(client, "ret-solo")
        committed_at = time.monotonic()
        commit(client, "solo", "ret-solo")
        assert fetched(client, "solo", "ret-solo") == 42
        gone_at = wait_until(lambda: fetched(client, "solo", "ret-solo") == -1)
        assert gone_at - committed_at >= (RETENTION_MS - CLOCK_SLACK_MS) / 1000
        # The group had nothing left: it went with its last offset.
        wait_until(lambda: "solo" not in listed(client))
    on_disk = read_log(retention_broker.data_dir)
    assert LogRecord("offset-tombstone", "solo", "ret-solo", 0) in on_disk
    # No group record was ever written for it (no members), so none needs a tombstone.
    assert [r.kind for r in on_disk if r.group == "solo"] == ["offset", "offset-tombstone"]

    # A crash: the restart replays the log, tombstones included.
    retention_broker.kill()
    retention_broker.start()
    with RawClient(retention_broker.port) as client:
        assert fetched(client, "solo", "ret-solo") == -1
        assert "solo" not in listed(client)


def test_stable_group_keeps_its_offsets_and_empty_counts_from_becoming_empty(
    retention_broker: BrokerProcess,
) -> None:
    with RawClient(retention_broker.port) as client:
        create_topic(client, "ret-group")
        member = join_and_sync(client, "g", "ret-group")
        commit(client, "g", "ret-group", member)
        # A standalone commit made after the group's: once it is gone, a cleanup has run
        # more than the retention after the group's commit.
        commit(client, "canary", "ret-group")
        wait_until(lambda: fetched(client, "canary", "ret-group") == -1)
        assert fetched(client, "g", "ret-group") == 42  # Stable and subscribed: kept

        left_at = time.monotonic()
        leave(client, "g", member[0])
        # The commit is older than the retention, so only "retention after the group became
        # Empty" explains how long the offset stays.
        gone_at = wait_until(lambda: fetched(client, "g", "ret-group") == -1)
        assert gone_at - left_at >= (RETENTION_MS - CLOCK_SLACK_MS) / 1000
        wait_until(lambda: "g" not in listed(client))
    on_disk = read_log(retention_broker.data_dir)
    assert LogRecord("offset-tombstone", "g", "ret-group", 0) in on_disk
    assert LogRecord("group-tombstone", "g") in on_disk


def test_empty_group_without_offsets_disappears_from_list_groups(
    retention_broker: BrokerProcess,
) -> None:
    with RawClient(retention_broker.port) as client:
        create_topic(client, "ret-none")
        member_id, _ = join_and_sync(client, "nothing-committed", "ret-none")
        assert "nothing-committed" in listed(client)
        leave(client, "nothing-committed", member_id)
        wait_until(lambda: "nothing-committed" not in listed(client))
    assert LogRecord("group-tombstone", "nothing-committed") in read_log(retention_broker.data_dir)
    retention_broker.stop()
    retention_broker.start()
    with RawClient(retention_broker.port) as client:
        assert "nothing-committed" not in listed(client)


def test_retention_time_of_offset_commit_v2_replaces_the_brokers_retention(
    retention_broker: BrokerProcess,
) -> None:
    with RawClient(retention_broker.port) as client:
        create_topic(client, "ret-v2")
        commit(client, "kept-longer", "ret-v2", version=2, retention_time_ms=600_000)
        commit(client, "short", "ret-v2", version=2, retention_time_ms=1)
        commit(client, "canary", "ret-v2")
        wait_until(lambda: fetched(client, "short", "ret-v2") == -1)
        wait_until(lambda: fetched(client, "canary", "ret-v2") == -1)
        # Older than the broker's retention, but its own expire timestamp is far ahead.
        assert fetched(client, "kept-longer", "ret-v2") == 42
        assert "kept-longer" in listed(client)
