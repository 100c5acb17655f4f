"""Produce answers held back to leave together (broker.net.connection, KafkaConnection._hold).

A Produce answered while the next request, a Produce too, has already arrived waits for
that one's answer, so both leave in one send (issue 19). Clients must see no difference but
timing: answers in request order, none lost before a close, nothing held while the broker
waits for more. Checked over a real socket on the answers and on the stored batches.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol import codec
from protocol.header import decode_response_header
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.primitives import Reader
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import (
    create_topic,
    cut_into_body,
    init_producer,
    produce_request,
    producing_to,
    stored,
)
from tests.support.raw_client import ConnectionClosed, RawClient

pytestmark = pytest.mark.e2e


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    # No validation workers: every Produce goes the connection's plain way, where answers
    # are held (pipelined requests join their answers on their own).
    with running(tmp_path / "data", {"minikafka.validation.workers": "0"}) as proc:
        yield proc


def _batch(producer: int, sequence: int, records: int = 3) -> bytes:
    return build_batch(
        [(None, b"v%d" % (sequence + i)) for i in range(records)],
        producer_id=producer,
        producer_epoch=0,
        base_sequence=sequence,
    )


def _answer(frame: bytes) -> tuple[int, int, int]:
    reader = Reader(frame)
    correlation_id = decode_response_header(reader, PRODUCE.response_header_version(9))
    body = codec.decode(PRODUCE.response, 9, True, reader)
    part = body.responses[0].partition_responses[0]
    return correlation_id, part.error_code, part.base_offset


def _frames(data: bytes) -> list[bytes]:
    frames = []
    pos = 0
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        if pos + 4 + size > len(data):
            break
        frames.append(data[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return frames


def _five_produces(client: RawClient, topic: str, first_id: int) -> list[bytes]:
    """Five framed Produce requests of 3 records each, one new producer's sequence."""
    create_topic(client, topic)
    producer = init_producer(client)
    return [
        client.encode(PRODUCE, 9, produce_request(topic, _batch(producer, i * 3)), first_id + i)
        for i in range(5)
    ]


def test_answers_of_produce_requests_sent_together_leave_together_in_order(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as client:
        client.send_raw(b"".join(_five_produces(client, "held", 10)))
        # The first read that returns anything: one send put all five answers in the
        # socket at once (answers sent one by one wake this read at the first).
        first = client.sock.recv(1 << 16)
        rest = b""
        while len(_frames(first + rest)) < 5:
            chunk = client.sock.recv(1 << 16)
            assert chunk, "closed before five answers"
            rest += chunk
        answers = [_answer(f) for f in _frames(first + rest)]
    assert answers == [(10 + i, 0, i * 3) for i in range(5)]
    assert len(_frames(first)) == 5, f"the first read held {len(_frames(first))} answers"
    batches = stored(broker.data_dir, "held")
    assert [(h.base_offset, h.base_sequence) for h, _ in batches] == [
        (i * 3, i * 3) for i in range(5)
    ]


def test_held_answers_still_leave_before_a_malformed_request_closes_the_connection(
    broker: BrokerProcess,
) -> None:
    """Kafka answers every request before the unreadable one, then closes."""
    with RawClient(broker.port) as client:
        requests = _five_produces(client, "held-bad", 20)
        requests[3] = cut_into_body(requests[3])
        client.send_raw(b"".join(requests))
        answers = []
        with pytest.raises(ConnectionClosed):
            while True:
                answers.append(_answer(client.read_frame()))
    assert answers == [(20, 0, 0), (21, 0, 3), (22, 0, 6)]
    batches = stored(broker.data_dir, "held-bad")
    assert [h.base_sequence for h, _ in batches] == [0, 3, 6]
    broker.wait_for_log("malformed Produce v9 request")


def test_an_acks_0_produce_and_other_requests_between_keep_the_order(
    broker: BrokerProcess,
) -> None:
    with producing_to(broker.port, "held-mixed") as (client, producer):
        sends = [
            client.encode(PRODUCE, 9, produce_request("held-mixed", _batch(producer, 0)), 30),
            client.encode(
                PRODUCE, 9, produce_request("held-mixed", _batch(producer, 3), acks=0), 31
            ),
            client.encode(PRODUCE, 9, produce_request("held-mixed", _batch(producer, 6)), 32),
            client.encode(METADATA, 12, Message(topics=None), 33),
            client.encode(PRODUCE, 9, produce_request("held-mixed", _batch(producer, 9)), 34),
        ]
        client.send_raw(b"".join(sends))
        got = []
        for _ in range(4):
            frame = client.read_frame()
            (correlation_id,) = struct.unpack_from(">i", frame, 0)
            got.append(correlation_id)
    # acks=0 has no answer; the rest in request order.
    assert got == [30, 32, 33, 34]
    batches = stored(broker.data_dir, "held-mixed")
    assert [h.base_sequence for h, _ in batches] == [0, 3, 6, 9]


def test_a_lone_produce_is_answered_without_waiting_for_more(broker: BrokerProcess) -> None:
    """A client with one request in flight gets its answer at once: nothing is held while
    the broker waits for the next request (half of one is here; the rest never comes)."""
    with producing_to(broker.port, "held-lone") as (client, producer):
        first = client.encode(PRODUCE, 9, produce_request("held-lone", _batch(producer, 0)), 40)
        second = client.encode(PRODUCE, 9, produce_request("held-lone", _batch(producer, 3)), 41)
        client.send_raw(first + second[: len(second) // 2])
        client.sock.settimeout(10)
        try:
            assert _answer(client.read_frame()) == (40, 0, 0)
        except TimeoutError:
            pytest.fail("the answer was held back for a request that never completed")
