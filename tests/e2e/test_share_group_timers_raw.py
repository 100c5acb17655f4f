"""Share groups over a raw socket: a member fenced by its session timer, and the
share.isolation.level group config (read_committed reads below the last stable offset and
never delivers aborted transactions' records), each checked on the wire and in the stored
share state (share-groups.dat, share-group-state.dat)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.messages.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from protocol.messages.share_group_describe import SHARE_GROUP_DESCRIBE
from protocol.schema import Message
from tests.e2e.test_share_group_offsets_raw import stored_groups, stored_states
from tests.e2e.test_share_groups_raw import (
    ACCEPT,
    UNKNOWN_MEMBER_ID,
    acquired,
    fetch_until,
    heartbeat,
    produce_values,
    share_ack,
    share_fetch,
)
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_partitioned_topic
from tests.support.raw_client import RawClient

SESSION_MS = 3000
INVALID_CONFIG = 40


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    overrides = {
        "minikafka.share.version": "1",
        "group.share.min.session.timeout.ms": "1000",
        "group.share.session.timeout.ms": str(SESSION_MS),
        "group.share.min.heartbeat.interval.ms": "500",
        "group.share.heartbeat.interval.ms": "500",
        # Longer than the session: what a fenced member holds stays locked meanwhile.
        "group.share.record.lock.duration.ms": "60000",
    }
    with running(tmp_path_factory.mktemp("share-timers") / "data", overrides) as proc:
        yield proc


def _describe(client: RawClient, group: str) -> Message:
    return client.request(
        SHARE_GROUP_DESCRIBE, 1, Message(group_ids=[group], include_authorized_operations=False)
    ).groups[0]


def _set_group_config(client: RawClient, group: str, name: str, value: str) -> Message:
    answer = client.request(
        INCREMENTAL_ALTER_CONFIGS,
        1,
        Message(
            resources=[
                Message(
                    resource_type=32,
                    resource_name=group,
                    configs=[Message(name=name, config_operation=0, value=value)],
                )
            ],
            validate_only=False,
        ),
    )
    return answer.responses[0]


def test_silent_member_is_fenced_by_its_session_timer(broker: BrokerProcess) -> None:
    data_dir = broker.data_dir
    with RawClient(broker.port) as a, RawClient(broker.port) as b:
        topic_id = create_partitioned_topic(a, "fenced-topic", 1)
        joined = heartbeat(a, "fg", "member-a", 0, ["fenced-topic"])
        assert joined.error_code == 0 and joined.heartbeat_interval_ms == 500
        assert acquired(share_fetch(a, "fg", "member-a", 0, topic_id)) == []
        produce_values(a, "fenced-topic", 4)
        epoch, got = fetch_until(a, "fg", "member-a", 1, topic_id, 10)
        assert got == [(0, 3, 1)]
        # member-a is silent from here on and no request is sent: only a timer can fence
        # it, and the group's stored epoch moves.
        # (The epoch the join stored; read from the answer, as the member may be fenced
        # already on a slow machine.)
        before = joined.member_epoch
        deadline = time.monotonic() + 10
        while stored_groups(data_dir)["fg"].epoch == before:
            assert time.monotonic() < deadline, "member-a was never fenced"
            time.sleep(0.1)  # polling the file, with a deadline
        assert "member member-a fenced, its session expired" in broker.log_text()
        described = _describe(b, "fg")
        assert (described.group_state, described.members) == ("Empty", [])
        assert described.group_epoch == stored_groups(data_dir)["fg"].epoch
        assert heartbeat(b, "fg", "member-b", 0, ["fenced-topic"]).error_code == 0
        # As Kafka's shareGroupFenceMember: the fenced member's next heartbeat is refused...
        assert heartbeat(a, "fg", "member-a", joined.member_epoch).error_code == (UNKNOWN_MEMBER_ID)
        # ...but its records stay locked to it (member-b gets none of them) and its share
        # session stays, so it can still acknowledge them.
        assert acquired(share_fetch(b, "fg", "member-b", 0, topic_id)) == []
        answer = share_ack(a, "fg", "member-a", epoch, topic_id, [(0, 3, [ACCEPT])])
        assert answer.error_code == 0
        assert answer.responses[0].partitions[0].error_code == 0
    states = stored_states(data_dir)
    assert states[("fg", topic_id, 0)].start_offset == 4


def _transactional_history(bootstrap: str, topic: str) -> Producer:
    """Offsets 0-1 plain, 2-4 aborted (marker 5), 6-7 committed (marker 8), 9 in an open
    transaction: the producer that holds it is returned."""
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(2):
        plain.produce(topic, f"plain-{i}".encode(), partition=0)
    assert plain.flush(10) == 0
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-txn"})
    txn.init_transactions(10)
    for outcome, count in (("abort", 3), ("commit", 2), ("open", 1)):
        txn.begin_transaction()
        for i in range(count):
            txn.produce(topic, f"{outcome}-{i}".encode(), partition=0)
        assert txn.flush(10) == 0
        if outcome == "abort":
            txn.abort_transaction(10)
        elif outcome == "commit":
            txn.commit_transaction(10)
    return txn


def _fetch_offsets(
    client: RawClient, group: str, member: str, epoch: int, topic_id: bytes, count: int
) -> tuple[int, list[int]]:
    """ShareFetch until ``count`` records are acquired (a transaction's markers are written
    after EndTxn answers, so the last stable offset may get there a little later); the
    next session epoch and the acquired offsets, each delivered for the first time."""
    offsets: list[int] = []
    deadline = time.monotonic() + 10
    while len(offsets) < count:
        assert time.monotonic() < deadline, f"only {offsets} acquired"
        answer = share_fetch(client, group, member, epoch, topic_id, max_wait_ms=200)
        epoch += 1
        for first, last, deliveries in acquired(answer):
            assert deliveries == 1
            offsets += range(first, last + 1)
    return epoch, offsets


def test_share_isolation_level_read_committed(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        topic_id = create_partitioned_topic(client, "txn-share", 1)
        for group, level in (("rc", "read_committed"), ("ru", "read_uncommitted")):
            assert _set_group_config(client, group, "share.auto.offset.reset", "earliest")
            done = _set_group_config(client, group, "share.isolation.level", level)
            assert done.error_code == 0, done
        refused = _set_group_config(client, "rc", "share.isolation.level", "committed")
        assert (refused.error_code, refused.error_message) == (
            INVALID_CONFIG,
            "Invalid value committed for configuration share.isolation.level: "
            "String must be one of: read_committed, read_uncommitted",
        )
        described = client.request(
            DESCRIBE_CONFIGS,
            4,
            Message(
                resources=[Message(resource_type=32, resource_name="rc", configuration_keys=None)],
                include_synonyms=False,
                include_documentation=False,
            ),
        )
        configs = {c.name: c.value for c in described.results[0].configs}
        assert configs["share.isolation.level"] == "read_committed"
        txn = _transactional_history(f"127.0.0.1:{broker.port}", "txn-share")
        # read_committed: the plain and committed records, nothing of the aborted
        # transaction, the markers or the open transaction (at and past the LSO).
        epoch, committed = _fetch_offsets(client, "rc", "m-rc", 0, topic_id, 4)
        assert committed == [0, 1, 6, 7]
        _, everything = _fetch_offsets(client, "ru", "m-ru", 0, topic_id, 8)
        assert everything == [0, 1, 2, 3, 4, 6, 7, 9]
        # Nothing more below the LSO for read_committed while the transaction is open.
        assert acquired(share_fetch(client, "rc", "m-rc", epoch, topic_id)) == []
        epoch += 1
        txn.commit_transaction(10)
        # The open transaction's commit moves the LSO: its record is delivered now.
        epoch, late = _fetch_offsets(client, "rc", "m-rc", epoch, topic_id, 1)
        assert late == [9]
        acks = [(0, 1, [ACCEPT]), (6, 7, [ACCEPT]), (9, 9, [ACCEPT])]
        answer = share_ack(client, "rc", "m-rc", epoch, topic_id, acks)
        assert answer.responses[0].partitions[0].error_code == 0
    # The aborted records and the markers were archived, never delivered: once the
    # delivered ones are acknowledged the stored share-partition starts past them all.
    state = stored_states(broker.data_dir)[("rc", topic_id, 0)]
    assert state.start_offset == 11
