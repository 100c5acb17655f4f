"""A Produce naming one partition takes a shorter path through the handler (``_alone``);
its answers and what it stores must be the general path's, case by case (issue 19).

Each case goes twice to a real broker over a real socket: alone to a partition of topic
"one-*" (the short path), and to the same partition of a twin topic "two-*" in a request
that also names a partition of a topic that does not exist (the general path). The twin's
answer for its partition and the batches both partitions stored must match. A spy on
``_alone`` shows which requests the short path answered itself.
"""

from __future__ import annotations

import asyncio
import random
import re
import struct
import time
from dataclasses import replace
from typing import Any

import pytest

import minikafka
from broker.handlers import produce as produce_handler
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.produce import PRODUCE
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.polling import until_sync
from tests.support.produce import create_topics_request, init_producer, stored
from tests.support.raw_client import RawClient

# The answers' fields compared between the paths, with record_errors (log_append_time_ms
# apart: a LogAppendTime topic answers the broker's clock, compared separately).
FIELDS = ("index", "error_code", "base_offset", "log_start_offset", "error_message")

TOPIC_CONFIGS: dict[str, dict[str, str]] = {
    "plain": {},
    "compact": {"cleanup.policy": "compact"},
    "append-time": {"message.timestamp.type": "LogAppendTime"},
    "recent-only": {"message.timestamp.before.max.ms": "60000"},
    "small": {"max.message.bytes": "200"},
}


