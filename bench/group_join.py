"""How long three confluent-kafka consumers take from joining a group to all consuming, with
the classic protocol and with KIP-848 (group.protocol=consumer), on one broker (issue 18).

    python -m bench.group_join [--runs N] [--settings defaults|kafka|fast]

Six partitions hold records already; three consumers are created at once, and the figures
are the time until each holds its final two partitions (assignment) and until each has read
a record (consuming), median over the runs. Settings: ``defaults`` are the broker's and
librdkafka's (group.initial.rebalance.delay.ms 100 ms here, a 5 s heartbeat interval for
consumer groups); ``kafka`` sets Kafka's 3 s initial rebalance delay; ``fast`` the tests'
settings (no initial delay, 200 ms heartbeats). Nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

from bench.process import BenchBroker
from protocol.records import build_batch
from tests.support.produce import create_partitioned_topic, produce
from tests.support.raw_client import RawClient

TOPIC, PARTITIONS = "join-bench", 6


SETTINGS = {
    "defaults": {},
    "kafka": {"group.initial.rebalance.delay.ms": "3000"},
    "fast": {
        "group.initial.rebalance.delay.ms": "0",
        "group.consumer.heartbeat.interval.ms": "200",
    },
}


def one_run(protocol: str, settings: str, run: int) -> tuple[float, float]:
    import confluent_kafka

    fast = settings == "fast"
    overrides = SETTINGS[settings]
    with BenchBroker(overrides=overrides) as broker:
        with RawClient(broker.port) as client:
            create_partitioned_topic(client, TOPIC, PARTITIONS)
            for p in range(PARTITIONS):
                data = build_batch([(None, b"x")] * 10)
                assert produce(client, TOPIC, data, partition=p).error_code == 0
        owned: list[set[int]] = [set() for _ in range(3)]
        first_read: list[float | None] = [None] * 3
        stop = threading.Event()
        started = time.perf_counter()

        def member(i: int) -> None:
            config: dict[str, Any] = {
                "bootstrap.servers": f"127.0.0.1:{broker.port}",
                "group.id": f"join-{protocol}-{run}",
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
            if fast and protocol == "classic":
                config["heartbeat.interval.ms"] = 200
            consumer = confluent_kafka.Consumer(config)

            def on_assign(_c: object, parts: list[Any]) -> None:
                owned[i] |= {p.partition for p in parts}

            def on_revoke(_c: object, parts: list[Any]) -> None:
                owned[i] -= {p.partition for p in parts}

            consumer.subscribe([TOPIC], on_assign=on_assign, on_revoke=on_revoke)
            while not stop.is_set():
                msg = consumer.poll(0.05)
                if msg is not None and not msg.error() and first_read[i] is None:
                    first_read[i] = time.perf_counter() - started
            consumer.close()

        threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(3)]
        for t in threads:
            t.start()
        deadline = time.perf_counter() + 120
        split: float | None = None
        while time.perf_counter() < deadline and (None in first_read or split is None):
            if split is None and sorted(len(o) for o in owned) == [2, 2, 2]:
                split = time.perf_counter() - started
            time.sleep(0.01)
        stop.set()
        for t in threads:
            t.join(30)
        assert None not in first_read and split is not None, "no even split, or a member never read"
        return split, max(r for r in first_read if r is not None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settings", choices=sorted(SETTINGS), default="defaults")
    args = parser.parse_args()
    for protocol in ("classic", "consumer"):
        results = [one_run(protocol, args.settings, r) for r in range(args.runs)]
        split = statistics.median(s for s, _ in results)
        read = statistics.median(r for _, r in results)
        print(
            f"{protocol:8s} settings={args.settings} runs={args.runs}: "
            f"two partitions each after {split:.2f} s, all three reading after {read:.2f} s "
            f"(runs: {', '.join(f'{s:.2f}/{r:.2f}' for s, r in results)})"
        )


if __name__ == "__main__":
    main()
