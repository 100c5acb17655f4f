"""Which Produce requests a connection pipelines (broker.net.connection, ``_pipelinable``).

Pipelining pays only when the batch checks run in a validation worker process while the
loop appends earlier requests; for batches checked on the loop it only adds a task, a
future and a wake-up per request (issue 19: about 20% more broker CPU per 64 x 1 KiB
Produce). So a connection pipelines only while its last Produce went to a worker. Checked
with a real socket against a broker on this loop, on the answers and on the stored batches.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import minikafka
from broker.net.connection import KafkaConnection
from protocol import codec
from protocol.header import decode_response_header
from protocol.messages.produce import PRODUCE
from protocol.primitives import Reader
from tests.support.produce import batch, create_topic, init_producer, produce_request, stored
from tests.support.raw_client import RawClient


def _send_together(port: int, topic: str, count: int, records: int) -> list[tuple[int, int, int]]:
    """``count`` Produce requests of ``records`` records sent in one write; the answers."""
    with RawClient(port) as client:
        create_topic(client, topic)
        producer = init_producer(client)
        frames = [
            client.encode(
                PRODUCE,
                9,
                produce_request(topic, batch(producer, 0, i * records, count=records)),
                100 + i,
            )
            for i in range(count)
        ]
        client.send_raw(b"".join(frames))
        answers = []
        for _ in range(count):
            reader = Reader(client.read_frame())
            correlation_id = decode_response_header(reader, PRODUCE.response_header_version(9))
            part = codec.decode(PRODUCE.response, 9, True, reader).responses[0]
            answer = part.partition_responses[0]
            answers.append((correlation_id, answer.error_code, answer.base_offset))
        return answers


def test_a_connection_pipelines_only_produce_requests_whose_checks_go_to_a_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipelined: list[int] = []
    original = KafkaConnection._pipelined

    async def counting(self: KafkaConnection, *args: Any, **kwargs: Any) -> Any:
        pipelined.append(1)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(KafkaConnection, "_pipelined", counting)

    async def scenario() -> tuple[Any, ...]:
        async with minikafka.Broker(
            minikafka_validation_workers=1,
            minikafka_validation_workers_eager=True,
            minikafka_validation_worker_min_records=32,
        ) as broker:
            assert broker.data_dir is not None
            small = await asyncio.to_thread(_send_together, broker.port, "small", 6, 3)
            after_small = len(pipelined)
            big = await asyncio.to_thread(_send_together, broker.port, "big", 6, 64)
            return (
                small,
                after_small,
                big,
                len(pipelined),
                stored(broker.data_dir, "small"),
                stored(broker.data_dir, "big"),
            )

    small, after_small, big, after_big, small_log, big_log = asyncio.run(scenario())
    assert small == [(100 + i, 0, i * 3) for i in range(6)]
    assert big == [(100 + i, 0, i * 64) for i in range(6)]
    # 3-record batches are checked on the loop: none of the six was pipelined.
    assert after_small == 0
    # 64 records reach the worker threshold: the first goes the plain way (nothing known of
    # the producer yet), the ones behind it are pipelined.
    assert after_big - after_small >= 1
    assert [h.base_offset for h, _ in small_log] == [i * 3 for i in range(6)]
    assert [h.base_sequence for h, _ in big_log] == [i * 64 for i in range(6)]