@pytest.fixture
def alone_calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Per call of ``_alone``: whether it answered (True) or sent the request on (False)."""
    calls: list[bool] = []
    original = produce_handler._alone

    def spy(*args: Any) -> Any:
        result = original(*args)
        calls.append(result is not None)
        return result

    monkeypatch.setattr(produce_handler, "_alone", spy)
    return calls


def _cases(producer_id: int) -> list[tuple[str, bytes | None, int]]:
    """(name, records, partition index) in the order they are sent."""

    def idempotent(seq: int, count: int = 2, **kw: Any) -> bytes:
        records = [(f"k{seq + i}".encode(), f"v{seq + i}".encode()) for i in range(count)]
        return build_batch(
            records, producer_id=producer_id, producer_epoch=0, base_sequence=seq, **kw
        )

    good = idempotent(0)
    corrupt = bytearray(idempotent(4))
    corrupt[-1] ^= 0xFF  # the CRC no longer matches
    moved = bytearray(idempotent(4))
    struct.pack_into(">q", moved, 0, 9)  # base offset 9: clients must send 0
    an_hour_ago = int(time.time() * 1000) - 3_600_000
    return [
        ("first", good, 0),
        ("duplicate", good, 0),
        ("gap in sequence", idempotent(10), 0),
        ("next", idempotent(2), 0),
        ("bad crc", bytes(corrupt), 0),
        ("base offset not 0", bytes(moved), 0),
        ("not a batch", b"\x00" * 10, 0),
        ("null records", None, 0),
        ("unknown partition", idempotent(4), 7),
        ("no producer id", build_batch([(b"k", b"plain")]), 0),
        ("null key", build_batch([(None, b"no key")]), 0),
        ("an hour old", build_batch([(b"k", b"old")], base_timestamp=an_hour_ago), 0),
        ("large", build_batch([(b"k", b"x" * 400)]), 0),
        ("transactional, no id", idempotent(4, transactional=True), 0),
        (
            "fenced epoch",
            build_batch([(b"k", b"e")], producer_id=producer_id, producer_epoch=3, base_sequence=7),
            0,
        ),
        ("after the errors", idempotent(4), 0),
    ]


def _request(parts: list[tuple[str, bytes | None, int]]) -> Message:
    return Message(
        transactional_id=None,
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            Message(name=name, partition_data=[Message(index=index, records=data)])
            for name, data, index in parts
        ],
    )


def _send_both(port: int, kind: str, configs: dict[str, str]) -> list[tuple[str, Any, Any]]:
    with RawClient(port) as client:
        for prefix in ("one", "two"):
            request = create_topics_request(f"{prefix}-{kind}", 1)
            request.topics[0].configs = [Message(name=k, value=v) for k, v in configs.items()]
            answer = client.request(CREATE_TOPICS, 7, request)
            assert answer.topics[0].error_code == 0, answer
        # One producer for both: its state is kept per partition, so each partition sees
        # the same sequence of batches, byte for byte.
        producer = init_producer(client)
        answers = []
        for name, data, index in _cases(producer):
            alone = client.request(PRODUCE, 9, _request([(f"one-{kind}", data, index)]))
            general = client.request(
                PRODUCE, 9, _request([(f"two-{kind}", data, index), ("absent", data, 0)])
            )
            answers.append((name, alone.responses[0].partition_responses[0], general.responses[0]))
        return answers


def _unnamed(answer: Message, topic: str) -> str:
    fields = {f: answer.get(f) for f in FIELDS}
    fields["record_errors"] = [e.to_dict() for e in answer.record_errors]
    # INVALID_TIMESTAMP's message quotes the broker's clock, a millisecond apart or so.
    return re.sub(r"\d{13}", "<ms>", repr(fields).replace(topic, "<topic>"))


@pytest.mark.parametrize("kind", sorted(TOPIC_CONFIGS))
def test_one_partition_answers_and_stores_as_the_general_path(
    kind: str, alone_calls: list[bool]
) -> None:
    async def scenario() -> tuple[list[tuple[str, Any, Any]], list[Any], list[Any]]:
        async with minikafka.Broker() as broker:
            assert broker.data_dir is not None
            answers = await asyncio.to_thread(_send_both, broker.port, kind, TOPIC_CONFIGS[kind])
            return (
                answers,
                stored(broker.data_dir, f"one-{kind}"),
                stored(broker.data_dir, f"two-{kind}"),
            )

    answers, one_log, two_log = asyncio.run(scenario())
    errors = {}
    for name, alone, general in answers:
        assert general.name == f"two-{kind}"
        twin = general.partition_responses[0]
        # Messages name the topic: compared with the names taken out (and the clock).
        assert _unnamed(alone, f"one-{kind}") == _unnamed(twin, f"two-{kind}"), name
        assert (alone.log_append_time_ms == -1) == (twin.log_append_time_ms == -1), name
        errors[name] = alone.error_code
    # The cases do what their names say (so the comparison covers those paths).
    assert errors["first"] == errors["duplicate"] == errors["next"] == 0
    assert errors["gap in sequence"] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert errors["bad crc"] == 2  # CORRUPT_MESSAGE
    assert errors["base offset not 0"] == errors["not a batch"] == 87  # INVALID_RECORD
    assert errors["null records"] == 87
    assert errors["unknown partition"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    assert errors["transactional, no id"] == 53  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert errors["fenced epoch"] != 0
    assert errors["null key"] == (87 if kind == "compact" else 0)
    assert errors["an hour old"] == (32 if kind == "recent-only" else 0)  # INVALID_TIMESTAMP
    assert errors["large"] == (10 if kind == "small" else 0)  # MESSAGE_TOO_LARGE
    assert errors["after the errors"] == 0

    # Every request of the "one" topics went to _alone; it answered all but the
    # transactional batch (sent on to the general path, which answers it).
    assert [name for (name, _, _), took in zip(answers, alone_calls, strict=True) if not took] == [
        "transactional, no id"
    ]

    # Stored alike: same batches at the same offsets, byte for byte (LogAppendTime topics
    # apart from the timestamps the broker wrote).
    assert len(one_log) == len(two_log) == sum(1 for e in errors.values() if e == 0) - 1
    assert one_log, "nothing stored"
    if kind == "append-time":
        # The broker's clock in max_timestamp (and so in the CRC) may differ between the two;
        # the rest of the header and the records section (from byte 61) may not.
        def timeless(log: list[Any]) -> list[Any]:
            return [(replace(h, crc=0, max_timestamp=0), b[61:]) for h, b in log]

        assert timeless(one_log) == timeless(two_log)
    else:
        assert one_log == two_log


def test_a_lone_request_appends_after_an_earlier_one_still_being_checked(
    alone_calls: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier request holds its turn on the partition while a worker thread checks its
    (compressed) batch; a 1-record request from another connection, which the short path
    could append at once, must append after it (arrival order, as Kafka's log lock)."""
    gate: dict[str, Any] = {}
    real_run = produce_handler.offload.run

    class HeldOffload:
        @staticmethod
        async def run(fn: Any, *args: Any) -> Any:
            await gate["open"].wait()
            return await real_run(fn, *args)

    monkeypatch.setattr(produce_handler, "offload", HeldOffload)

    def clients(port: int, loop: asyncio.AbstractEventLoop) -> tuple[Any, Any]:
        with RawClient(port) as first, RawClient(port) as second:
            request = create_topics_request("ordered", 1)
            assert first.request(CREATE_TOPICS, 7, request).topics[0].error_code == 0
            noise = random.Random(19)
            # gzip, still 1 KiB or more once compressed: checked on a worker thread.
            big = build_batch([(b"k", noise.randbytes(2048)) for _ in range(4)], codec=1)
            first.send(PRODUCE, 9, _request([("ordered", big, 0)]))
            assert until_sync(lambda: len(alone_calls) == 1)  # being checked on the (held) thread
            second.send(PRODUCE, 9, _request([("ordered", build_batch([(b"k", b"v")]), 0)]))
            assert until_sync(lambda: len(alone_calls) == 2)
            loop.call_soon_threadsafe(gate["open"].set)
            return first.receive()[1], second.receive()[1]

    async def scenario() -> tuple[Any, Any, list[Any]]:
        gate["open"] = asyncio.Event()
        async with minikafka.Broker(minikafka_validation_workers=0) as broker:
            assert broker.data_dir is not None
            a, b = await asyncio.to_thread(clients, broker.port, asyncio.get_running_loop())
            return a, b, stored(broker.data_dir, "ordered")

    first, second, log = asyncio.run(scenario())
    assert alone_calls == [False, False]  # both sent on: the second found the turn taken
    assert first.responses[0].partition_responses[0].base_offset == 0
    assert second.responses[0].partition_responses[0].base_offset == 4
    assert [(h.base_offset, h.records_count, h.compression) for h, _ in log] == [
        (0, 4, 1),
        (4, 1, 0),
    ]
