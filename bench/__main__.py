"""`make bench`: measure a freshly started broker process like a broker is measured.

Writes bench/results/latest.json and bench/results/latest.md and prints the table.
    python -m bench [--runs N] [--quick] [--transactions]
    python -m bench --ingest [--vs-tansu] [--runs N]   (bench/side_by_side.py)
    python -m bench --growth [--no-tansu]   (the curves: bench/growth*.py, growth-*.md)
Figures are medians of several runs with their spread (min-max); nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import cleaning, hostile, process, startup, workloads
from bench.process import COMMON_OVERRIDES, BenchBroker

RESULTS = Path(__file__).parent / "results"

# The bar from the performance issue (a 2-core machine), and Kafka 4.0.0 measured here.
BAR: dict[str, tuple[str, float, str]] = {
    "startup_s": ("<=", 0.3, "4.9 s"),
    "rss_after_start_mb": ("<=", 50, "380 MB"),
    "rss_after_load_mb": ("<=", 150, "750 MB"),
    "confluent_produce_msg_s": (">=", 150_000, "100k msg/s"),
    "latency_p99_ms": ("<=", 1.0, "1.3 ms"),
    "consume_mb_s": (">=", 300, "-"),
}


def summarize(samples: list[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "runs": len(samples),
    }


def repeat(runs: int, fn: Callable[[], float]) -> dict[str, Any]:
    return summarize([fn() for _ in range(runs)])


def machine(loop: str) -> dict[str, Any]:
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loop": loop,
    }


def main() -> int:
    if "--ingest" in sys.argv[1:]:
        # The ingest ceiling and latency, optionally side by side with Tansu (issue 19).
        from bench import side_by_side

        return side_by_side.main(sys.argv[1:])
    if "--growth" in sys.argv[1:]:
        # How the cost grows with partitions, connections, groups, readers, transactions and the
        # data a restart finds.
        from bench import (
            growth,
            growth_connections,
            growth_fanout,
            growth_groups,
            growth_restart,
            growth_retention,
            growth_transactions,
        )

        rest = [arg for arg in sys.argv[1:] if arg == "--no-tansu"]
        curves = (growth, growth_connections, growth_groups, growth_fanout, growth_transactions)
        for curve in curves:
            curve.main(rest)
        # Tansu's memory storage keeps nothing to restart or to expire: minikafka alone.
        return growth_restart.main([]) or growth_retention.main([])
    parser = argparse.ArgumentParser(prog="make bench")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller workloads, one run")
    parser.add_argument("--skip-recovery", action="store_true")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument(
        "--no-tansu", action="store_true", help="start and memory figures without Tansu"
    )
    parser.add_argument(
        "--transactions",
        action="store_true",
        help="only the transaction workloads (EndTxn round trip, transactional producer)",
    )
    parser.add_argument(
        "--hostile",
        action="store_true",
        help="only the hostile/heavy-client workloads (bench/hostile.py, issue 13)",
    )
    args = parser.parse_args()
    if args.hostile:
        return hostile_main(args.quick)
    COMMON_OVERRIDES["minikafka.event.loop"] = args.loop
    runs = 1 if args.quick else args.runs
    scale = 0.1 if args.quick else 1.0
    results: dict[str, Any] = {
        "machine": machine(args.loop),
        "when": time.strftime("%Y-%m-%d %H:%M"),
    }
    figures: dict[str, Any] = {}
    if args.transactions:
        with BenchBroker() as broker:
            transaction_figures(figures, broker.port, runs, scale)
        results["figures"] = figures
        return write_results(results, "transactions")

    figures["startup_s"] = repeat(1 if args.quick else 5, workloads.startup_once)
    # Start and memory, each figure from fresh processes, next to Tansu in the same runs.
    side = startup.measure(3 if args.quick else 7, tansu=not args.no_tansu)
    for key in startup.FIGURES:
        figures[f"start_{key}"] = side["minikafka"][key]
        if "tansu" in side:
            results.setdefault("tansu", {})[f"start_{key}"] = side["tansu"][key]
    with BenchBroker() as broker:
        figures["rss_after_start_mb"] = summarize([broker.rss_mb()])
        n = int(200_000 * scale)
        figures["confluent_produce_msg_s"] = repeat(
            runs, lambda: workloads.confluent_produce(broker.port, n, 1024)
        )
        figures["kafka_python_produce_msg_s"] = repeat(
            runs, lambda: workloads.kafka_python_produce(broker.port, int(50_000 * scale), 1024)
        )
        figures["aiokafka_produce_msg_s"] = repeat(
            runs, lambda: workloads.aiokafka_produce(broker.port, int(50_000 * scale), 1024)
        )
        lat = [workloads.latency(broker.port, int(5000 * scale)) for _ in range(runs)]
        for key in ("p50", "p99", "p999"):
            figures[f"latency_{key}_ms"] = summarize([x[key] for x in lat])
        figures["consume_mb_s"] = repeat(
            runs, lambda: workloads.confluent_consume(broker.port, int(200 * scale) * 1024 * 1024)
        )
        figures["rss_after_load_mb"] = summarize([broker.rss_mb()])
        transaction_figures(figures, broker.port, runs, scale)
    # The same produce and consume over SASL_SSL (TLS + SCRAM-SHA-512), next to PLAINTEXT.
    with tempfile.TemporaryDirectory(prefix="minikafka-bench-certs-") as certs:
        secured, secure_port, security = workloads.sasl_ssl_broker(Path(certs))
        with secured as broker:
            figures["confluent_produce_sasl_ssl_msg_s"] = repeat(
                runs, lambda: workloads.confluent_produce(secure_port, n, 1024, security)
            )
            figures["consume_sasl_ssl_mb_s"] = repeat(
                runs,
                lambda: workloads.confluent_consume(
                    broker.port, int(200 * scale) * 1024 * 1024, security, secure_port
                ),
            )
    many = [workloads.many_producers(50, 10, int(4000 * scale)) for _ in range(runs)]
    figures["producers_50_msg_s"] = summarize([m["msg_s"] for m in many])
    figures["producers_50_errors"] = summarize([float(m["errors"]) for m in many])
    # The log cleaner: MB/s of dirty log, and another connection's p99 while it cleans.
    cleaned = cleaning.run(max(int(100 * scale), 5), 100_000, 100)
    figures["cleaning_mb_s"] = summarize([cleaned["mb_per_s"]])
    figures["cleaning_probe_p99_ms"] = summarize([cleaned["probe_during_cleaning_ms"]["p99"]])
    figures["cleaning_probe_idle_p99_ms"] = summarize([cleaned["probe_idle_ms"]["p99"]])
    if not args.skip_recovery:
        figures["recovery_1gib_sigkill_s"] = repeat(
            1, lambda: workloads.recovery_after_sigkill(int(1024 * scale))
        )
    results["figures"] = figures
    return write_results(results, "latest" if args.loop == "asyncio" else f"latest-{args.loop}")


def transaction_figures(figures: dict[str, Any], port: int, runs: int, scale: float) -> None:
    """Issue 14: the cost of a commit and a transactional producer's throughput."""
    rtt = [workloads.end_txn_round_trips(port, int(1000 * scale)) for _ in range(runs)]
    for key in ("p50", "p99"):
        figures[f"end_txn_{key}_ms"] = summarize([x[key] for x in rtt])
    figures["txn_produce_msg_s"] = repeat(
        runs, lambda: workloads.transactional_produce(port, int(200 * scale), 100, 1024)
    )


