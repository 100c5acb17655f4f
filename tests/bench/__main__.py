"""`make bench`: start-up, memory and produce throughput of a real broker process.

Figures are printed, never asserted: speed targets live here, not in timed unit tests.
    python -m tests.bench [--records N] [--size BYTES]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.produce import batch, create_topic, init_producer, produce
from tests.support.raw_client import RawClient


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def startup(data_dir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Process start -> first acknowledged idempotent produce, measured from outside."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker",
            "--override",
            f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "--override",
            f"log.dirs={data_dir}",
            "--override",
            "log.level=WARNING",
        ]
    )
    deadline = started + 30
    while True:
        try:
            client = RawClient(port)
            break
        except OSError:
            if time.perf_counter() > deadline:
                proc.kill()
                raise
            time.sleep(0.005)
    with client:
        create_topic(client, "bench-start")
        pid = init_producer(client)
        answer = produce(client, "bench-start", batch(pid, 0, 0, count=1))
        assert answer.error_code == 0
    elapsed = time.perf_counter() - started
    print(f"start -> first acknowledged idempotent produce: {elapsed * 1000:.0f} ms")
    print(f"resident memory after start: {rss_mb(proc.pid):.1f} MB")
    return proc, port


def confluent_throughput(port: int, records: int, size: int) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
        }
    )
    payload = b"x" * size
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce("bench-throughput", payload)
                break
            except BufferError:
                producer.poll(0.01)
    remaining = producer.flush(60)
    elapsed = time.perf_counter() - started
    assert remaining == 0
    rate = records / elapsed
    print(
        f"confluent-kafka idempotent acks=all {records} x {size} B: "
        f"{rate:,.0f} msg/s, {rate * size / 1e6:.1f} MB/s"
    )


def confluent_consume(port: int, records: int, size: int) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
        }
    )
    consumer.assign([TopicPartition("bench-throughput", 0, 0)])
    got = 0
    started = time.perf_counter()
    deadline = started + 120
    while got < records and time.perf_counter() < deadline:
        for msg in consumer.consume(10000, 1.0):
            if msg.error() is None:
                got += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    print(
        f"confluent-kafka consume {got} x {size} B: {got / elapsed:,.0f} msg/s, "
        f"{got * size / elapsed / 1e6:.1f} MB/s"
    )


def latency(port: int, count: int = 2000) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": f"127.0.0.1:{port}", "enable.idempotence": True, "linger.ms": 0}
    )
    producer.produce("bench-latency", b"warm-up")
    producer.flush(10)
    samples: list[float] = []
    for _ in range(count):
        t0 = time.perf_counter()
        producer.produce("bench-latency", b"ping")
        producer.flush(10)
        samples.append(time.perf_counter() - t0)
    samples.sort()
    p50 = samples[len(samples) // 2] * 1000
    p99 = samples[int(len(samples) * 0.99)] * 1000
    print(f"single-message produce latency (produce+flush): p50 {p50:.2f} ms, p99 {p99:.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(prog="make bench")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="minikafka-bench-") as tmp:
        proc, port = startup(Path(tmp) / "data")
        try:
            confluent_throughput(port, args.records, args.size)
            print(f"resident memory after load: {rss_mb(proc.pid):.1f} MB")
            confluent_consume(port, args.records, args.size)
            latency(port)
        finally:
            proc.terminate()
            proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
