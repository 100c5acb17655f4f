"""How transactions grow with the producers running them at once: 1 to 1,000.

For each size N a fresh broker (minikafka, and Tansu 0.6 beside it unless --no-tansu) gets a
topic of ``PARTITIONS`` partitions; then N transactional producers, one thread and one
connection each, all at once: InitProducerId, then ``ROUNDS`` transactions of
AddPartitionsToTxn (v3, its partition), one Produce of a small transactional batch and
EndTxn(commit), as a transactional producer of transactions v1 sends them. A
CONCURRENT_TRANSACTIONS answer (the previous commit's markers not written yet) is retried
after ``RETRY_S``, as clients retry it.

- commits per second: N x ROUNDS over the time from the first InitProducerId to the last
  commit answered;
- EndTxn round trip p50 and p99 over every commit.

Growth exponents as in bench.growth. ``python -m bench.growth_transactions
[--sizes 1,10,100,1000] [--no-tansu]`` writes bench/results/growth-transactions.json and .md
and prints the table.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time

from bench.growth import command
from bench.startup import FramedClient, Spawner, spawn_minikafka
from protocol.messages.add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.end_txn import END_TXN
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.messages.produce import PRODUCE
from protocol.records import build_batch
from protocol.schema import Message

TOPIC = "txn-growth"
PARTITIONS = 10
ROUNDS = 5
RETRY_S = 0.02
CONCURRENT_TRANSACTIONS = 51
ATTEMPTS = 500

FIGURES = {
    "commits_per_s": ("transactions committed per second", "/s", 0),
    "end_txn_p50_ms": ("EndTxn round trip p50", "ms", 1),
    "end_txn_p99_ms": ("EndTxn round trip p99", "ms", 1),
}


def _ask_retrying(client: FramedClient, make: Message, api: object, version: int) -> Message:
    """Ask until the answer is not CONCURRENT_TRANSACTIONS."""
    for _ in range(ATTEMPTS):
        answer = client.ask(client.frame(api, version, make))  # type: ignore[arg-type]
        codes = {answer.error_code} if hasattr(answer, "error_code") else set()
        codes |= {
            p.partition_error_code
            for t in getattr(answer, "results_by_topic_v3_and_below", None) or []
            for p in t.results_by_partition
        }
        if CONCURRENT_TRANSACTIONS not in codes:
            assert codes <= {0}, f"{make} answered {codes}"
            return answer
        time.sleep(RETRY_S)
    raise AssertionError(f"still CONCURRENT_TRANSACTIONS after {ATTEMPTS} tries")


def produce_transactions(
    port: int, index: int, end_txn: list[float], start: threading.Barrier, failed: list[str]
) -> None:
    client = FramedClient()
    txn_id = f"growth-{index:05d}"
    partition = index % PARTITIONS
    try:
        client.connect(port, time.perf_counter() + 60)
        assert client.sock is not None
        client.sock.settimeout(300)
        start.wait()
        init = _ask_retrying(
            client,
            Message(
                transactional_id=txn_id,
                transaction_timeout_ms=60_000,
                producer_id=-1,
                producer_epoch=-1,
            ),
            INIT_PRODUCER_ID,
            4,
        )
        pid, epoch = init.producer_id, init.producer_epoch
        for round_ in range(ROUNDS):
            _ask_retrying(
                client,
                Message(
                    v3_and_below_transactional_id=txn_id,
                    v3_and_below_producer_id=pid,
                    v3_and_below_producer_epoch=epoch,
                    v3_and_below_topics=[Message(name=TOPIC, partitions=[partition])],
                ),
                ADD_PARTITIONS_TO_TXN,
                3,
            )
            batch = build_batch(
                [(b"k", b"v" * 100)],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=round_,
                transactional=True,
            )
            produced = client.ask(
                client.frame(
                    PRODUCE,
                    9,
                    Message(
                        transactional_id=txn_id,
                        acks=-1,
                        timeout_ms=30_000,
                        topic_data=[
                            Message(
                                name=TOPIC, partition_data=[Message(index=partition, records=batch)]
                            )
                        ],
                    ),
                )
            )
            (part,) = produced.responses[0].partition_responses
            assert part.error_code == 0, f"Produce answered {part.error_code}"
            t0 = time.perf_counter()
            _ask_retrying(
                client,
                Message(
                    transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=True
                ),
                END_TXN,
                3,
            )
            end_txn.append(time.perf_counter() - t0)
    except BaseException as exc:  # counted against the run
        failed.append(repr(exc))
        with contextlib.suppress(threading.BrokenBarrierError):
            start.abort()
    finally:
        client.close()


def one_size(spawn: Spawner, producers: int) -> dict[str, float]:
    broker = spawn()
    client = FramedClient()
    try:
        client.connect(broker.port, time.perf_counter() + 60)
        topic = Message(
            name=TOPIC, num_partitions=PARTITIONS, replication_factor=1, assignments=[], configs=[]
        )
        made = client.ask(
            client.frame(
                CREATE_TOPICS, 5, Message(topics=[topic], timeout_ms=30_000, validate_only=False)
            )
        )
        assert {t.error_code for t in made.topics} == {0}
        end_txn: list[float] = []
        failed: list[str] = []
        start = threading.Barrier(producers + 1)
        threads = [
            threading.Thread(
                target=produce_transactions, args=(broker.port, i, end_txn, start, failed)
            )
            for i in range(producers)
        ]
        for thread in threads:
            thread.start()
        start.wait()
        t0 = time.perf_counter()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - t0
        assert not failed, f"{len(failed)} of {producers} producers failed: {failed[0]}"
        cuts = statistics.quantiles(end_txn, n=100)
        return {
            "commits_per_s": producers * ROUNDS / elapsed,
            "end_txn_p50_ms": statistics.median(end_txn) * 1000,
            "end_txn_p99_ms": cuts[98] * 1000,
        }
    finally:
        client.close()
        broker.close()


def main(argv: list[str] | None = None) -> int:
    return command(
        argv,
        "growth_transactions",
        one_size,
        FIGURES,
        sizes="1,10,100,1000",
        dimension="producers",
        how=f"a fresh broker per size, {ROUNDS} transactions of one record per producer",
        out="growth-transactions",
        minikafka=spawn_minikafka,
    )


if __name__ == "__main__":
    raise SystemExit(main())
