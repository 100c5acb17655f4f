"""Capture golden request frames from real clients: ``python -m tests.support.golden``.

Starts a broker behind a CaptureProxy (the broker advertises the proxy, so every
connection goes through it), then drives each client: an idempotent producer per codec
(a few compressible records each) and a plain consumer (assign + offset 0). The kept frames
are written to tests/data/golden/<client>/<api>_v<version>_<n>.bin (the request without
its length prefix), with manifest.json naming the client library and, for Produce, the
codec requested. tests/protocol/test_golden_frames.py reads only these stored files.

Re-run after upgrading a client library or when the broker starts serving a new API a
client then uses (e.g. librdkafka enables LZ4 only once FindCoordinator is advertised).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from protocol.api_keys import ALL_APIS
from protocol.header import decode_request_header
from protocol.primitives import Reader
from tests.support.broker_process import BrokerProcess
from tests.support.capture_proxy import CapturedFrame, CaptureProxy

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "data" / "golden"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RECORDS_PER_PRODUCE = 3
KEEP_PER_VERSION = 2  # non-Produce frames kept per (api, version), duplicates skipped
PRODUCE_KEY = 0


def value(i: int) -> bytes:
    # Compressible, or librdkafka sends the batch uncompressed.
    return b'{"n": %d, "text": "%s"}' % (i, b"golden frame, golden frame, " * 4)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# --- clients ---------------------------------------------------------------------------------


def kafka_python_produce(bootstrap: str, topic: str, codec: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        enable_idempotence=True,
        acks="all",
        linger_ms=100,
        compression_type=None if codec == "none" else codec,
    )
    futures = [
        producer.send(topic, key=b"k%d" % i, value=value(i), partition=0)
        for i in range(RECORDS_PER_PRODUCE)
    ]
    producer.flush(10)
    for f in futures:
        f.get(0)
    producer.close(10)


def kafka_python_consume(bootstrap: str, topic: str) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got = 0
    deadline = time.monotonic() + 10
    while got < RECORDS_PER_PRODUCE and time.monotonic() < deadline:
        got += sum(len(m) for m in consumer.poll(timeout_ms=500).values())
    consumer.close()


def confluent_produce(bootstrap: str, topic: str, codec: str) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 100,
            "compression.type": codec,
        }
    )
    for i in range(RECORDS_PER_PRODUCE):
        producer.produce(topic, key=b"k%d" % i, value=value(i), partition=0)
    if producer.flush(10):
        raise RuntimeError("confluent-kafka could not deliver")


def confluent_consume(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "golden", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    deadline = time.monotonic() + 10
    while got < RECORDS_PER_PRODUCE and time.monotonic() < deadline:
        got += len(consumer.consume(RECORDS_PER_PRODUCE, 0.5))
    consumer.close()


def aiokafka_produce(bootstrap: str, topic: str, codec: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            enable_idempotence=True,
            acks="all",
            linger_ms=100,
            compression_type=None if codec == "none" else codec,
        )
        await producer.start()
        try:
            futures = [
                await producer.send(topic, key=b"k%d" % i, value=value(i), partition=0)
                for i in range(RECORDS_PER_PRODUCE)
            ]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(run())


def aiokafka_consume(bootstrap: str, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
        )
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got = 0
            deadline = time.monotonic() + 10
            while got < RECORDS_PER_PRODUCE and time.monotonic() < deadline:
                got += sum(len(m) for m in (await consumer.getmany(timeout_ms=500)).values())
        finally:
            await consumer.stop()

    asyncio.run(run())


def library_versions() -> dict[str, str]:
    import aiokafka
    import confluent_kafka
    import kafka

    return {
        "kafka-python": f"kafka-python {kafka.__version__}",
        "confluent-kafka": (
            f"confluent-kafka {confluent_kafka.__version__}"
            f" (librdkafka {confluent_kafka.libversion()[0]})"
        ),
        "aiokafka": f"aiokafka {aiokafka.__version__}",
    }


CLIENTS: dict[str, tuple[Callable[[str, str, str], None], Callable[[str, str], None]]] = {
    "kafka-python": (kafka_python_produce, kafka_python_consume),
    "confluent-kafka": (confluent_produce, confluent_consume),
    "aiokafka": (aiokafka_produce, aiokafka_consume),
}


# --- selection -------------------------------------------------------------------------------


def _body(captured: CapturedFrame) -> bytes:
    """The request after its header: frames that differ only in correlation id or client id
    (one per producer instance) teach nothing new."""
    api = ALL_APIS[captured.api_key]
    reader = Reader(captured.frame)
    decode_request_header(reader, api.request_header_version(captured.api_version))
    return captured.frame[reader.pos :]


def select(
    runs: list[tuple[str | None, list[CapturedFrame]]],
) -> list[tuple[bytes, str | None]]:
    """The frames worth keeping, each with the codec requested (Produce only).

    Per producer run, its first Produce frame; for every other (api, version), the first
    KEEP_PER_VERSION frames with different bodies.
    """
    kept: list[tuple[bytes, str | None]] = []
    seen: dict[tuple[int, int], set[bytes]] = {}
    for codec, frames in runs:
        produced = False
        for captured in frames:
            if captured.api_key not in ALL_APIS:
                continue
            if captured.api_key == PRODUCE_KEY:
                if codec is not None and not produced:
                    kept.append((captured.frame, codec))
                    produced = True
                continue
            bucket = seen.setdefault((captured.api_key, captured.api_version), set())
            fingerprint = _body(captured)
            if len(bucket) < KEEP_PER_VERSION and fingerprint not in bucket:
                bucket.add(fingerprint)
                kept.append((captured.frame, None))
    return kept


def write_client(out_dir: Path, frames: list[tuple[bytes, str | None]]) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.bin"):
        old.unlink()
    counters: dict[tuple[int, int], int] = {}
    described: dict[str, Any] = {}
    for frame, codec in frames:
        key = int.from_bytes(frame[0:2], "big", signed=True)
        version = int.from_bytes(frame[2:4], "big", signed=True)
        n = counters.get((key, version), 0)
        counters[(key, version)] = n + 1
        name = f"{snake(ALL_APIS[key].name)}_v{version}_{n}.bin"
        (out_dir / name).write_bytes(frame)
        entry: dict[str, Any] = {"api": ALL_APIS[key].name, "version": version}
        if codec is not None:
            entry["codec"] = codec
        described[name] = entry
    return described


def capture(out: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "captured_by": "python -m tests.support.golden",
        "libraries": library_versions(),
        "frames": {},
        # Requests for APIs this project does not describe yet (api key and version).
        "unserved_requests_seen": {},
    }
    with tempfile.TemporaryDirectory() as tmp, CaptureProxy() as proxy:
        broker = BrokerProcess(
            Path(tmp) / "data",
            {"advertised.listeners": f"PLAINTEXT://{proxy.bootstrap}", "num.partitions": "1"},
        ).start()
        try:
            proxy.set_upstream(broker.port)
            for client, (produce, consume) in CLIENTS.items():
                runs: list[tuple[str | None, list[CapturedFrame]]] = []
                for codec in CODECS:
                    produce(proxy.bootstrap, f"golden-{client}-{codec}", codec)
                    runs.append((codec, proxy.take()))
                consume(proxy.bootstrap, f"golden-{client}-gzip")
                runs.append((None, proxy.take()))
                manifest["frames"][client] = write_client(out / client, select(runs))
                unserved = {
                    f"{c.api_key} v{c.api_version}"
                    for _, frames in runs
                    for c in frames
                    if c.api_key not in ALL_APIS
                }
                manifest["unserved_requests_seen"][client] = sorted(unserved)
        finally:
            broker.stop()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=GOLDEN_DIR)
    args = parser.parse_args()
    with warnings.catch_warnings():
        # kafka-python 3.0 loads its schemas with importlib.resources.read_text.
        warnings.simplefilter("ignore", DeprecationWarning)
        manifest = capture(args.out)
    for client, frames in manifest["frames"].items():
        print(client, " ".join(sorted(frames)))
    total = sum(p.stat().st_size for p in args.out.rglob("*.bin"))
    print(f"{total} bytes in {args.out}")


if __name__ == "__main__":
    main()
