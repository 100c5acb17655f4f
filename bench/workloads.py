"""The measured workloads. Each returns its figure; none asserts a speed."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from bench.process import BenchBroker, free_port, wait_accepting
from protocol.records import build_batch
from tests.support.produce import batch, create_topic, init_producer, produce
from tests.support.raw_client import RawClient

_topics = itertools.count()


def topic(name: str) -> str:
    return f"bench-{name}-{next(_topics)}"


def startup_once() -> float:
    """Process spawn -> first acknowledged idempotent acks=all produce, seconds."""
    with BenchBroker() as _unused:
        pass  # make sure the interpreter and the files it imports are in the page cache
    broker = BenchBroker()
    try:
        started = time.perf_counter()
        broker.spawn()
        wait_accepting(broker.port, started + 30)
        with RawClient(broker.port) as client:
            create_topic(client, "start")
            pid = init_producer(client)
            answer = produce(client, "start", batch(pid, 0, 0, count=1))
            assert answer.error_code == 0
        return time.perf_counter() - started
    finally:
        broker.__exit__(None, None, None)


def confluent_produce(
    port: int, records: int, size: int, security: dict[str, str] | None = None
) -> float:
    """msg/s; ``security`` adds client settings (SASL_SSL) and names the port to use."""
    from confluent_kafka import Producer

    name = topic("confluent")
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            **(security or {}),
        }
    )
    payload = b"x" * size
    errors: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    producer.produce(name, b"warm-up")
    producer.flush(30)
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(name, payload, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.005)
    assert producer.flush(120) == 0 and not errors, errors[:3]
    return records / (time.perf_counter() - started)


def kafka_python_produce(port: int, records: int, size: int) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from kafka import KafkaProducer

        producer = KafkaProducer(
            bootstrap_servers=f"127.0.0.1:{port}",
            enable_idempotence=True,
            acks="all",
            linger_ms=5,
        )
    name = topic("kafka-python")
    payload = b"x" * size
    producer.send(name, b"warm-up").get(30)
    started = time.perf_counter()
    futures = [producer.send(name, payload) for _ in range(records)]
    producer.flush(120)
    for f in futures[-10:]:
        f.get(1)
    elapsed = time.perf_counter() - started
    producer.close()
    return records / elapsed


def aiokafka_produce(port: int, records: int, size: int) -> float:
    from aiokafka import AIOKafkaProducer

    async def run() -> float:
        producer = AIOKafkaProducer(
            bootstrap_servers=f"127.0.0.1:{port}", enable_idempotence=True, linger_ms=5
        )
        await producer.start()
        try:
            name = topic("aiokafka")
            await producer.send_and_wait(name, b"warm-up")
            payload = b"x" * size
            started = time.perf_counter()
            futures = [await producer.send(name, payload) for _ in range(records)]
            await asyncio.gather(*futures)
            return records / (time.perf_counter() - started)
        finally:
            await producer.stop()

    return asyncio.run(run())


def latency(port: int, count: int) -> dict[str, float]:
    from confluent_kafka import Producer

    name = topic("latency")
    producer = Producer(
        {"bootstrap.servers": f"127.0.0.1:{port}", "enable.idempotence": True, "linger.ms": 0}
    )
    producer.produce(name, b"warm-up")
    producer.flush(10)
    samples: list[float] = []
    done = threading.Event()

    def delivered(err: Any, _msg: Any) -> None:
        assert err is None, err
        done.set()

    for _ in range(count):
        done.clear()
        t0 = time.perf_counter()
        producer.produce(name, b"ping", on_delivery=delivered)
        while not done.is_set():
            producer.poll(0.0005)
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()

    def pct(q: float) -> float:
        return samples[min(int(len(samples) * q), len(samples) - 1)]

    return {"p50": pct(0.5), "p99": pct(0.99), "p999": pct(0.999)}


def end_txn_round_trips(port: int, transactions: int) -> dict[str, float]:
    """The cost of a commit: EndTxn(commit) round trips over a raw socket, ms, for
    transactions of one partition holding one 10-record batch (AddPartitionsToTxn and
    Produce before each, not timed). The answer comes after the COMMIT marker is written and
    the coordinator's state is fsynced twice (PrepareCommit, CompleteCommit)."""
    from protocol.messages.add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
    from protocol.messages.end_txn import END_TXN
    from protocol.messages.init_producer_id import INIT_PRODUCER_ID
    from protocol.messages.produce import PRODUCE
    from protocol.schema import Message

    name = topic("endtxn")
    txn_id = f"{name}-txn"
    samples: list[float] = []
    with RawClient(port) as client:
        create_topic(client, name)
        init = client.request(
            INIT_PRODUCER_ID, 4, Message(transactional_id=txn_id, transaction_timeout_ms=60000)
        )
        pid, epoch = init.producer_id, init.producer_epoch
        for n in range(transactions):
            added = client.request(
                ADD_PARTITIONS_TO_TXN,
                3,
                Message(
                    v3_and_below_transactional_id=txn_id,
                    v3_and_below_producer_id=pid,
                    v3_and_below_producer_epoch=epoch,
                    v3_and_below_topics=[Message(name=name, partitions=[0])],
                ),
            )
            assert (
                added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
                == 0
            )
            data = batch(pid, epoch, n * 10, count=10, transactional=True)
            answer = client.request(
                PRODUCE,
                9,
                Message(
                    transactional_id=txn_id,
                    acks=-1,
                    timeout_ms=30000,
                    topic_data=[
                        Message(name=name, partition_data=[Message(index=0, records=data)])
                    ],
                ),
            )
            assert answer.responses[0].partition_responses[0].error_code == 0
            t0 = time.perf_counter()
            ended = client.request(
                END_TXN,
                3,
                Message(
                    transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=True
                ),
            )
            samples.append((time.perf_counter() - t0) * 1000)
            assert ended.error_code == 0, ended
    samples.sort()
    return {
        "p50": samples[len(samples) // 2],
        "p99": samples[min(int(len(samples) * 0.99), len(samples) - 1)],
    }


def transactional_produce(port: int, transactions: int, per_txn: int, size: int) -> float:
    """confluent-kafka transactional producer: begin, `per_txn` records of `size` bytes,
    commit, repeated; committed records per second."""
    from confluent_kafka import Producer

    name = topic("txn")
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "transactional.id": f"{name}-producer",
            "linger.ms": 5,
        }
    )
    producer.init_transactions(30)
    payload = b"x" * size
    started = time.perf_counter()
    for _ in range(transactions):
        producer.begin_transaction()
        for _ in range(per_txn):
            while True:
                try:
                    producer.produce(name, payload, partition=0)
                    break
                except BufferError:
                    producer.poll(0.005)
        producer.commit_transaction(60)
    return transactions * per_txn / (time.perf_counter() - started)


