"""The seed scenarios (seed 001) and the §5 epoch rules, over a real socket, checked on disk."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from protocol.errors import ErrorCode
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_topic, init_producer, produce, stored
from tests.support.raw_client import RawClient

OUT_OF_ORDER = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
PER_BATCH = 2


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(broker.port) as c:
        create_topic(c, "seed")
        yield c


def stored_sequences(broker: BrokerProcess, topic: str = "seed") -> list[tuple[int, int, int]]:
    """(base_offset, base_sequence, records_count) of each stored batch, in log order."""
    return [
        (h.base_offset, h.base_sequence, h.records_count) for h, _ in stored(broker.data_dir, topic)
    ]


def test_success_five_batches_get_contiguous_offsets(
    broker: BrokerProcess, client: RawClient
) -> None:
    pid = init_producer(client)
    answers = [produce(client, "seed", batch(pid, 0, i * PER_BATCH)) for i in range(5)]
    assert [a.error_code for a in answers] == [0] * 5
    assert [a.base_offset for a in answers] == [0, 2, 4, 6, 8]
    assert stored_sequences(broker) == [(i * 2, i * 2, 2) for i in range(5)]
    assert all(h.producer_id == pid for h, _ in stored(broker.data_dir, "seed"))


def test_lost_acks_resend_is_deduplicated_with_original_offsets(
    broker: BrokerProcess, client: RawClient
) -> None:
    pid = init_producer(client)
    batches = [batch(pid, 0, i * PER_BATCH) for i in range(5)]
    first = [produce(client, "seed", b) for b in batches]
    # The ACKs of batches 4 and 5 were "lost": the producer resends both.
    again = [produce(client, "seed", b) for b in batches[3:]]
    assert [a.error_code for a in again] == [0, 0]
    assert [a.base_offset for a in again] == [first[3].base_offset, first[4].base_offset]
    assert [a.log_start_offset for a in again] == [0, 0]
    # A new append on a CreateTime topic reports no append time; a duplicate reports the
    # cached batch's timestamp, as Kafka does.
    assert [a.log_append_time_ms for a in first] == [-1] * 5
    kept = stored(broker.data_dir, "seed")
    assert [a.log_append_time_ms for a in again] == [h.max_timestamp for h, _ in kept[3:]]
    assert stored_sequences(broker) == [(i * 2, i * 2, 2) for i in range(5)]


def test_lost_batch_in_the_middle_gets_out_of_order_then_resent_in_order(
    broker: BrokerProcess, client: RawClient
) -> None:
    pid = init_producer(client)
    b1, b2, b3 = (batch(pid, 0, i * PER_BATCH) for i in range(3))
    assert produce(client, "seed", b1).error_code == 0
    # b2 never arrived; b3 is out of order and nothing of it is stored.
    assert produce(client, "seed", b3).error_code == OUT_OF_ORDER
    assert stored_sequences(broker) == [(0, 0, 2)]
    assert [produce(client, "seed", b).base_offset for b in (b2, b3)] == [2, 4]
    assert stored_sequences(broker) == [(0, 0, 2), (2, 2, 2), (4, 4, 2)]


def test_six_in_flight_oldest_resent_is_refused_not_stored_twice(
    broker: BrokerProcess, client: RawClient
) -> None:
    pid = init_producer(client)
    batches = [batch(pid, 0, i * PER_BATCH) for i in range(6)]
    for b in batches:
        assert produce(client, "seed", b).error_code == 0
    # Only the last five batches are cached: the oldest is no longer recognised.
    assert produce(client, "seed", batches[0]).error_code == OUT_OF_ORDER
    # Each of the five cached ones is still answered with its original offset.
    for i in range(1, 6):
        answer = produce(client, "seed", batches[i])
        assert (answer.error_code, answer.base_offset) == (0, i * 2)
    assert stored_sequences(broker) == [(i * 2, i * 2, 2) for i in range(6)]


def test_epoch_rules_over_the_wire(broker: BrokerProcess, client: RawClient) -> None:
    pid = init_producer(client)
    assert produce(client, "seed", batch(pid, 3, 0)).error_code == 0
    # Lower epoch: fenced.
    assert produce(client, "seed", batch(pid, 2, 2)).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    # Higher epoch must restart at sequence 0.
    assert produce(client, "seed", batch(pid, 4, 2)).error_code == OUT_OF_ORDER
    assert produce(client, "seed", batch(pid, 4, 0)).error_code == 0
    # A producer unknown on this partition may start at any sequence (KIP-360).
    other = init_producer(client)
    assert produce(client, "seed", batch(other, 0, 1000)).error_code == 0
    assert stored_sequences(broker) == [(0, 0, 2), (2, 0, 2), (4, 1000, 2)]


def test_sequence_wraps_after_int32_max(broker: BrokerProcess, client: RawClient) -> None:
    pid = init_producer(client)
    top = 2**31 - 1
    assert produce(client, "seed", batch(pid, 0, top - 1, count=2)).error_code == 0
    assert produce(client, "seed", batch(pid, 0, 0, count=2)).error_code == 0
    assert produce(client, "seed", batch(pid, 0, 0, count=2)).base_offset == 2
    assert stored_sequences(broker) == [(0, top - 1, 2), (2, 0, 2)]
