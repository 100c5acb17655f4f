"""KIP-932 share groups over a raw socket: the share.version gate in ApiVersions,
ShareGroupHeartbeat/Describe, ShareFetch and ShareAcknowledge (acquisition, acknowledgement,
redelivery, lock timeout, delivery-count limit, share-session epochs)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.list_groups import LIST_GROUPS
from protocol.messages.share_acknowledge import SHARE_ACKNOWLEDGE
from protocol.messages.share_fetch import SHARE_FETCH
from protocol.messages.share_group_describe import SHARE_GROUP_DESCRIBE
from protocol.messages.share_group_heartbeat import SHARE_GROUP_HEARTBEAT
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_partitioned_topic, produce
from tests.support.raw_client import RawClient

GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, INVALID_REQUEST = 69, 25, 110, 42
INVALID_RECORD_STATE, SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH = 121, 122, 123
UNKNOWN_TOPIC_ID = 100
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
LOCK_MS = 1000
DELIVERY_LIMIT = 3
SHARE_APIS = {76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 90: (0, 1), 91: (0, 0), 92: (0, 0)}


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    overrides = {
        "minikafka.share.version": "1",
        "group.share.record.lock.duration.ms": str(LOCK_MS),
        "group.share.delivery.count.limit": str(DELIVERY_LIMIT),
    }
    with running(tmp_path_factory.mktemp("share") / "data", overrides) as proc:
        yield proc


def api_versions(client: RawClient) -> Message:
    return client.request(
        API_VERSIONS,
        4,
        Message(client_software_name="raw", client_software_version="1"),
    )


def heartbeat(
    client: RawClient, group: str, member: str, epoch: int, topics: list[str] | None = None
) -> Message:
    return client.request(
        SHARE_GROUP_HEARTBEAT,
        1,
        Message(
            group_id=group,
            member_id=member,
            member_epoch=epoch,
            rack_id=None,
            subscribed_topic_names=topics,
        ),
    )


def share_fetch(
    client: RawClient,
    group: str,
    member: str,
    epoch: int,
    topic_id: bytes,
    *,
    acks: list[tuple[int, int, list[int]]] | None = None,
    max_records: int = 500,
    max_wait_ms: int = 0,
    version: int = 2,
) -> Message:
    return client.request(
        SHARE_FETCH,
        version,
        Message(
            group_id=group,
            member_id=member,
            share_session_epoch=epoch,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=1 << 20,
            max_records=max_records,
            batch_size=max_records,
            share_acquire_mode=0,
            is_renew_ack=False,
            topics=[
                Message(
                    topic_id=topic_id,
                    partitions=[
                        Message(
                            partition_index=0,
                            partition_max_bytes=0,
                            acknowledgement_batches=[
                                Message(first_offset=a, last_offset=b, acknowledge_types=t)
                                for a, b, t in acks or []
                            ],
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
        ),
    )


def share_ack(
    client: RawClient,
    group: str,
    member: str,
    epoch: int,
    topic_id: bytes,
    acks: list[tuple[int, int, list[int]]],
    version: int = 2,
) -> Message:
    return client.request(
        SHARE_ACKNOWLEDGE,
        version,
        Message(
            group_id=group,
            member_id=member,
            share_session_epoch=epoch,
            is_renew_ack=False,
            topics=[
                Message(
                    topic_id=topic_id,
                    partitions=[
                        Message(
                            partition_index=0,
                            acknowledgement_batches=[
                                Message(first_offset=a, last_offset=b, acknowledge_types=t)
                                for a, b, t in acks
                            ],
                        )
                    ],
                )
            ],
        ),
    )


def acquired(answer: Message) -> list[tuple[int, int, int]]:
    """(first, last, delivery count) of the one partition's acquired records."""
    assert answer.error_code == 0, answer
    out = []
    for topic in answer.responses:
        for part in topic.partitions:
            assert part.error_code == 0, part
            out += [
                (r.first_offset, r.last_offset, r.delivery_count) for r in part.acquired_records
            ]
    return out


