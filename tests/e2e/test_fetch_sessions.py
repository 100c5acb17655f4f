"""Incremental fetch sessions (KIP-227) over a real socket, checked on the answers' fields
and record batches (Kafka 4.0's FetchSession.scala; kafka-oracle/consume_fetch_limits_kip74,
consume_out_of_range and raw_fetch_edge_cases recorded what Kafka sends)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.fetch import FETCH
from protocol.records import build_batch, iter_batches
from protocol.schema import Message
from tests.e2e.test_fetch_limits import create_topic
from tests.support.broker_process import BrokerProcess
from tests.support.produce import produce, stored
from tests.support.raw_client import RawClient

BATCHES = 5
VALUE_BYTES = 700  # one batch is about 770 bytes: two never fit in max_bytes 1000


def fetch(
    session_id: int,
    epoch: int,
    topic: str,
    offsets: Sequence[tuple[int, int]],
    *,
    forget: Sequence[int] = (),
    topic_id: bytes = b"\x00" * 16,
    max_bytes: int = 1000,
    partition_max_bytes: int = 500,
    max_wait_ms: int = 0,
) -> Message:
    return Message(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=(
            [
                Message(
                    topic=topic,
                    topic_id=topic_id,
                    partitions=[
                        Message(
                            partition=p, fetch_offset=o, partition_max_bytes=partition_max_bytes
                        )
                        for p, o in offsets
                    ],
                )
            ]
            if offsets
            else []
        ),
        forgotten_topics_data=(
            [Message(topic=topic, topic_id=topic_id, partitions=list(forget))] if forget else []
        ),
        rack_id="",
    )


def listed(answer: Message) -> list[tuple[int, list[int]]]:
    """(partition, base offsets of the whole batches returned) in answer order."""
    return [
        (p.partition_index, [h.base_offset for _, h in iter_batches(bytes(p.records))])
        for t in answer.responses
        for p in t.partitions
    ]


@pytest.fixture
def three(shared_broker: BrokerProcess) -> Iterator[tuple[str, bytes]]:
    """Three partitions of five one-record batches of about 770 bytes each."""
    name = f"sessions-{time.monotonic_ns()}"
    with RawClient(shared_broker.port) as client:
        topic_id = create_topic(client, name, 3)
        for p in range(3):
            for i in range(BATCHES):
                data = build_batch([(b"k", bytes([i]) * VALUE_BYTES)])
                assert produce(client, name, data, partition=p).error_code == 0
    yield name, topic_id


def test_epoch_zero_opens_a_session_and_epoch_minus_one_does_not(
    shared_broker: BrokerProcess, three: tuple[str, bytes]
) -> None:
    name, _ = three
    with RawClient(shared_broker.port) as client:
        for version in (7, 12):
            opened = client.request(FETCH, version, fetch(0, 0, name, [(0, 0)]))
            assert (opened.error_code, listed(opened)) == (0, [(0, [0])])
            assert opened.session_id != 0
        sessionless = client.request(FETCH, 12, fetch(0, -1, name, [(0, 0)]))
        assert (sessionless.session_id, listed(sessionless)) == (0, [(0, [0])])


def test_incremental_answers_list_only_news_and_rotate_partitions_with_data(
    shared_broker: BrokerProcess, three: tuple[str, bytes]
) -> None:
    """kafka-python's pattern from kafka-oracle/consume_fetch_limits_kip74: each answer
    carries one batch; a partition that returned data moves to the back of the session, so
    the next partition in line is the one allowed past the limits."""
    name, _ = three
    with RawClient(shared_broker.port) as client:
        full = client.request(FETCH, 12, fetch(0, 0, name, [(0, 0), (1, 0), (2, 0)]))
        session = full.session_id
        assert session != 0
        # A full answer lists every partition; only the first gets data under max_bytes.
        assert listed(full) == [(0, [0]), (1, []), (2, [])]
        first = stored(shared_broker.data_dir, name, 0)[0][1]
        assert bytes(full.responses[0].partitions[0].records) == first
        position = {0: 1, 1: 0, 2: 0}
        expected = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 1, 2]
        moved = 0
        for epoch, owner in enumerate(expected, start=1):
            answer = client.request(
                FETCH, 12, fetch(session, epoch, name, [(moved, position[moved])])
            )
            assert (answer.error_code, answer.session_id) == (0, session)
            assert listed(answer) == [(owner, [position[owner]])], f"epoch {epoch}"
            part = answer.responses[0].partitions[0]
            assert (part.high_watermark, part.log_start_offset) == (BATCHES, 0)
            position[owner] += 1
            moved = owner
        # Everything read and nothing changed: an empty answer.
        idle = client.request(
            FETCH, 12, fetch(session, len(expected) + 1, name, [(moved, position[moved])])
        )
        assert (idle.error_code, idle.session_id, idle.responses) == (0, session, [])


def test_incremental_requests_add_and_forget_partitions(
    shared_broker: BrokerProcess, three: tuple[str, bytes]
) -> None:
    name, _ = three
    big = {"max_bytes": 1_000_000, "partition_max_bytes": 1_000_000}
    with RawClient(shared_broker.port) as client:
        full = client.request(FETCH, 12, fetch(0, 0, name, [(0, BATCHES)], **big))
        session = full.session_id
        assert listed(full) == [(0, [])]
        added = client.request(FETCH, 12, fetch(session, 1, name, [(1, 3)], **big))
        assert listed(added) == [(1, [3, 4])]
        # Partition 1 forgotten, partition 2 added; new data on 0 and 1.
        for p in (0, 1):
            assert produce(client, name, build_batch([(b"k", b"new")]), partition=p).error_code == 0
        changed = client.request(FETCH, 12, fetch(session, 2, name, [(2, 4)], forget=[1], **big))
        assert sorted(listed(changed)) == [(0, [BATCHES]), (2, [4])]
        # Forgetting every partition closes the session: a sessionless answer.
        closed = client.request(FETCH, 12, fetch(session, 3, name, [], forget=[0, 2]))
        assert (closed.error_code, closed.session_id, closed.responses) == (0, 0, [])
        gone = client.request(FETCH, 12, fetch(session, 4, name, []))
        assert gone.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_session_errors_answer_session_id_zero_and_no_partitions(
    shared_broker: BrokerProcess, three: tuple[str, bytes]
) -> None:
    name, topic_id = three
    with RawClient(shared_broker.port) as client:
        unknown = client.request(FETCH, 12, fetch(123, 1, name, [(0, 0)]))
        assert (unknown.error_code, unknown.session_id, unknown.responses) == (
            ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
            0,
            [],
        )
        session = client.request(FETCH, 12, fetch(0, 0, name, [(0, 0)])).session_id
        assert client.request(FETCH, 12, fetch(session, 1, name, [])).error_code == 0
        # A repeated epoch (a duplicate request) and a skipped one are both refused.
        for epoch in (1, 3):
            wrong = client.request(FETCH, 12, fetch(session, epoch, name, []))
            assert (wrong.error_code, wrong.session_id, wrong.responses) == (
                ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                0,
                [],
            )
        # A session opened with topic names cannot be used by id (v13+).
        by_id = client.request(FETCH, 13, fetch(session, 2, "", [], topic_id=topic_id))
        assert by_id.error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
        assert client.request(FETCH, 12, fetch(session, 2, name, [])).error_code == 0


def test_a_full_request_naming_a_session_closes_it(
    shared_broker: BrokerProcess, three: tuple[str, bytes]
) -> None:
    name, _ = three
    with RawClient(shared_broker.port) as client:
        old = client.request(FETCH, 12, fetch(0, 0, name, [(0, 0)])).session_id
        new = client.request(FETCH, 12, fetch(old, 0, name, [(1, 0)])).session_id
        assert new not in (0, old)
        assert (
            client.request(FETCH, 12, fetch(old, 1, name, [])).error_code
            == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        )
        # Epoch -1 closes it without opening another.
        final = client.request(FETCH, 12, fetch(new, -1, name, [(1, 0)]))
        assert (final.error_code, final.session_id) == (0, 0)
        assert (
            client.request(FETCH, 12, fetch(new, 1, name, [])).error_code
            == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        )


def test_sessions_by_topic_id_keep_answering_errors_for_unknown_ids(
    shared_broker: BrokerProcess, three: tuple[str, bytes]
) -> None:
    """v13+: partitions are keyed by topic id; an unknown id stays in the session and, being
    an error, is listed in every answer (CachedPartition.maybeUpdateResponseData)."""
    name, topic_id = three
    unknown_id = b"\x07" * 16
    body = fetch(0, 0, "", [(0, BATCHES)], topic_id=topic_id)
    body.topics.append(
        Message(
            topic_id=unknown_id,
            partitions=[Message(partition=0, fetch_offset=0, partition_max_bytes=500)],
        )
    )
    with RawClient(shared_broker.port) as client:
        full = client.request(FETCH, 17, body)
        session = full.session_id
        assert session != 0
        assert [(t.topic_id, p.error_code) for t in full.responses for p in t.partitions] == [
            (topic_id, 0),
            (unknown_id, ErrorCode.UNKNOWN_TOPIC_ID),
        ]
        again = client.request(FETCH, 17, fetch(session, 1, "", [], topic_id=topic_id))
        assert [(t.topic_id, p.error_code) for t in again.responses for p in t.partitions] == [
            (unknown_id, ErrorCode.UNKNOWN_TOPIC_ID)
        ]
        assert again.responses[0].partitions[0].aborted_transactions == []
        by_name = client.request(FETCH, 12, fetch(session, 2, name, []))
        assert by_name.error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_an_incremental_long_poll_answers_when_the_high_watermark_moves(
    shared_broker: BrokerProcess, three: tuple[str, bytes]
) -> None:
    name, _ = three
    with RawClient(shared_broker.port) as client, RawClient(shared_broker.port) as producer:
        session = client.request(FETCH, 12, fetch(0, 0, name, [(0, BATCHES)])).session_id
        # max_wait far beyond the client's 10 s socket timeout: an answer at all is a wake-up.
        client.send(FETCH, 12, fetch(session, 1, name, [], max_wait_ms=300_000))
        assert produce(producer, name, build_batch([(b"k", b"v")]), partition=0).error_code == 0
        _, answer = client.receive()
        assert listed(answer) == [(0, [BATCHES])]
        assert answer.responses[0].partitions[0].high_watermark == BATCHES + 1


def test_no_sessions_when_the_cache_has_no_slots(tmp_path: Path) -> None:
    broker = BrokerProcess(
        tmp_path / "data", {"max.incremental.fetch.session.cache.slots": "0"}
    ).start()
    try:
        with RawClient(broker.port) as client:
            create_topic(client, "t", 1)
            answer = client.request(FETCH, 12, fetch(0, 0, "t", [(0, 0)]))
        assert (answer.error_code, answer.session_id) == (0, 0)
        assert listed(answer) == [(0, [])]
    finally:
        assert broker.stop() == 0
