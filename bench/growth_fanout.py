"""How delivery grows with the consumers of one partition: 1 to 500 readers of 16 MB.

For each size N a fresh broker (minikafka, and Tansu 0.6 beside it unless --no-tansu) gets a
topic of one partition holding ``PARTITION_MB`` MB (batches of 15 records of 64 KiB), then N
connections, one thread each, read the whole partition from offset 0 with Fetch v12 (up to
``FETCH_MAX_BYTES`` an answer), all at once:

- delivered: N x the partition's record bytes (MB of 10^6 bytes) over the time from the
  first Fetch to the last reader done, in MB/s;
- per reader: the same divided by N (the share each consumer gets);
- Fetch round trip p99 over every reader's answers.

Growth exponents as in bench.growth (delivered MB/s: 0 flat, above 0 grows with readers).
``python -m bench.growth_fanout [--sizes 1,10,100,500] [--no-tansu]`` writes
bench/results/growth-fanout.json and .md and prints the table.
"""

from __future__ import annotations

import contextlib
import statistics
import struct
import threading
import time

from bench.growth import command
from bench.startup import FramedClient, Spawner, spawn_minikafka
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.fetch import FETCH
from protocol.messages.produce import PRODUCE
from protocol.records import build_batch
from protocol.schema import Message

TOPIC = "fanout"
PARTITION_MB = 16
RECORD_BYTES = 64 * 1024
RECORDS_PER_BATCH = 15  # a batch within max.message.bytes' default (1 MiB)
FETCH_MAX_BYTES = 4 * 1024 * 1024

FIGURES = {
    "delivered_mb_s": ("delivered, all readers", "MB/s", 0),
    "per_reader_mb_s": ("delivered per reader", "MB/s", 1),
    "fetch_p99_ms": ("Fetch round trip p99", "ms", 1),
}


def fill(client: FramedClient) -> int:
    """The topic, made and filled; its end offset."""
    topic = Message(name=TOPIC, num_partitions=1, replication_factor=1, assignments=[], configs=[])
    made = client.ask(
        client.frame(
            CREATE_TOPICS, 5, Message(topics=[topic], timeout_ms=30_000, validate_only=False)
        )
    )
    assert {t.error_code for t in made.topics} == {0}
    value = b"v" * RECORD_BYTES
    batch = build_batch([(None, value)] * RECORDS_PER_BATCH)
    batches = PARTITION_MB * 1024 * 1024 // (RECORD_BYTES * RECORDS_PER_BATCH)
    for _ in range(batches):
        answer = client.ask(
            client.frame(
                PRODUCE,
                9,
                Message(
                    transactional_id=None,
                    acks=1,
                    timeout_ms=30_000,
                    topic_data=[
                        Message(name=TOPIC, partition_data=[Message(index=0, records=batch)])
                    ],
                ),
            )
        )
        (part,) = answer.responses[0].partition_responses
        assert part.error_code == 0, part.error_code
    return batches * RECORDS_PER_BATCH


def next_offset(records: bytes | memoryview | None, offset: int) -> int:
    """The offset after the last whole batch in a Fetch answer's records."""
    data = memoryview(records or b"")
    pos = 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if pos + 12 + length > len(data):
            break  # a batch cut short by the answer's size limit
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        offset = base + delta + 1
        pos += 12 + length
    return offset


def read_all(
    port: int, end: int, latencies: list[float], start: threading.Barrier, failed: list[str]
) -> None:
    client = FramedClient()
    try:
        client.connect(port, time.perf_counter() + 60)
        assert client.sock is not None
        client.sock.settimeout(300)
        offset = 0
        start.wait()
        while offset < end:
            request = client.frame(
                FETCH,
                12,
                Message(
                    replica_id=-1,
                    max_wait_ms=500,
                    min_bytes=1,
                    max_bytes=FETCH_MAX_BYTES,
                    isolation_level=0,
                    session_id=0,
                    session_epoch=-1,
                    topics=[
                        Message(
                            topic=TOPIC,
                            partitions=[
                                Message(
                                    partition=0,
                                    fetch_offset=offset,
                                    log_start_offset=-1,
                                    partition_max_bytes=FETCH_MAX_BYTES,
                                )
                            ],
                        )
                    ],
                    forgotten_topics_data=[],
                    rack_id="",
                ),
            )
            t0 = time.perf_counter()
            answer = client.ask(request)
            latencies.append(time.perf_counter() - t0)
            (part,) = answer.responses[0].partitions
            assert part.error_code == 0, part.error_code
            offset = next_offset(part.records, offset)
    except BaseException as exc:  # counted against the run: a reader that stopped short
        failed.append(repr(exc))
        with contextlib.suppress(threading.BrokenBarrierError):
            start.abort()
    finally:
        client.close()


def one_size(spawn: Spawner, readers: int) -> dict[str, float]:
    broker = spawn()
    client = FramedClient()
    try:
        client.connect(broker.port, time.perf_counter() + 60)
        assert client.sock is not None
        client.sock.settimeout(120)
        end = fill(client)
        latencies: list[float] = []
        failed: list[str] = []
        start = threading.Barrier(readers + 1)
        threads = [
            threading.Thread(target=read_all, args=(broker.port, end, latencies, start, failed))
            for _ in range(readers)
        ]
        for thread in threads:
            thread.start()
        start.wait()
        t0 = time.perf_counter()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - t0
        assert not failed, f"{len(failed)} of {readers} readers failed: {failed[0]}"
        delivered = readers * end * RECORD_BYTES / 1e6 / elapsed
        return {
            "delivered_mb_s": delivered,
            "per_reader_mb_s": delivered / readers,
            "fetch_p99_ms": statistics.quantiles(latencies, n=100)[98] * 1000
            if len(latencies) > 1
            else latencies[0] * 1000,
        }
    finally:
        client.close()
        broker.close()


def main(argv: list[str] | None = None) -> int:
    return command(
        argv,
        "growth_fanout",
        one_size,
        FIGURES,
        sizes="1,10,100,500",
        dimension="readers",
        how=f"a fresh broker per size, one {PARTITION_MB} MB partition read whole by each reader",
        out="growth-fanout",
        minikafka=spawn_minikafka,
    )


if __name__ == "__main__":
    raise SystemExit(main())
