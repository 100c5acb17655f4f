"""`python -m bench.floor`: what any asyncio broker in Python could take on this machine.

The floor server frames the ingest workload's Produce requests, writes each one to a file
(pwrite, as a segment append does) and answers a fixed Produce response (correlation id
and base offset patched in): no decoding, no checks, no index, no producer state. Its
MB/s is the ceiling for `bench --ingest` here: whatever minikafka does per request on top
of that is the price of being a broker. Same client, same frames as bench.ingest (built
against a real minikafka broker, so the idempotent producer id is real).
Writes bench/results/ingest-floor.md.

With ``--check`` the server also runs the checks Kafka requires of every batch
(storage.batch_checks.check_batch: CRC, the record walk, LogValidator's rules and
rewrites, the same function the broker calls) and writes the checked batch instead of the
frame: the ceiling of any Python broker that validates records on its event loop here.
Writes bench/results/ingest-floor-check.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import ingest
from bench.process import BenchBroker, free_port, wait_accepting
from protocol import codec
from protocol.errors import ErrorCode
from protocol.header import decode_request_header, encode_response_header
from protocol.messages.produce import PRODUCE
from protocol.primitives import Reader
from protocol.schema import Message
from storage.batch_checks import BatchJob, check_batch
from storage.record_rules import TopicRules

RESULTS = Path(__file__).parent / "results"
VERSION = ingest.PRODUCE_VERSION


def _answer(base_offset: int) -> bytes:
    head = bytearray(4)
    encode_response_header(head, 0, PRODUCE.response_header_version(VERSION))
    part = Message(
        index=0,
        error_code=0,
        base_offset=base_offset,
        log_append_time_ms=-1,
        log_start_offset=0,
        record_errors=[],
        error_message=None,
    )
    body = codec.encode_response(
        PRODUCE,
        VERSION,
        Message(responses=[Message(name="t", partition_responses=[part])], throttle_time_ms=0),
    )
    frame = bytearray(head + bytes(body))
    struct.pack_into(">i", frame, 0, len(frame) - 4)
    return bytes(frame)


class _Log:
    """The one file every connection appends to (a segment: new pages, never rewritten)."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.size = 0

    def append(self, frame: memoryview) -> None:
        os.pwrite(self.fd, frame, self.size)
        self.size += len(frame)


def _records_place(frame: memoryview) -> tuple[int, int]:
    """Where the first frame's record batch sits (every frame of the workload has the same
    shape: one client id, one topic, one partition, batches of one size)."""
    reader = Reader(frame)
    header = decode_request_header(reader, PRODUCE.request_header_version(VERSION))
    assert (header.api_key, header.api_version) == (PRODUCE.key, VERSION), header
    body = codec.decode(PRODUCE.request, VERSION, True, reader)
    records = bytes(body.topic_data[0].partition_data[0].records)
    start = bytes(frame).index(records)
    return start, start + len(records)


_RULES = TopicRules("floor-0", False, False, 2**62, 2**62)
_MAX_MESSAGE_BYTES = 1048588  # message.max.bytes's default, as the broker's topics have


class _Floor(asyncio.BufferedProtocol):
    def __init__(self, log: _Log, template: bytes, offset_at: int, check: bool) -> None:
        self.check = check
        self.place: tuple[int, int] | None = None
        self.log = log
        self.template = template
        self.offset_at = offset_at
        self.buf = bytearray(1 << 20)
        self.view = memoryview(self.buf)
        self.start = self.end = 0
        self.next_offset = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.end == len(self.buf):
            rest = self.end - self.start
            self.buf[:rest] = self.buf[self.start : self.end]
            self.start, self.end = 0, rest
        return self.view[self.end :]

    def buffer_updated(self, nbytes: int) -> None:
        self.end += nbytes
        answers = []
        while self.end - self.start >= 4:
            (size,) = struct.unpack_from(">i", self.buf, self.start)
            if self.end - self.start - 4 < size:
                break
            frame = self.view[self.start + 4 : self.start + 4 + size]
            if self.check:
                self.log.append(self._checked(frame))
            else:
                self.log.append(frame)
            answer = bytearray(self.template)
            answer[4:8] = frame[4:8]  # the request's correlation id
            struct.pack_into(">q", answer, self.offset_at, self.next_offset)
            self.next_offset += ingest.RECORDS_PER_BATCH
            answers.append(answer)
            self.start += 4 + size
        if self.start == self.end:
            self.start = self.end = 0
        if answers:
            self.transport.write(b"".join(answers))

    def _checked(self, frame: memoryview) -> memoryview:
        if self.place is None:
            self.place = _records_place(frame)
        start, end = self.place
        now_ms = int(time.time() * 1000)
        job = BatchJob(frame[start:end], _MAX_MESSAGE_BYTES, True, "records", _RULES, now_ms)
        checked = check_batch(job)
        verdict = checked.verdict
        if checked.batch is None or verdict is None or verdict.error != ErrorCode.NONE:
            raise RuntimeError(f"the floor refused a batch: {checked}")
        return memoryview(checked.batch)


