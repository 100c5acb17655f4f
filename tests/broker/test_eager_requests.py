"""Requests handled in the read callback (broker.net.eager_start, ``_start_eagerly``).

A request that arrives alone while the connection's worker task waits for one, after
LONE_BEFORE_EAGER others that did, is handled at once where it was read: a client with one
request in flight costs no wake-up of the worker task and no second pass of the event loop
(issue 19). A client with several in flight is left to the worker task, whose later start
lets more of its requests be read first and their answers leave together. One that has to
wait (a long-polling Fetch) is finished by the worker task, one answered with file parts is
written by it, and a connection that goes away meanwhile leaves nothing behind. Real
sockets against a broker on this loop; answers checked against what the broker stored.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from typing import Any

import pytest

import minikafka
from broker.fetch import zero_copy
from broker.net import eager_start
from broker.net.connection import KafkaConnection
from protocol import codec
from protocol.header import decode_response_header
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.fetch import FETCH
from protocol.messages.produce import PRODUCE
from protocol.primitives import Reader
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.polling import until
from tests.support.produce import (
    batch,
    create_topic,
    fetch_request,
    init_producer,
    produce,
    produce_request,
    stored,
)
from tests.support.raw_client import RawClient

# The API keys of the requests started in the read callback, in order.
keys: list[int] = []


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many requests were started in the read callback, and how many of those the
    worker task had to go on with."""
    counts = {"eager": 0, "continued": 0, "handed_over": 0}
    keys.clear()
    start = KafkaConnection._start_eagerly
    resume_init = eager_start.Resume.__init__
    answered_init = eager_start.Answered.__init__

    def counting_start(self: KafkaConnection) -> None:
        counts["eager"] += 1
        keys.append(self._frames[0][0][1])
        start(self)

    def counting_resume(self: Any, *args: Any) -> None:
        counts["continued"] += 1
        resume_init(self, *args)

    def counting_answered(self: Any, *args: Any) -> None:
        counts["handed_over"] += 1
        answered_init(self, *args)

    monkeypatch.setattr(KafkaConnection, "_start_eagerly", counting_start)
    monkeypatch.setattr(eager_start.Answered, "__init__", counting_answered)
    monkeypatch.setattr(eager_start.Resume, "__init__", counting_resume)
    return counts


def _state(broker: minikafka.Broker) -> Any:
    assert broker._host is not None and broker._host.broker is not None
    return broker._host.broker.state


def test_requests_one_at_a_time_are_handled_where_they_are_read(counted: dict[str, int]) -> None:
    def produce_one_by_one(port: int) -> list[tuple[int, int]]:
        with RawClient(port) as client:
            create_topic(client, "seq")
            producer = init_producer(client)
            answers = []
            for i in range(20):
                answer = produce(client, "seq", batch(producer, 0, i * 2))
                answers.append((answer.error_code, answer.base_offset))
            return answers

    async def scenario() -> tuple[list[tuple[int, int]], int, list[Any], int]:
        async with minikafka.Broker() as broker:
            assert broker.data_dir is not None
            before = counted["eager"]
            answers = await asyncio.to_thread(produce_one_by_one, broker.port)
            eager = counted["eager"] - before
            state = _state(broker)
            await until(lambda: not state.connections)
            return (
                answers,
                eager,
                stored(broker.data_dir, "seq"),
                state.request_budget.queued_requests,
            )

    answers, eager, log, queued = asyncio.run(scenario())
    assert answers == [(0, i * 2) for i in range(20)]
    # Metadata (twice: the first one creates the topic), InitProducerId and the 20 Produce
    # requests each came alone: from the third on, they were handled where they were read.
    assert eager_start.LONE_BEFORE_EAGER == 2
    assert keys == [22] + [0] * 20
    assert eager == 21
    assert counted["continued"] == 0
    assert [(h.base_offset, h.base_sequence, h.records_count) for h, _ in log] == [
        (i * 2, i * 2, 2) for i in range(20)
    ]
    assert queued == 0


def _decode(frame: bytes, api: Any, version: int) -> tuple[int, Any]:
    reader = Reader(frame)
    correlation_id = decode_response_header(reader, api.response_header_version(version))
    return correlation_id, codec.decode(api.response, version, api.is_flexible(version), reader)


def test_a_request_that_waits_is_finished_by_the_worker_in_order(counted: dict[str, int]) -> None:
    """A long-polling Fetch started in the read callback waits for an append; an
    ApiVersions sent behind it on the same connection is answered after it."""

    def scenario_sync(port: int) -> tuple[Any, Any, list[int]]:
        with RawClient(port) as setup:
            create_topic(setup, "wait")
        with RawClient(port) as waiting, RawClient(port) as writer:
            _one_at_a_time(waiting)
            fetch = fetch_request("wait", 0, max_wait_ms=20_000, min_bytes=1)
            frames = waiting.encode(FETCH, 12, fetch, 7)
            waiting.send_raw(frames)
            # The fetch is parked before the ApiVersions arrives (else both would come in
            # one read and neither be started in the callback).
            deadline = time.monotonic() + 10
            while counted["continued"] == 0 and time.monotonic() < deadline:
                time.sleep(0.005)
            waiting.send_raw(waiting.encode(API_VERSIONS, 3, _api_versions_body(), 8))
            producer = init_producer(writer)
            answer = produce(writer, "wait", batch(producer, 0, 0, count=3))
            assert answer.error_code == 0
            first = _decode(waiting.read_frame(), FETCH, 12)
            second = _decode(waiting.read_frame(), API_VERSIONS, 3)
            return first, second, [counted["eager"], counted["continued"]]

    async def scenario() -> tuple[Any, Any, list[int], list[Any]]:
        async with minikafka.Broker() as broker:
            assert broker.data_dir is not None
            first, second, counts = await asyncio.to_thread(scenario_sync, broker.port)
            return first, second, counts, stored(broker.data_dir, "wait")

    (fetch_id, fetched), (versions_id, versions), (eager, continued), log = asyncio.run(scenario())
    assert continued == 1
    assert eager >= 3
    assert (fetch_id, versions_id) == (7, 8)
    assert versions.error_code == 0
    part = fetched.responses[0].partitions[0]
    assert part.error_code == 0 and part.high_watermark == 3
    assert len(log) == 1
    header, body = log[0]
    assert bytes(part.records) == body
    assert header.records_count == 3


