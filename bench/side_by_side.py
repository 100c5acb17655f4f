"""`make bench ARGS=--ingest`: the broker-bound ingest ceiling and produce latency (issue 19),
for minikafka and, with --vs-tansu, for Tansu 0.6 in the same run, reported as ratios.

Runs alternate between the brokers so that load from elsewhere on the machine falls on both
alike; each figure is the median of the runs with its spread. Next to MB/s, each broker's
CPU time over the same runs (MB per CPU-second, CPU per request): on a machine shared with
other work the wall-clock figures move with that work, the CPU cost far less. Writes
bench/results/ingest.json and bench/results/ingest.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import ExitStack
from typing import Any

from bench import ingest
from bench.process import BenchBroker, write_results
from bench.tansu import TansuBroker

# Higher is better for ingest, lower for latency: the ratio is always "how many times
# better minikafka is" (above 1 means minikafka wins).
FIGURES = {
    "ingest_mb_s": ("ingest, idempotent acks=all, 5 in flight", "MB/s", True),
    "ingest_mb_per_cpu_s": ("ingest per broker CPU-second (same runs)", "MB", True),
    "cpu_us_per_request": ("broker CPU per Produce request (same runs)", "us", False),
    "process_cpu_us_per_request": (
        "of which the broker process (event loop), without worker processes",
        "us",
        False,
    ),
    "latency_p50_ms": ("confluent-kafka produce latency p50, linger 0, acks=all", "ms", False),
    "latency_p99_ms": ("confluent-kafka produce latency p99", "ms", False),
}


def summarize(samples: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {}
    # The batch shape (the module's constants; check_responses reads them too).
    ingest.RECORDS_PER_BATCH = args.records_per_batch
    ingest.RECORD_SIZE = args.record_size
    with ExitStack() as stack:
        brokers: dict[str, tuple[int, int]] = {}
        overrides = {
            "minikafka.record.validation": "records",
            "log.level": "WARNING",
            # Workers started and ready before the first run (none started at all with 0).
            "minikafka.validation.workers": str(args.workers),
            "minikafka.validation.worker.min.records": str(args.worker_min_records),
            "minikafka.validation.workers.eager": "true",
        }
        ours = stack.enter_context(BenchBroker(overrides=overrides))
        assert ours.proc is not None
        brokers["minikafka"] = (ours.port, ours.proc.pid)
        if args.vs_tansu:
            tansu = stack.enter_context(TansuBroker())
            assert tansu.proc is not None
            brokers["tansu"] = (tansu.port, tansu.proc.pid)
        for name in brokers:
            samples[name] = {key: [] for key in FIGURES}
        for _ in range(args.runs):
            for name, (port, pid) in brokers.items():
                figure = ingest.ingest_mb_s(port, args.requests, args.in_flight, pid)
                samples[name]["ingest_mb_s"].append(figure["mb_s"])
                samples[name]["ingest_mb_per_cpu_s"].append(figure["mb_per_cpu_s"])
                samples[name]["cpu_us_per_request"].append(figure["cpu_us_per_request"])
                samples[name]["process_cpu_us_per_request"].append(
                    figure["process_cpu_us_per_request"]
                )
            for name, (port, _) in brokers.items():
                lat = ingest.confluent_latency(port, args.latency_count)
                samples[name]["latency_p50_ms"].append(lat["p50"])
                samples[name]["latency_p99_ms"].append(lat["p99"])
    figures = {
        name: {key: summarize(values) for key, values in per.items()}
        for name, per in samples.items()
    }
    result: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "runs": args.runs,
        "requests_per_run": args.requests,
        "in_flight": args.in_flight,
        "latency_samples_per_run": args.latency_count,
        "validation_workers": args.workers,
        "records_per_batch": args.records_per_batch,
        "record_size": args.record_size,
        "worker_min_records": args.worker_min_records,
        "figures": figures,
    }
    if "tansu" in figures:
        result["ratio_vs_tansu"] = {
            key: ratio(figures["minikafka"][key]["median"], figures["tansu"][key]["median"], up)
            for key, (_, _, up) in FIGURES.items()
        }
    return result


def ratio(ours: float, theirs: float, higher_is_better: bool) -> float:
    return ours / theirs if higher_is_better else theirs / ours


def markdown(result: dict[str, Any]) -> str:
    names = list(result["figures"])
    lines = [
        f"Measured {result['when']}: {result['runs']} alternating runs, "
        f"{result['requests_per_run']} requests of {result.get('records_per_batch', 64)} x "
        f"{result.get('record_size', 1024)} B per ingest run, "
        f"{result['latency_samples_per_run']} sequential produces per latency run; "
        f"minikafka.validation.workers={result.get('validation_workers', '-')}, "
        f"worker.min.records={result.get('worker_min_records', '-')}. "
        "Median (min-max).",
        "",
        "| figure | " + " | ".join(names) + (" | minikafka / tansu |" if len(names) > 1 else " |"),
        "|---|" + "---|" * len(names) + ("---|" if len(names) > 1 else ""),
    ]
    for key, (label, unit, up) in FIGURES.items():
        cells = []
        for name in names:
            v = result["figures"][name][key]
            cells.append(f"{v['median']:,.3g} {unit} ({v['min']:,.3g}-{v['max']:,.3g})")
        row = f"| {label} | " + " | ".join(cells) + " |"
        if "ratio_vs_tansu" in result:
            better = "higher" if up else "lower"
            row += f" {result['ratio_vs_tansu'][key]:.2f}x ({better} is better) |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make bench ARGS=--ingest")
    parser.add_argument("--ingest", action="store_true", help="(selects this mode)")
    parser.add_argument("--vs-tansu", action="store_true", help="measure Tansu 0.6 alongside")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=3000, help="Produce requests per run")
    parser.add_argument("--in-flight", type=int, default=5)
    parser.add_argument("--latency-count", type=int, default=3000)
    parser.add_argument(
        "--workers", type=int, default=-1, help="minikafka.validation.workers (-1: from cores)"
    )
    parser.add_argument(
        "--worker-min-records",
        type=int,
        default=256,
        help="minikafka.validation.worker.min.records (the workload's batches hold 64)",
    )
    parser.add_argument("--records-per-batch", type=int, default=64)
    parser.add_argument("--record-size", type=int, default=1024, help="bytes per record value")
    parser.add_argument("--out", default="ingest", help="results file stem in bench/results")
    args = parser.parse_args(argv)
    result = run(args)
    write_results(args.out, result, markdown(result))
    return 0