def write_results(results: dict[str, Any], stem: str) -> int:
    process.write_results(stem, results, markdown(results))
    return 0


def hostile_main(quick: bool) -> int:
    results = {"machine": machine("asyncio"), "when": time.strftime("%Y-%m-%d %H:%M")}
    results["figures"] = hostile.run_all(quick)
    RESULTS.mkdir(exist_ok=True)
    text = json.dumps(results, indent=2) + "\n"
    (RESULTS / "hostile.json").write_text(text)
    print(text)
    return 0


LABELS = {
    "startup_s": ("start-up to first acknowledged idempotent produce", "s", 3),
    "rss_after_start_mb": ("resident memory after start", "MB", 1),
    **{f"start_{key}": label for key, label in startup.FIGURES.items()},
    "confluent_produce_msg_s": (
        "confluent-kafka produce, 1 KiB, acks=all, idempotent, linger 5 ms",
        "msg/s",
        0,
    ),
    "kafka_python_produce_msg_s": ("kafka-python produce, 1 KiB, idempotent", "msg/s", 0),
    "aiokafka_produce_msg_s": ("aiokafka produce, 1 KiB, idempotent", "msg/s", 0),
    "latency_p50_ms": ("produce latency p50 (linger 0, sequential)", "ms", 3),
    "latency_p99_ms": ("produce latency p99", "ms", 3),
    "latency_p999_ms": ("produce latency p99.9", "ms", 3),
    "consume_mb_s": ("confluent-kafka consume, 1 KiB records", "MB/s", 0),
    "end_txn_p50_ms": ("EndTxn(commit) round trip p50, 1 partition, raw socket", "ms", 3),
    "end_txn_p99_ms": ("EndTxn(commit) round trip p99", "ms", 3),
    "txn_produce_msg_s": (
        "confluent-kafka transactional producer, 100 x 1 KiB per transaction",
        "msg/s",
        0,
    ),
    "confluent_produce_sasl_ssl_msg_s": (
        "confluent-kafka produce as above, over SASL_SSL (TLS, SCRAM-SHA-512)",
        "msg/s",
        0,
    ),
    "consume_sasl_ssl_mb_s": ("confluent-kafka consume as above, over SASL_SSL", "MB/s", 0),
    "rss_after_load_mb": ("resident memory after produce + consume load", "MB", 1),
    "producers_50_msg_s": ("50 idempotent producers, 10 partitions, aggregate", "msg/s", 0),
    "producers_50_errors": ("50 producers: delivery errors", "", 0),
    "cleaning_mb_s": ("log cleaner, dirty log cleaned (compacted topic, 100 B values)", "MB/s", 1),
    "cleaning_probe_p99_ms": ("another connection's ApiVersions p99 during the cleaning", "ms", 2),
    "cleaning_probe_idle_p99_ms": ("the same p99 on the idle broker", "ms", 2),
    "recovery_1gib_sigkill_s": (
        "restart after SIGKILL with 1 GiB on disk (spawn to serving)",
        "s",
        2,
    ),
}


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"Measured {results['when']} on {m['cores']} cores, "
        f"Python {m['python']}, {m['loop']} loop.",
        "",
        "| figure | median | spread (min-max) | runs | bar | Kafka 4.0.0 here "
        "| Tansu 0.6, same runs |",
        "|---|---|---|---|---|---|---|",
    ]
    tansu = results.get("tansu", {})
    for key, value in results["figures"].items():
        label, unit, digits = LABELS[key]
        fmt = f"{{:,.{digits}f}}"
        bar = BAR.get(key)
        bar_text = f"{bar[0]} {bar[1]:,}" if bar else ""
        kafka = bar[2] if bar else ""
        peer = tansu.get(key)
        peer_text = f"{fmt.format(peer['median'])} {unit}" if peer else ""
        lines.append(
            f"| {label} | {fmt.format(value['median'])} {unit} | "
            f"{fmt.format(value['min'])}-{fmt.format(value['max'])} | {value['runs']} | "
            f"{bar_text} | {kafka} | {peer_text} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
