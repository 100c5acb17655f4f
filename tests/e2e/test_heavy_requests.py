"""One heavy request must not hold the event loop (issue 13): others are answered meanwhile.

Each "answered meanwhile" test keeps a second connection busy with ApiVersions round trips
until the heavy request's answer is readable, and requires round trips completed in the
second half of that wait: a broker that does the heavy work on its loop answers nobody
until it is done. Figures (how long, how much) live in bench/stall.py.
"""

from __future__ import annotations

import select
import time
from pathlib import Path

from bench.stall import describe_configs_frame
from broker.core.dispatch import MAX_DECODED_ELEMENTS
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.create_partitions import CREATE_PARTITIONS
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.delete_topics import DELETE_TOPICS
from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.messages.produce import PRODUCE
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import (
    create_topic,
    create_topics_request,
    init_producer,
    produce_request,
    stored,
)
from tests.support.raw_client import RawClient


def _answered_meanwhile(
    heavy: RawClient, port: int, deadline_s: float = 120
) -> tuple[list[tuple[float, float]], float]:
    """ApiVersions round trips on another connection until ``heavy`` has an answer ready.

    Returns each round trip's (start, end) relative to the wait's start, and the wait.
    """
    started = time.monotonic()
    trips: list[tuple[float, float]] = []
    with RawClient(port) as other:
        while not select.select([heavy.sock], [], [], 0)[0]:
            assert time.monotonic() - started < deadline_s, "the heavy request was not answered"
            sent = time.monotonic() - started
            other.request(API_VERSIONS, 0, Message())
            trips.append((sent, time.monotonic() - started))
    return trips, time.monotonic() - started


def _assert_served_during_second_half(result: tuple[list[tuple[float, float]], float]) -> None:
    # A blocked loop answers the round trip it was sent before the heavy answer, right
    # after it: so only a round trip wholly inside the second half proves service.
    trips, waited = result
    late = [(a, b) for a, b in trips if a >= waited / 2 and b < waited]
    assert late, f"no round trip within the second half of {waited:.3f} s: {trips[-5:]}"


