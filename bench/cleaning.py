"""The log cleaner's throughput and what a cleaning costs other connections.

    python -m bench.cleaning [--mb 100] [--keys 100000] [--value-bytes 100]

A compacted one-partition topic is filled (segment.bytes 16 MiB, keys drawn at random, so
most records are superseded) by a broker with ``log.cleaner.enable=false``; a probe then
measures ApiVersions round trips on that idle broker (the baseline). A second broker on the
same data dir cleans it (min.cleanable.dirty.ratio 0.01): the figure is the dirty bytes over
the time from the broker accepting connections to the cleaner checkpoint naming the active
segment, and the probe's round trips during that time (another connection's p50/p99/max,
ms), and the broker's resident memory (with its worker processes) before and at its peak
during the cleaning. Results in bench/results/cleaning.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from bench.hostile import percentiles
from bench.process import BenchBroker
from bench.stall import Window
from bench.startup import tree_rss_mb
from protocol.records import build_batch
from storage.cleaner_checkpoint import read as read_checkpoint
from tests.support.produce import produce
from tests.support.raw_client import RawClient

TOPIC = "bench-compacted"
RESULTS = Path(__file__).parent / "results"


def fill(port: int, total: int, keys: int, value_bytes: int) -> int:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    configs = {
        "cleanup.policy": "compact",
        "segment.bytes": str(16 << 20),
        "min.cleanable.dirty.ratio": "0.01",
    }
    admin.create_topics([NewTopic(TOPIC, 1, 1, config=configs)])[TOPIC].result(30)
    rng = random.Random(7)
    value = b"x" * value_bytes
    written = 0
    with RawClient(port) as client:
        while written < total:
            items = [(b"key-%d" % rng.randrange(keys), value) for _ in range(4000)]
            batch = build_batch(items)
            answer = produce(client, TOPIC, batch)
            assert answer.error_code == 0, answer
            written += len(batch)
    return written


def segments_bytes(data: Path) -> tuple[int, int]:
    """(bytes of the partition's inactive segments, base of its active one)."""
    logs = sorted((data / f"{TOPIC}-0").glob("*.log"))
    return sum(p.stat().st_size for p in logs[:-1]), int(logs[-1].name.split(".")[0])


def run(mb: int, keys: int, value_bytes: int) -> dict[str, Any]:
    with BenchBroker(overrides={"log.cleaner.enable": "false"}) as idle:
        data = idle.data_dir
        written = fill(idle.port, mb << 20, keys, value_bytes)
        # Roll the last segment so everything written is cleanable: one more small batch
        # after segment.ms would do; a restart with segment.ms tiny is simpler.
        with Window(idle.port) as baseline:
            time.sleep(3)
        idle_trips = baseline.round_trips
        idle.stop()
        tmp = idle._tmp
        idle._tmp = None  # keep the data dir for the cleaning broker
    overrides = {"log.cleaner.backoff.ms": "100", "log.roll.ms": "1"}
    with BenchBroker(data_dir=data, overrides=overrides) as broker:
        # A record after log.roll.ms rolls the filled segment: all of it becomes dirty.
        with RawClient(broker.port) as client:
            produce(client, TOPIC, build_batch([(b"roll", b"r")]))
        dirty, active = segments_bytes(data)
        assert broker.proc is not None
        rss_before = peak_rss = tree_rss_mb(broker.proc.pid)
        started = time.perf_counter()
        with Window(broker.port) as window:
            while read_checkpoint(data).get((TOPIC, 0), -1) < active:
                peak_rss = max(peak_rss, tree_rss_mb(broker.proc.pid))
                time.sleep(0.01)
        took = time.perf_counter() - started
        after, _ = segments_bytes(data)
    if tmp is not None:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "written_mb": round(written / 2**20, 1),
        "dirty_mb": round(dirty / 2**20, 1),
        "cleaned_mb": round(after / 2**20, 1),
        "seconds": round(took, 2),
        "mb_per_s": round(dirty / 2**20 / took, 1),
        "keys": keys,
        "value_bytes": value_bytes,
        "rss_mb_before": round(rss_before, 1),
        "rss_mb_peak_cleaning": round(peak_rss, 1),
        "probe_idle_ms": idle_trips,
        "probe_during_cleaning_ms": window.round_trips,
    }


def table(result: dict[str, Any]) -> str:
    idle, busy = result["probe_idle_ms"], result["probe_during_cleaning_ms"]
    return "\n".join(
        [
            "| dirty MB | cleaned to MB | s | MB/s | probe p50/p99/max idle (ms) "
            "| probe p50/p99/max cleaning (ms) | RSS MB before / peak cleaning |",
            "|---|---|---|---|---|---|---|",
            f"| {result['dirty_mb']} | {result['cleaned_mb']} | {result['seconds']} "
            f"| {result['mb_per_s']} | {idle['p50']:.2f}/{idle['p99']:.2f}/{idle['max']:.2f} "
            f"| {busy['p50']:.2f}/{busy['p99']:.2f}/{busy['max']:.2f} "
            f"| {result['rss_mb_before']} / {result['rss_mb_peak_cleaning']} |",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    args = parser.parse_args()
    result = run(args.mb, args.keys, args.value_bytes)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cleaning.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "cleaning.md").write_text(table(result) + "\n")
    print(table(result))
    return 0


__all__ = ["percentiles", "run"]

if __name__ == "__main__":
    raise SystemExit(main())