def produce_values(client: RawClient, topic: str, count: int) -> None:
    data = build_batch([(None, f"v{i}".encode()) for i in range(count)])
    assert produce(client, topic, data).error_code == 0


def fetch_until(
    client: RawClient,
    group: str,
    member: str,
    epoch: int,
    topic_id: bytes,
    timeout: float,
    max_records: int = 500,
) -> tuple[int, list[tuple[int, int, int]]]:
    """ShareFetch (long-polling 200 ms at a time) until something is acquired."""
    deadline = time.monotonic() + timeout
    while True:
        answer = share_fetch(
            client, group, member, epoch, topic_id, max_wait_ms=200, max_records=max_records
        )
        got = acquired(answer)
        epoch += 1
        if got:
            return epoch, got
        assert time.monotonic() < deadline, "nothing acquired"


def test_share_apis_are_not_advertised_by_default(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        answer = api_versions(client)
        keys = {a.api_key for a in answer.api_keys}
        assert not keys & set(SHARE_APIS)
        assert "share.version" not in {f.name for f in answer.finalized_features}
        client.send(
            SHARE_GROUP_HEARTBEAT,
            1,
            Message(
                group_id="g",
                member_id="m",
                member_epoch=0,
                rack_id=None,
                subscribed_topic_names=["t"],
            ),
        )
        # An API the broker does not serve: the connection is closed, as on Kafka 4.0.
        assert client.closed_by_peer()


def test_share_apis_and_feature_with_share_version(share_broker: BrokerProcess) -> None:
    with RawClient(share_broker.port) as client:
        answer = api_versions(client)
        served = {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}
        assert {k: served[k] for k in SHARE_APIS} == SHARE_APIS
        assert ("share.version", 1, 1) in {
            (f.name, f.min_version_level, f.max_version_level) for f in answer.finalized_features
        }
        assert ("share.version", 0, 1) in {
            (f.name, f.min_version, f.max_version) for f in answer.supported_features
        }


def test_heartbeat_join_describe_leave(share_broker: BrokerProcess) -> None:
    with RawClient(share_broker.port) as client:
        topic_id = create_partitioned_topic(client, "hb-topic", 3)
        first = heartbeat(client, "hb", "member-a", 0, ["hb-topic"])
        assert first.error_code == 0, first
        assert first.member_epoch >= 1 and first.heartbeat_interval_ms == 5000
        parts = {bytes(t.topic_id): list(t.partitions) for t in first.assignment.topic_partitions}
        assert parts == {topic_id: [0, 1, 2]}
        second = heartbeat(client, "hb", "member-b", 0, ["hb-topic"])
        # Kafka 4.4.0's SimpleAssignor balances the partitions among the members, stickily:
        # member-a keeps two of its three, member-b gets the other (which ones follows
        # Kafka's hash order there, the join and partition order here).
        assert {
            bytes(t.topic_id): list(t.partitions) for t in second.assignment.topic_partitions
        } == {topic_id: [0]}
        again = heartbeat(client, "hb", "member-a", first.member_epoch)
        assert again.error_code == 0 and again.member_epoch == second.member_epoch
        assert {
            bytes(t.topic_id): list(t.partitions) for t in again.assignment.topic_partitions
        } == {topic_id: [1, 2]}
        described = client.request(
            SHARE_GROUP_DESCRIBE,
            1,
            Message(group_ids=["hb", "nope"], include_authorized_operations=False),
        ).groups
        assert described[0].error_code == 0 and described[0].group_state == "Stable"
        assert described[0].assignor_name == "simple"
        assert sorted(m.member_id for m in described[0].members) == ["member-a", "member-b"]
        assert described[0].members[0].assignment.topic_partitions[0].topic_name == "hb-topic"
        assert (described[1].error_code, described[1].error_message) == (
            GROUP_ID_NOT_FOUND,
            "Group nope not found.",
        )
        # Errors: a bad member id, an unknown member, a wrong epoch, a first beat without topics.
        assert heartbeat(client, "hb", "", 0, ["hb-topic"]).error_code == INVALID_REQUEST
        assert heartbeat(client, "hb", "member-x", 5).error_code == UNKNOWN_MEMBER_ID
        fenced = heartbeat(client, "hb", "member-a", again.member_epoch + 7)
        assert fenced.error_code == FENCED_MEMBER_EPOCH and fenced.member_id is None
        assert heartbeat(client, "hb", "member-c", 0).error_code == INVALID_REQUEST
        assert heartbeat(client, "other", "m", 3).error_code == GROUP_ID_NOT_FOUND
        left = heartbeat(client, "hb", "member-a", -1)
        assert (left.error_code, left.member_epoch) == (0, -1)
        left = heartbeat(client, "hb", "member-b", -1)
        described = client.request(
            SHARE_GROUP_DESCRIBE, 1, Message(group_ids=["hb"], include_authorized_operations=False)
        ).groups
        assert described[0].group_state == "Empty" and described[0].members == []


def test_records_shared_acknowledged_released_and_archived(share_broker: BrokerProcess) -> None:
    with RawClient(share_broker.port) as a, RawClient(share_broker.port) as b:
        topic_id = create_partitioned_topic(a, "queue", 1)
        for client, member in ((a, "ma"), (b, "mb")):
            assert heartbeat(client, "q", member, 0, ["queue"]).error_code == 0
        # The first fetch makes the share-partition, at the latest offset.
        assert acquired(share_fetch(a, "q", "ma", 0, topic_id)) == []
        assert acquired(share_fetch(b, "q", "mb", 0, topic_id)) == []
        produce_values(a, "queue", 10)
        _, got_a = fetch_until(a, "q", "ma", 1, topic_id, 10, max_records=4)
        assert got_a == [(0, 3, 1)]
        # max_records bounds an acquisition; the other member gets the next records.
        got_b = acquired(share_fetch(b, "q", "mb", 1, topic_id, max_records=4))
        assert got_b == [(4, 7, 1)]
        # The records come as whole batches; AcquiredRecords names this member's offsets.
        last = share_fetch(a, "q", "ma", 2, topic_id)
        assert acquired(last) == [(8, 9, 1)]
        assert bytes(last.responses[0].partitions[0].records)  # the one batch, offsets 0-9
        # A record held by another member can not be acknowledged by this one.
        answer = share_ack(b, "q", "mb", 2, topic_id, [(0, 0, [ACCEPT])])
        assert answer.responses[0].partitions[0].error_code == INVALID_RECORD_STATE
        # A wrong session epoch, and no session at all.
        assert share_ack(b, "q", "mb", 9, topic_id, [(0, 0, [ACCEPT])]).error_code == (
            INVALID_SHARE_SESSION_EPOCH
        )
        assert share_ack(b, "q", "nobody", 1, topic_id, []).error_code == SHARE_SESSION_NOT_FOUND
        # Acknowledgements on an initial fetch are refused.
        assert share_fetch(b, "q", "mb", 0, topic_id, acks=[(0, 0, [ACCEPT])]).error_code == (
            INVALID_REQUEST
        )


def test_accept_release_lock_timeout_and_delivery_limit(share_broker: BrokerProcess) -> None:
    with RawClient(share_broker.port) as a, RawClient(share_broker.port) as b:
        topic_id = create_partitioned_topic(a, "work", 1)
        assert acquired(share_fetch(a, "w", "ma", 0, topic_id)) == []
        assert acquired(share_fetch(b, "w", "mb", 0, topic_id)) == []
        produce_values(a, "work", 6)
        a_epoch, got = fetch_until(a, "w", "ma", 1, topic_id, 10)
        assert got == [(0, 5, 1)]
        # Accept 0-1, release 2-3 (one type per offset), keep 4-5.
        answer = share_ack(
            a, "w", "ma", a_epoch, topic_id, [(0, 3, [ACCEPT, ACCEPT, RELEASE, RELEASE])]
        )
        a_epoch += 1
        assert answer.responses[0].partitions[0].error_code == 0
        assert answer.acquisition_lock_timeout_ms == LOCK_MS
        # Released records go to the next fetch, with their delivery counted again.
        got_b = acquired(share_fetch(b, "w", "mb", 1, topic_id))
        assert got_b == [(2, 3, 2)]
        # B rejects 2 and releases 3: 3 comes back at once (its third delivery).
        share_ack(b, "w", "mb", 2, topic_id, [(2, 2, [REJECT]), (3, 3, [RELEASE])])
        assert acquired(share_fetch(b, "w", "mb", 3, topic_id, max_records=1)) == [(3, 3, 3)]
        # Released after DELIVERY_LIMIT deliveries, it is archived, never delivered again.
        answer = share_ack(b, "w", "mb", 4, topic_id, [(3, 3, [RELEASE])])
        assert answer.responses[0].partitions[0].error_code == 0
        # A's lock on 4-5 runs out: a parked fetch of B's wakes and gets them.
        started = time.monotonic()
        b_epoch, got_b = fetch_until(b, "w", "mb", 5, topic_id, 10)
        assert got_b == [(4, 5, 2)]
        assert time.monotonic() - started < LOCK_MS / 1000 + 2
        # ... and A can no longer acknowledge them.
        answer = share_ack(a, "w", "ma", a_epoch, topic_id, [(4, 5, [ACCEPT])])
        a_epoch += 1
        assert answer.responses[0].partitions[0].error_code == INVALID_RECORD_STATE
        # RENEW (v2) keeps the lock; malformed batches are INVALID_REQUEST.
        answer = share_ack(b, "w", "mb", b_epoch, topic_id, [(4, 5, [RENEW])])
        b_epoch += 1
        assert answer.responses[0].partitions[0].error_code == 0
        answer = share_ack(b, "w", "mb", b_epoch, topic_id, [(5, 4, [ACCEPT])])
        b_epoch += 1
        assert answer.responses[0].partitions[0].error_code == INVALID_REQUEST
        answer = share_ack(b, "w", "mb", b_epoch, topic_id, [(4, 5, [ACCEPT, ACCEPT, ACCEPT])])
        b_epoch += 1
        assert answer.responses[0].partitions[0].error_code == INVALID_REQUEST
        answer = share_ack(b, "w", "mb", b_epoch, topic_id, [(4, 5, [RENEW])], version=1)
        b_epoch += 1
        assert answer.responses[0].partitions[0].error_code == INVALID_REQUEST
        # B accepts 4 and releases 5: A gets 5 (third delivery), never 2 or 3.
        answer = share_ack(b, "w", "mb", b_epoch, topic_id, [(4, 5, [ACCEPT, RELEASE])])
        b_epoch += 1
        assert answer.responses[0].partitions[0].error_code == 0
        assert acquired(share_fetch(a, "w", "ma", a_epoch, topic_id)) == [(5, 5, 3)]
        a_epoch += 1
        # The final epoch acknowledges and closes the session.
        final = share_fetch(a, "w", "ma", -1, topic_id, acks=[(5, 5, [ACCEPT])])
        assert final.error_code == 0
        assert final.responses[0].partitions[0].acknowledge_error_code == 0
        assert share_fetch(a, "w", "ma", a_epoch, topic_id).error_code == SHARE_SESSION_NOT_FOUND
        # Everything is acknowledged or archived: nothing more to deliver.
        assert acquired(share_fetch(b, "w", "mb", b_epoch, topic_id)) == []


def test_final_epoch_releases_what_the_member_holds(share_broker: BrokerProcess) -> None:
    with RawClient(share_broker.port) as a, RawClient(share_broker.port) as b:
        topic_id = create_partitioned_topic(a, "closing", 1)
        assert acquired(share_fetch(a, "c", "ma", 0, topic_id)) == []
        assert acquired(share_fetch(b, "c", "mb", 0, topic_id)) == []
        produce_values(a, "closing", 3)
        _, got = fetch_until(a, "c", "ma", 1, topic_id, 10)
        assert got == [(0, 2, 1)]
        closing = share_ack(a, "c", "ma", -1, topic_id, [(0, 0, [ACCEPT])])
        assert closing.responses[0].partitions[0].error_code == 0
        # 1-2 are released at once (not after the lock duration), delivered to B.
        assert acquired(share_fetch(b, "c", "mb", 1, topic_id)) == [(1, 2, 2)]


def test_share_groups_in_list_groups_and_describe_groups(share_broker: BrokerProcess) -> None:
    with RawClient(share_broker.port) as client:
        create_partitioned_topic(client, "listed", 1)
        assert heartbeat(client, "sg-listed", "m1", 0, ["listed"]).error_code == 0
        listed = client.request(LIST_GROUPS, 5, Message(states_filter=[], types_filter=["Share"]))
        mine = [g for g in listed.groups if g.group_id == "sg-listed"]
        assert [(g.protocol_type, g.group_state, g.group_type) for g in mine] == [
            ("share", "Stable", "share")
        ]
        classic = client.request(
            LIST_GROUPS, 5, Message(states_filter=[], types_filter=["classic", "consumer"])
        )
        assert "sg-listed" not in [g.group_id for g in classic.groups]
        empty = client.request(LIST_GROUPS, 5, Message(states_filter=["empty"], types_filter=[]))
        assert "sg-listed" not in [g.group_id for g in empty.groups]
        described = client.request(
            DESCRIBE_GROUPS, 6, Message(groups=["sg-listed"], include_authorized_operations=False)
        ).groups[0]
        assert (described.error_code, described.error_message, described.group_state) == (
            GROUP_ID_NOT_FOUND,
            "Group sg-listed is not a classic group.",
            "Dead",
        )
        # One group id names one kind of group.
        joined = client.request(
            CONSUMER_GROUP_HEARTBEAT,
            1,
            Message(
                group_id="cg-not-share",
                member_id="c1",
                member_epoch=0,
                instance_id=None,
                rack_id=None,
                rebalance_timeout_ms=30000,
                subscribed_topic_names=["listed"],
                subscribed_topic_regex=None,
                server_assignor=None,
                topic_partitions=[],
            ),
        )
        assert joined.error_code == 0, joined
        refused = heartbeat(client, "cg-not-share", "m1", 0, ["listed"])
        assert (refused.error_code, refused.error_message) == (
            GROUP_ID_NOT_FOUND,
            "Group cg-not-share is not a share group.",
        )
        described = client.request(
            SHARE_GROUP_DESCRIBE,
            1,
            Message(group_ids=["cg-not-share"], include_authorized_operations=False),
        ).groups[0]
        assert described.error_message == "Group cg-not-share is not a share group."


def test_closed_connection_ends_its_share_session(share_broker: BrokerProcess) -> None:
    with RawClient(share_broker.port) as b:
        topic_id = create_partitioned_topic(b, "dropped", 1)
        assert acquired(share_fetch(b, "d", "mb", 0, topic_id)) == []
        with RawClient(share_broker.port) as a:
            assert acquired(share_fetch(a, "d", "ma", 0, topic_id)) == []
            produce_values(a, "dropped", 4)
            _, got = fetch_until(a, "d", "ma", 1, topic_id, 10)
            assert got == [(0, 3, 1)]
        # A's connection closed: its records go to B at once, not after the lock duration
        # (the long poll is woken by the release).
        started = time.monotonic()
        answer = share_fetch(b, "d", "mb", 1, topic_id, max_wait_ms=5000)
        assert acquired(answer) == [(0, 3, 2)]
        assert time.monotonic() - started < LOCK_MS / 1000
        # ... and A's session is gone.
        with RawClient(share_broker.port) as a:
            assert share_fetch(a, "d", "ma", 2, topic_id).error_code == SHARE_SESSION_NOT_FOUND


def test_share_partition_state_survives_a_restart(tmp_path: Path) -> None:
    overrides = {"minikafka.share.version": "1", "group.share.delivery.count.limit": "3"}
    with running(tmp_path / "data", overrides) as broker, RawClient(broker.port) as a:
        topic_id = create_partitioned_topic(a, "kept", 1)
        assert acquired(share_fetch(a, "k", "ma", 0, topic_id)) == []
        produce_values(a, "kept", 6)
        epoch, got = fetch_until(a, "k", "ma", 1, topic_id, 10)
        assert got == [(0, 5, 1)]
        # Accept 0-1, release 2, reject 3; 4-5 still held when the broker stops.
        answer = share_ack(
            a, "k", "ma", epoch, topic_id, [(0, 3, [ACCEPT, ACCEPT, RELEASE, REJECT])]
        )
        assert answer.responses[0].partitions[0].error_code == 0
    with running(tmp_path / "data", overrides) as broker, RawClient(broker.port) as b:
        # Released and held records come back with their delivery counts; accepted and
        # rejected ones never do.
        assert acquired(share_fetch(b, "k", "mb", 0, topic_id)) == [(2, 2, 2), (4, 5, 2)]
        produce_values(b, "kept", 2)
        _, got = fetch_until(b, "k", "mb", 1, topic_id, 10)
        assert got == [(6, 7, 1)]


def test_unknown_topic_id_is_answered_and_kept_out_of_the_session(
    share_broker: BrokerProcess,
) -> None:
    with RawClient(share_broker.port) as client:
        missing = bytes(16 * [7])
        answer = share_fetch(client, "u", "mu", 0, missing)
        assert answer.error_code == 0
        parts = [p for t in answer.responses for p in t.partitions]
        assert [(p.partition_index, p.error_code) for p in parts] == [(0, UNKNOWN_TOPIC_ID)]
        # The next fetch of the session names no partition: nothing about the unknown one.
        assert share_fetch(client, "u", "mu", 1, missing).responses[0].partitions[0].error_code == (
            UNKNOWN_TOPIC_ID
        )
        client_epoch_two = client.request(
            SHARE_FETCH,
            2,
            Message(
                group_id="u",
                member_id="mu",
                share_session_epoch=2,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1024,
                max_records=10,
                batch_size=10,
                share_acquire_mode=0,
                is_renew_ack=False,
                topics=[],
                forgotten_topics_data=[],
            ),
        )
        assert (client_epoch_two.error_code, client_epoch_two.responses) == (0, [])


def test_max_bytes_bounds_what_is_acquired(share_broker: BrokerProcess) -> None:
    with RawClient(share_broker.port) as client:
        topic_id = create_partitioned_topic(client, "bytes", 1)
        assert acquired(share_fetch(client, "by", "mb", 0, topic_id)) == []
        for _ in range(3):
            produce_values(client, "bytes", 5)
        # max_bytes 1: one whole batch, and only its records are acquired.
        answer = client.request(
            SHARE_FETCH,
            2,
            Message(
                group_id="by",
                member_id="mb",
                share_session_epoch=1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1,
                max_records=100,
                batch_size=100,
                share_acquire_mode=0,
                is_renew_ack=False,
                topics=[],
                forgotten_topics_data=[],
            ),
        )
        assert acquired(answer) == [(0, 4, 1)]
        # The rest is still there for the next fetch.
        assert acquired(share_fetch(client, "by", "mb", 2, topic_id)) == [(5, 14, 1)]