def _one_at_a_time(client: RawClient) -> None:
    """Requests one at a time, enough for the next one to be started in the read callback."""
    for _ in range(eager_start.LONE_BEFORE_EAGER + 1):
        assert client.request(API_VERSIONS, 3, _api_versions_body()).error_code == 0


def _api_versions_body() -> Message:
    return Message(client_software_name="eager-test", client_software_version="1")


def test_an_answer_with_file_parts_is_written_by_the_worker(counted: dict[str, int]) -> None:
    """A Fetch of more than SENDFILE_MIN_BYTES answered in the read callback: its file
    part goes out through the worker task's sendfile, byte for byte what was stored."""

    def scenario_sync(port: int) -> Any:
        with RawClient(port) as client:
            create_topic(client, "big")
            records = [(None, bytes([i % 251]) * 1000) for i in range(200)]
            answer = produce(client, "big", build_batch(records))
            assert answer.error_code == 0
            return client.request(FETCH, 12, fetch_request("big", 0, min_bytes=0))

    async def scenario() -> tuple[Any, list[Any]]:
        async with minikafka.Broker() as broker:
            assert broker.data_dir is not None
            fetched = await asyncio.to_thread(scenario_sync, broker.port)
            return fetched, stored(broker.data_dir, "big")

    fetched, log = asyncio.run(scenario())
    part = fetched.responses[0].partitions[0]
    assert part.error_code == 0
    assert len(bytes(part.records)) >= zero_copy.SENDFILE_MIN_BYTES
    assert bytes(part.records) == b"".join(body for _, body in log)
    # Answered in the read callback; written by the worker task.
    assert counted["handed_over"] == 1
    assert counted["continued"] == 0


def test_a_connection_reset_while_its_request_waits_leaves_nothing_behind(
    counted: dict[str, int],
) -> None:
    def open_and_reset(port: int) -> None:
        with RawClient(port) as setup:
            create_topic(setup, "gone")
        client = RawClient(port)
        _one_at_a_time(client)
        client.send_raw(
            client.encode(FETCH, 12, fetch_request("gone", 0, max_wait_ms=30_000, min_bytes=1), 1)
        )
        sock = client.sock
        deadline = time.monotonic() + 10
        while counted["continued"] == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        # SO_LINGER 0: the close sends an RST.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()

    async def scenario() -> tuple[bool, int, int]:
        async with minikafka.Broker() as broker:
            state = _state(broker)
            await asyncio.to_thread(open_and_reset, broker.port)
            gone = await until(
                lambda: not state.connections and not state.fetch_purgatory.watched()
            )
            return gone, state.request_budget.queued_requests, state.frame_buffers.scratch_out

    gone, queued, scratch_out = asyncio.run(scenario())
    assert counted["continued"] == 1
    assert gone
    assert queued == 0
    assert scratch_out == 0


def test_a_client_with_several_requests_in_flight_is_left_to_the_worker(
    counted: dict[str, int],
) -> None:
    """One at a time first (started in the read callback), then six Produce requests in one
    write: none of those is, and all six are answered in order and stored in order."""

    def burst(port: int) -> tuple[list[int], list[tuple[int, int]]]:
        with RawClient(port) as client:
            create_topic(client, "burst")
            producer = init_producer(client)
            _one_at_a_time(client)
            before = len(keys)
            frames = [
                client.encode(
                    PRODUCE, 9, produce_request("burst", batch(producer, 0, i * 2)), 50 + i
                )
                for i in range(6)
            ]
            client.send_raw(b"".join(frames))
            answers = []
            for _ in range(6):
                correlation_id, answer = _decode(client.read_frame(), PRODUCE, 9)
                part = answer.responses[0].partition_responses[0]
                answers.append((correlation_id, part.base_offset))
            return keys[before:], answers

    async def scenario() -> tuple[list[int], list[tuple[int, int]], list[Any]]:
        async with minikafka.Broker() as broker:
            assert broker.data_dir is not None
            started, answers = await asyncio.to_thread(burst, broker.port)
            return started, answers, stored(broker.data_dir, "burst")

    started, answers, log = asyncio.run(scenario())
    assert counted["eager"] >= 2  # the requests before the burst
    assert started == []
    assert answers == [(50 + i, i * 2) for i in range(6)]
    assert [h.base_offset for h, _ in log] == [i * 2 for i in range(6)]