def test_other_connections_are_answered_while_a_huge_request_decodes(
    broker: BrokerProcess,
) -> None:
    # Just below the element budget: decoding it takes the pure-Python codec a second or
    # more, which must not happen on the event loop.
    keys = MAX_DECODED_ELEMENTS - 10
    with RawClient(broker.port) as heavy:
        heavy.send_raw(describe_configs_frame(keys))
        heavy.pending.append((7, DESCRIBE_CONFIGS, 4))
        times = _answered_meanwhile(heavy, broker.port)
        _, answer = heavy.receive()
    assert answer.results[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION: topic "t"
    _assert_served_during_second_half(times)


def test_a_request_with_more_array_elements_than_the_budget_closes_the_connection(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as heavy:
        heavy.send_raw(describe_configs_frame(MAX_DECODED_ELEMENTS + 1))
        assert heavy.closed_by_peer(timeout=60)
    broker.wait_for_log(r"closing connection: malformed DescribeConfigs v4 request .*elements")
    with RawClient(broker.port) as other:  # the broker itself carries on
        assert other.request(API_VERSIONS, 0, Message()).error_code == 0


def _million_record_batch(producer_id: int, count: int) -> bytes:
    return build_batch(
        [(None, b"")] * count,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=0,
        codec=4,  # zstd
    )


def test_other_connections_are_answered_while_a_million_record_batch_is_validated(
    broker: BrokerProcess,
) -> None:
    count = 1_000_000
    with RawClient(broker.port) as heavy:
        heavy.sock.settimeout(120)
        create_topic(heavy, "heavy-batch")
        pid = init_producer(heavy)
        data = _million_record_batch(pid, count)
        heavy.send(PRODUCE, 9, produce_request("heavy-batch", data))
        times = _answered_meanwhile(heavy, broker.port)
        _, answer = heavy.receive()
    part = answer.responses[0].partition_responses[0]
    assert (part.error_code, part.base_offset) == (0, 0)
    _assert_served_during_second_half(times)
    batches = stored(Path(broker.data_dir), "heavy-batch")
    assert [(h.base_offset, h.records_count, h.producer_id) for h, _ in batches] == [
        (0, count, pid)
    ]


def _create(client: RawClient, topics: list[tuple[str, int]], *, validate_only: bool = False):  # type: ignore[no-untyped-def]
    return client.request(
        CREATE_TOPICS,
        7,
        Message(
            topics=[
                Message(
                    name=name,
                    num_partitions=count,
                    replication_factor=1,
                    assignments=[],
                    configs=[],
                )
                for name, count in topics
            ],
            timeout_ms=60_000,
            validate_only=validate_only,
        ),
    )


def test_create_topics_over_10000_partitions_in_one_request_is_a_policy_violation(
    broker: BrokerProcess,
) -> None:
    # ReplicationControlManager.validateTotalNumberOfPartitions: the whole request fails,
    # and CreateTopicsRequest.getErrorResponse gives every topic the same error.
    with RawClient(broker.port) as client:
        answer = _create(client, [("many-a", 5000), ("many-b", 5000), ("many-c", 1)])
    assert [(t.name, t.error_code, t.error_message) for t in answer.topics] == [
        (name, 44, "Excessively large number of partitions per request.")
        for name in ("many-a", "many-b", "many-c")
    ]
    assert not list(Path(broker.data_dir).glob("many-*"))


def test_create_topics_needing_over_10000_controller_records_is_a_policy_violation(
    broker: BrokerProcess,
) -> None:
    # 10,000 partitions pass the partition count check, but with the TopicRecord they make
    # 10,001 records: BoundedList (MAX_RECORDS_PER_USER_OP) refuses the batch, and
    # EventHandlerExceptionInfo turns that into this PolicyViolationException.
    with RawClient(broker.port) as client:
        answer = _create(client, [("records-a", 10_000)], validate_only=True)
        created = _create(client, [("records-b", 9_999)], validate_only=True)
    assert [(t.error_code, t.error_message) for t in answer.topics] == [
        (44, "Unable to perform excessively large batch operation.")
    ]
    assert [(t.error_code, t.num_partitions) for t in created.topics] == [(0, 9_999)]


def test_other_connections_are_answered_while_thousands_of_partitions_are_created(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as heavy:
        heavy.sock.settimeout(300)
        heavy.send(
            CREATE_TOPICS,
            7,
            Message(
                topics=[
                    Message(
                        name="wide",
                        num_partitions=2_000,
                        replication_factor=1,
                        assignments=[],
                        configs=[],
                    )
                ],
                timeout_ms=300_000,
                validate_only=False,
            ),
        )
        times = _answered_meanwhile(heavy, broker.port)
        _, answer = heavy.receive()
    assert [(t.error_code, t.num_partitions) for t in answer.topics] == [(0, 2_000)]
    _assert_served_during_second_half(times)
    assert len(list(Path(broker.data_dir).glob("wide-*"))) == 2_000


def _create_partitions(topics: list[tuple[str, int]], validate_only: bool = False) -> Message:
    return Message(
        topics=[Message(name=name, count=count, assignments=None) for name, count in topics],
        timeout_ms=300_000,
        validate_only=validate_only,
    )


def test_other_connections_are_answered_while_thousands_of_partitions_are_added(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as heavy:
        heavy.sock.settimeout(300)
        create_topic(heavy, "grown")
        heavy.send(CREATE_PARTITIONS, 3, _create_partitions([("grown", 2_000)]))
        times = _answered_meanwhile(heavy, broker.port)
        _, answer = heavy.receive()
    assert [(r.name, r.error_code) for r in answer.results] == [("grown", 0)]
    _assert_served_during_second_half(times)
    assert len(list(Path(broker.data_dir).glob("grown-*"))) == 2_000


def test_create_partitions_beyond_10000_new_partitions_in_one_request_is_an_unknown_error(
    broker: BrokerProcess,
) -> None:
    # Kafka 4.0's controller lists one record per new partition in a list bounded at
    # 10,000 for the request: the topic that overflows it, and every later one that gets as
    # far, answers UNKNOWN_SERVER_ERROR with a null message (ReplicationControlManager.
    # createPartitions). validate_only answers the same and creates nothing.
    with RawClient(broker.port) as client:
        for name in ("a", "b", "c"):
            create_topic(client, name)
        answer = client.request(
            CREATE_PARTITIONS,
            3,
            _create_partitions([("a", 9_001), ("b", 1_002), ("c", 2)], validate_only=True),
        )
        # 9,000 + 1,001 new partitions: b's last record is the 10,001st.
        assert [(r.name, r.error_code, r.error_message) for r in answer.results] == [
            ("a", 0, None),
            ("b", -1, None),
            ("c", -1, None),
        ]
        answer = client.request(
            CREATE_PARTITIONS, 3, _create_partitions([("c", 10_002)], validate_only=True)
        )
        assert [(r.error_code, r.error_message) for r in answer.results] == [(-1, None)]
    assert sorted(p.name for p in Path(broker.data_dir).glob("[abc]-*")) == ["a-0", "b-0", "c-0"]


def test_other_connections_are_answered_while_a_topic_of_thousands_of_partitions_is_deleted(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as heavy:
        heavy.sock.settimeout(300)
        answer = heavy.request(CREATE_TOPICS, 7, create_topics_request("wide-gone", 2_000, 300_000))
        assert answer.topics[0].error_code == 0
        heavy.send(
            DELETE_TOPICS,
            6,
            Message(topics=[Message(name="wide-gone", topic_id=bytes(16))], timeout_ms=60_000),
        )
        times = _answered_meanwhile(heavy, broker.port)
        _, answer = heavy.receive()
    assert [r.error_code for r in answer.responses] == [0]
    _assert_served_during_second_half(times)
    assert not list(Path(broker.data_dir).glob("wide-gone-*[0-9]"))  # every one renamed