def confluent_consume(
    port: int, total_bytes: int, security: dict[str, str] | None = None, read_port: int = 0
) -> float:
    """MB/s reading ``total_bytes`` of 1 KiB records written beforehand by a raw client
    (on ``port``, PLAINTEXT); the consumer reads from ``read_port`` with ``security``."""
    from confluent_kafka import Consumer, TopicPartition

    name = topic("consume")
    size = 1024
    records = total_bytes // size
    per_batch = 500
    with RawClient(port) as client:
        create_topic(client, name)
        payload = b"y" * size
        for first in range(0, records, per_batch):
            n = min(per_batch, records - first)
            data = build_batch([(None, payload)] * n)
            assert produce(client, name, data).error_code == 0
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{read_port or port}",
            "group.id": name,
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
            **(security or {}),
        }
    )
    consumer.assign([TopicPartition(name, 0, 0)])
    got = 0
    started = time.perf_counter()
    deadline = started + 300
    while got < records and time.perf_counter() < deadline:
        # Never ask for more than remains: consume() would wait out its timeout for them.
        for msg in consumer.consume(min(10000, records - got), 1.0):
            if msg.error() is None:
                got += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return got * size / elapsed / 1e6


def many_producers(producers: int, partitions: int, each: int) -> dict[str, float]:
    """``producers`` idempotent confluent-kafka producers at once over ``partitions``."""
    with BenchBroker(overrides={"num.partitions": str(partitions)}) as broker:
        return _many_producers(broker.port, producers, partitions, each)


def _many_producers(port: int, producers: int, partitions: int, each: int) -> dict[str, float]:
    from confluent_kafka import Producer

    name = topic("many")
    with RawClient(port) as client:
        create_topic(client, name)
    clients = [
        Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{port}",
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
            }
        )
        for _ in range(producers)
    ]
    errors: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    payload = b"z" * 1024

    def run(i: int, producer: Any) -> None:
        for n in range(each):
            while True:
                try:
                    producer.produce(
                        name, payload, partition=(i + n) % partitions, on_delivery=report
                    )
                    break
                except BufferError:
                    producer.poll(0.005)
        producer.flush(120)

    assert _partition_count(port, name) == partitions
    threads = [threading.Thread(target=run, args=(i, p)) for i, p in enumerate(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    return {"msg_s": producers * each / elapsed, "errors": len(errors)}


def _partition_count(port: int, name: str) -> int:
    from protocol.messages.metadata import METADATA
    from protocol.schema import Message

    with RawClient(port) as client:
        meta = client.request(METADATA, 12, Message(topics=[Message(name=name)]))
    return len(meta.topics[0].partitions)


def recovery_after_sigkill(mib: int) -> float:
    """Spawn -> serving, after SIGKILL with ``mib`` MiB in one partition."""
    broker = BenchBroker()
    broker.spawn()
    wait_accepting(broker.port, time.perf_counter() + 30)
    try:
        with RawClient(broker.port) as client:
            create_topic(client, "recover")
            pid = init_producer(client)
            payload = b"r" * 1000
            seq = 0
            written = 0
            while written < mib * 1024 * 1024:
                data = build_batch(
                    [(None, payload)] * 1000, producer_id=pid, producer_epoch=0, base_sequence=seq
                )
                assert produce(client, "recover", data).error_code == 0
                seq += 1000
                written += len(data)
        broker.kill()
        started = time.perf_counter()
        broker.spawn()
        wait_accepting(broker.port, started + 300)
        return time.perf_counter() - started
    finally:
        broker.__exit__(None, None, None)


SCRAM_USER = ("bench", "bench-secret")


def sasl_ssl_broker(cert_dir: Path) -> tuple[BenchBroker, int, dict[str, str]]:
    """A broker with a SASL_SSL listener (SCRAM-SHA-512, PEM keystore) beside PLAINTEXT:
    the broker, the SASL_SSL port, and the confluent-kafka settings to use it."""
    from tests.support.certs import make_pki

    pki = make_pki(cert_dir)
    plain, secure = free_port(), free_port()
    user, password = SCRAM_USER
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{secure}",
        "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
        "listener.name.sasl_ssl.ssl.keystore.location": str(pki.broker),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "minikafka.scram.bootstrap.users": f"SCRAM-SHA-512=[name={user},password={password}]",
    }
    client = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": password,
        "ssl.ca.location": str(pki.ca),
    }
    return BenchBroker(port=plain, overrides=overrides), secure, client
