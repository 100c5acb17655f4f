"""Fetch across several partitions: KIP-74 byte limits, per-partition errors and the exact
fields Kafka 4.0 answers with (ReplicaManager.readFromLog, KafkaApis.handleFetchRequest)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import pytest

from protocol.errors import ErrorCode
from protocol.messages.fetch import FETCH
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import create_partitioned_topic, produce, stored
from tests.support.raw_client import RawClient

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
BIG_BATCH_BYTES = 10_000


def create_topic(client: RawClient, name: str, partitions: int) -> bytes:
    return create_partitioned_topic(client, name, partitions)


def fetch_body(
    topic: str,
    offsets: Sequence[tuple[int, int]],
    *,
    max_bytes: int = 50_000_000,
    partition_max_bytes: int = 1_000_000,
    isolation_level: int = READ_UNCOMMITTED,
    current_leader_epoch: int = -1,
    last_fetched_epoch: int = -1,
    extra_topics: Sequence[Message] = (),
) -> Message:
    """A sessionless fetch of (partition, offset) pairs of one topic, in that order."""
    return Message(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_id=0,
        session_epoch=-1,
        topics=[
            Message(
                topic=topic,
                partitions=[
                    Message(
                        partition=p,
                        current_leader_epoch=current_leader_epoch,
                        fetch_offset=offset,
                        last_fetched_epoch=last_fetched_epoch,
                        partition_max_bytes=partition_max_bytes,
                    )
                    for p, offset in offsets
                ],
            ),
            *extra_topics,
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def by_partition(answer: Message) -> dict[int, Message]:
    return {p.partition_index: p for t in answer.responses for p in t.partitions}


@pytest.fixture
def three_big(shared_broker: BrokerProcess) -> Iterator[str]:
    """Three partitions, each holding one batch of about 10 KB (offset 0)."""
    name = f"kip74-{time.monotonic_ns()}"
    with RawClient(shared_broker.port) as client:
        create_topic(client, name, 3)
        for p in range(3):
            data = build_batch([(b"k", bytes([p]) * BIG_BATCH_BYTES)])
            assert produce(client, name, data, partition=p).error_code == 0
    yield name


def test_only_the_first_partition_with_data_may_exceed_the_byte_limits(
    shared_broker: BrokerProcess, three_big: str
) -> None:
    """KIP-74: one whole batch for the first partition with data, however small the limits;
    a later partition whose first batch does not fit returns nothing (not the whole batch)."""
    with RawClient(shared_broker.port) as client:
        answer = client.request(
            FETCH,
            12,
            fetch_body(three_big, [(0, 0), (1, 0), (2, 0)], partition_max_bytes=100),
        )
    parts = by_partition(answer)
    first = b"".join(raw for _, raw in stored(shared_broker.data_dir, three_big, 0))
    assert len(first) > BIG_BATCH_BYTES
    assert bytes(parts[0].records) == first
    for p in (1, 2):
        assert (parts[p].error_code, bytes(parts[p].records)) == (0, b"")
        assert (parts[p].high_watermark, parts[p].log_start_offset) == (1, 0)


def test_the_request_budget_is_shared_and_the_first_partition_with_data_gets_it(
    shared_broker: BrokerProcess, three_big: str
) -> None:
    """max_bytes bounds the whole answer: the first partition (already at its log end) has
    no data, so the second is the one allowed past the limit; the third gets nothing."""
    with RawClient(shared_broker.port) as client:
        answer = client.request(
            FETCH, 12, fetch_body(three_big, [(0, 1), (1, 0), (2, 0)], max_bytes=1)
        )
    parts = by_partition(answer)
    second = b"".join(raw for _, raw in stored(shared_broker.data_dir, three_big, 1))
    assert [len(bytes(parts[p].records)) for p in range(3)] == [0, len(second), 0]
    assert bytes(parts[1].records) == second


def test_partitions_skipped_for_lack_of_budget_are_still_range_checked(
    shared_broker: BrokerProcess, three_big: str
) -> None:
    with RawClient(shared_broker.port) as client:
        answer = client.request(
            FETCH, 12, fetch_body(three_big, [(0, 0), (1, 99), (2, -1)], max_bytes=1)
        )
    parts = by_partition(answer)
    assert len(bytes(parts[0].records)) > BIG_BATCH_BYTES
    assert parts[1].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert parts[2].error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_offset_out_of_range_answers_minus_one_offsets_and_null_aborted_transactions(
    shared_broker: BrokerProcess, three_big: str
) -> None:
    """ReplicaManager.createLogReadResult: high watermark, last stable offset and log start
    offset are all -1 (recorded from Kafka 4.0: kafka-oracle/consume_out_of_range)."""
    with RawClient(shared_broker.port) as client:
        for isolation in (READ_UNCOMMITTED, READ_COMMITTED):
            answer = client.request(
                FETCH, 12, fetch_body(three_big, [(0, 50)], isolation_level=isolation)
            )
            part = by_partition(answer)[0]
            assert part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
            assert (part.high_watermark, part.last_stable_offset, part.log_start_offset) == (
                -1,
                -1,
                -1,
            )
            assert part.aborted_transactions is None
            assert bytes(part.records) == b""


def test_current_leader_epoch_is_checked_against_the_partition_epoch(
    shared_broker: BrokerProcess, three_big: str
) -> None:
    """Partition.checkCurrentLeaderEpoch through localLogWithEpochOrThrow; a negative epoch
    means "not given" (FetchRequest.optionalEpoch)."""
    with RawClient(shared_broker.port) as client:
        ahead = by_partition(
            client.request(FETCH, 12, fetch_body(three_big, [(0, 0)], current_leader_epoch=1))
        )[0]
        assert ahead.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert (ahead.high_watermark, ahead.log_start_offset, bytes(ahead.records)) == (
            -1,
            -1,
            b"",
        )
        for epoch in (0, -1, -5):
            same = by_partition(
                client.request(
                    FETCH, 12, fetch_body(three_big, [(0, 0)], current_leader_epoch=epoch)
                )
            )[0]
            assert same.error_code == 0
            assert len(bytes(same.records)) > BIG_BATCH_BYTES


def test_aborted_transactions_are_null_or_empty_exactly_as_kafka_answers(
    shared_broker: BrokerProcess, three_big: str
) -> None:
    """read_committed: [] where the log was read (data or none), null where the first batch
    did not fit or the read failed; unknown topics/partitions get [] (partitionResponse);
    read_uncommitted: null wherever the log was read (kafka-oracle/consume_fetch_limits_kip74,
    raw_fetch_edge_cases)."""
    missing = Message(
        topic="no-such-topic",
        partitions=[Message(partition=0, fetch_offset=0, partition_max_bytes=100)],
    )
    with RawClient(shared_broker.port) as client:
        committed = by_partition(
            client.request(
                FETCH,
                12,
                fetch_body(
                    three_big,
                    [(0, 0), (1, 0), (2, 1)],
                    max_bytes=BIG_BATCH_BYTES * 3 // 2,
                    partition_max_bytes=BIG_BATCH_BYTES * 2,
                    isolation_level=READ_COMMITTED,
                ),
            )
        )
        assert committed[0].aborted_transactions == []
        assert (committed[1].aborted_transactions, bytes(committed[1].records)) == (None, b"")
        assert (committed[2].aborted_transactions, bytes(committed[2].records)) == ([], b"")
        for isolation in (READ_UNCOMMITTED, READ_COMMITTED):
            answer = client.request(
                FETCH,
                12,
                fetch_body(
                    three_big, [(0, 0), (7, 0)], isolation_level=isolation, extra_topics=[missing]
                ),
            )
            found = {p.partition_index: p for p in answer.responses[0].partitions}
            assert answer.responses[0].topic == three_big
            assert found[0].aborted_transactions == ([] if isolation else None)
            assert found[7].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert found[7].aborted_transactions == []
            unknown = answer.responses[-1]
            assert unknown.topic == "no-such-topic"
            assert unknown.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert unknown.partitions[0].aborted_transactions == []


def test_known_partitions_come_first_and_unknown_ones_after_them(
    shared_broker: BrokerProcess, three_big: str
) -> None:
    """KafkaApis answers the partitions it read in request order, then the erroneous ones."""
    missing = Message(
        topic="no-such-topic",
        partitions=[Message(partition=0, fetch_offset=0, partition_max_bytes=100)],
    )
    body = fetch_body(three_big, [(7, 0), (1, 0), (0, 0)])
    body.topics.insert(0, missing)
    with RawClient(shared_broker.port) as client:
        answer = client.request(FETCH, 12, body)
    order = [(t.topic, p.partition_index) for t in answer.responses for p in t.partitions]
    assert order == [(three_big, 1), (three_big, 0), ("no-such-topic", 0), (three_big, 7)]


def test_last_fetched_epoch_beyond_the_log_end_gets_a_diverging_epoch(
    shared_broker: BrokerProcess, three_big: str
) -> None:
    """KIP-320 (Partition.readRecords): a consumer past the end of the epoch it last fetched
    from is told where that epoch ends; an epoch the leader never had is out of range."""
    with RawClient(shared_broker.port) as client:
        diverged = by_partition(
            client.request(FETCH, 12, fetch_body(three_big, [(0, 5)], last_fetched_epoch=0))
        )[0]
        assert diverged.error_code == 0
        assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (0, 1)
        assert (diverged.high_watermark, bytes(diverged.records)) == (1, b"")
        unknown = by_partition(
            client.request(FETCH, 12, fetch_body(three_big, [(0, 0)], last_fetched_epoch=3))
        )[0]
        assert unknown.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        fine = by_partition(
            client.request(FETCH, 12, fetch_body(three_big, [(0, 0)], last_fetched_epoch=0))
        )[0]
        assert (fine.error_code, fine.diverging_epoch.epoch) == (0, -1)
        assert len(bytes(fine.records)) > BIG_BATCH_BYTES
