"""The recording proxy's framing and pairing, against a scripted upstream instead of Kafka."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from protocol import codec
from protocol.header import RequestHeader, encode_request_header
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.schema import Api
from tests.oracle.record import Recorder, jsonable

# The upstream cuts its answer to this correlation id short and closes the connection.
CUT_SHORT = 99
# ... and never answers this one (the client leaves first).
UNANSWERED = 5


def frame(api: Api, version: int, corr: int, body: Any, client_id: str | None = "c") -> bytes:
    out = bytearray()
    encode_request_header(
        out, RequestHeader(api.key, version, corr, client_id), api.request_header_version(version)
    )
    out += codec.encode_request(api, version, body)
    return struct.pack(">i", len(out)) + bytes(out)


PRODUCE_BODY = {"transactional_id": None, "timeout_ms": 1000, "topic_data": []}
METADATA_BODY = {"topics": [], "allow_auto_topic_creation": False}


async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers each request with its correlation id and a fixed body, in order; acks=0
    Produce gets nothing."""
    try:
        while True:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            request = await reader.readexactly(size)
            api_key, _version, corr = struct.unpack_from(">hhi", request)
            if api_key == PRODUCE.key and b"\x00\x00\x00\x00\x03\xe8" in request[-12:]:
                continue  # acks=0 (0x0000 then timeout 1000)
            if corr == UNANSWERED:
                continue
            body = struct.pack(">i", corr) + b"answer-%d" % corr
            if corr == CUT_SHORT:
                writer.write(struct.pack(">i", len(body)) + body[:6])
                await writer.drain()
                writer.close()
                return
            writer.write(struct.pack(">i", len(body)) + body)
            await writer.drain()
    except asyncio.IncompleteReadError:
        writer.close()


async def read_answers(reader: asyncio.StreamReader, count: int) -> list[int]:
    got = []
    for _ in range(count):
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        got.append(struct.unpack_from(">i", await reader.readexactly(size))[0])
    return got


async def scenario() -> tuple[Recorder, list[int], bytes]:
    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    recorder = Recorder(("127.0.0.1", server.sockets[0].getsockname()[1]))
    port = await recorder.start()
    recorder.begin()
    # Connection 1: pipelined requests, an acks=0 Produce among them, closed by the client.
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        frame(API_VERSIONS, 3, 1, {"client_software_name": "t", "client_software_version": "1"})
        + frame(METADATA, 12, 2, METADATA_BODY)
        + frame(PRODUCE, 9, 3, {**PRODUCE_BODY, "acks": 0})
        + frame(PRODUCE, 3, 4, {**PRODUCE_BODY, "acks": 1}, client_id=None)
    )
    await writer.drain()
    answers = await read_answers(reader, 3)
    # An answer still due when the client leaves.
    writer.write(frame(METADATA, 12, UNANSWERED, METADATA_BODY))
    await writer.drain()
    writer.close()
    # Connection 2: the server closes in the middle of its answer.
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        frame(METADATA, 12, 7, METADATA_BODY) + frame(METADATA, 12, CUT_SHORT, METADATA_BODY)
    )
    await writer.drain()
    answers += await read_answers(reader, 1)
    tail = await reader.read(100)
    writer.close()
    for _ in range(100):
        if all(c.closed_by for c in recorder.connections):
            break
        await asyncio.sleep(0.01)
    await recorder.stop()
    server.close()
    return recorder, answers, tail


def test_pipelined_requests_acks0_and_a_server_closing_mid_answer() -> None:
    recorder, answers, tail = asyncio.run(scenario())
    assert recorder.errors == []
    # The client got every answer, in order, and the server's cut-short bytes as they were.
    assert answers == [1, 2, 4, 7]
    assert tail == struct.pack(">ii", 4 + len(b"answer-99"), CUT_SHORT) + b"an"
    lines = [e.to_json() for e in recorder.exchanges()]
    summary = [
        (
            e["n"],
            e["conn"],
            e["seq"],
            e["api_key"],
            e["correlation_id"],
            e["client_id"],
            e["response"] is not None,
            e["no_response"],
            e["server_closed_after"],
        )
        for e in lines
    ]
    assert summary == [
        (1, 1, 1, 18, 1, "c", True, None, False),
        (2, 1, 2, 3, 2, "c", True, None, False),
        (3, 1, 3, 0, 3, "c", False, "acks0", False),
        (4, 1, 4, 0, 4, None, True, None, False),
        (5, 1, 5, 3, 5, "c", False, "client_closed", False),
        (6, 2, 1, 3, 7, "c", True, None, False),
        (7, 2, 2, 3, CUT_SHORT, "c", False, "server_closed", True),
    ]
    # Each answer is paired with its own request, times run forward.
    assert bytes.fromhex(lines[3]["response"]) == struct.pack(">i", 4) + b"answer-4"
    assert all(e["t_request_ms"] <= (e["t_response_ms"] or 1e9) for e in lines)
    assert [(c.conn, c.closed_by) for c in recorder.connections] == [(1, "client"), (2, "server")]
    assert "response_correlation_id" not in lines[0]


def test_observed_values_become_json() -> None:
    assert jsonable({"k": (b"v", b"\xff", None, [1, 2.5]), 3: {"x": True}}) == {
        "k": ["v", "0xff", None, [1, 2.5]],
        "3": {"x": True},
    }