async def _serve(port: int, path: str, check: bool) -> None:
    template = _answer(0)
    # Where base_offset sits: the first byte that differs from an answer with offset 1.
    other = _answer(1)
    offset_at = next(i for i in range(len(template)) if template[i] != other[i]) - 7
    log = _Log(path)
    server = await asyncio.get_running_loop().create_server(
        lambda: _Floor(log, template, offset_at, check), "127.0.0.1", port
    )
    async with server:
        await server.serve_forever()


def measure(
    runs: int, requests: int, log_dir: Path | None = None, check: bool = False
) -> tuple[list[tuple[float, float, float]], int]:
    """(MB/s, server CPU us per request, client CPU us per request) of each run against one
    floor server, and the bytes of request frames (without their length prefixes) it
    received per run. The server writes them to ``log_dir``/log (a temporary directory
    when not given). The client's CPU is this process's (it only sends and reads while
    timed): on a machine whose cores the client shares, it is part of the budget."""
    with BenchBroker(overrides={"log.level": "WARNING"}) as broker:
        ingest.create_topic(broker.port, "floor")
        frames, batch_bytes = ingest.build_requests(broker.port, "floor", requests)
    frame_bytes = sum(len(frame) - 4 for frame in frames)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="minikafka-floor-") as tmp:
        path = (log_dir or Path(tmp)) / "log"
        server = subprocess.Popen(
            [sys.executable, "-m", "bench.floor", "--serve", str(port), str(path)]
            + (["--check"] if check else [])
        )
        try:
            wait_accepting(port, time.perf_counter() + 30)
            figures = []
            for _ in range(runs):
                cpu_before = ingest.cpu_seconds(server.pid)
                client_before = time.process_time()
                elapsed, responses = ingest.send_pipelined(port, frames, 5)
                client = time.process_time() - client_before
                cpu = ingest.cpu_seconds(server.pid) - cpu_before
                ingest.check_responses(responses, 1)
                figures.append(
                    (batch_bytes / elapsed / 1e6, cpu / requests * 1e6, client / requests * 1e6)
                )
            return figures, frame_bytes
        finally:
            server.kill()
            server.wait()


def _row(figure: str, values: list[float], unit: str) -> str:
    median = statistics.median(values)
    return f"| {figure} | {median:.0f} {unit} | {min(values):.0f}-{max(values):.0f} {unit} |\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "FILE"), help="(the server)")
    parser.add_argument("--check", action="store_true", help="check every batch as Kafka does")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(_serve(int(args.serve[0]), args.serve[1], args.check))
        return 0
    figures = measure(args.runs, args.requests, check=args.check)[0]
    text = (
        f"Measured {time.strftime('%Y-%m-%d %H:%M')}: the floor server (bench/floor.py"
        f"{' --check: every batch checked as the broker checks it' if args.check else ''}) under "
        f"bench --ingest's client, {args.runs} runs of {args.requests} requests of "
        f"{ingest.RECORDS_PER_BATCH} x {ingest.RECORD_SIZE} B.\n\n"
        f"| figure | median | min-max |\n|---|---|---|\n"
        + _row("ingest", [f[0] for f in figures], "MB/s")
        + _row("server CPU per request", [f[1] for f in figures], "us")
        + _row("client CPU per request", [f[2] for f in figures], "us")
    )
    (RESULTS / ("ingest-floor-check.md" if args.check else "ingest-floor.md")).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
