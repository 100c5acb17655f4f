"""How retention's cost grows with the segments it deletes: about 270 to 4,400 segments.

One partition of 256 MiB in 1 MiB segments, its records stamped two days ago, is written once
through a broker. For each size N a data directory gets a topic of N partitions, each a
hard-linked copy of that partition (bench.growth_restart), and a broker starts on it with
``log.retention.ms`` one day, ``log.retention.check.interval.ms`` 500 and
``log.segment.delete.delay.ms`` 0: every segment has expired.
Measured from the first ApiVersions answer:

- until ListOffsets (earliest) of every partition answers its log end (the active segment
  expired too: Kafka rolls an empty one and deletes the rest);
- until the expired segments' files are gone from every partition directory;
- the p99 and maximum round trip of a probe (ApiVersions, one after another on another
  connection) meanwhile: whether deleting blocks other clients;
- resident memory afterwards.

Tansu is not measured: its memory storage starts empty. ``python -m bench.growth_retention
[--sizes 1,4,16]`` (partitions; each segment keeps a descriptor open, so 40 needs
a hard open-file limit above 33,000) writes bench/results/growth-retention.json and .md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from bench.growth import exponent, write
from bench.growth_restart import make_data_dir, make_template, stop_cleanly
from bench.process import BenchBroker
from bench.startup import FramedClient, api_versions_request, broker_env, tree_rss_mb
from protocol.messages.list_offsets import LIST_OFFSETS
from protocol.schema import Message

TOPIC = "restart"  # the name bench.growth_restart.make_data_dir gives the topic
DAY_MS = 24 * 3600 * 1000
TEMPLATE_BATCHES = 4_096  # x 64 x 1 KiB records: about 256 MiB
# Writing the template and creating each size's topic: no retention yet.
WRITING = {"log.segment.bytes": str(1024 * 1024), "auto.create.topics.enable": "false"}
OVERRIDES = {
    **WRITING,
    "log.retention.ms": str(DAY_MS),
    "log.retention.check.interval.ms": "500",
    "log.segment.delete.delay.ms": "0",
}

FIGURES = {
    "segments": ("segments deleted", "", 0),
    "log_start_s": ("first answer to every log start moved", "s", 2),
    "files_gone_s": ("first answer to the expired files gone", "s", 2),
    "probe_p99_ms": ("probe round trip p99 meanwhile", "ms", 1),
    "probe_max_ms": ("probe round trip max meanwhile", "ms", 1),
    "rss_mb": ("resident memory afterwards", "MB", 1),
}


class Probe(threading.Thread):
    """ApiVersions round trips, one after another, until stopped."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.client = FramedClient()
        self.client.connect(port, time.perf_counter() + 30)
        self.request = api_versions_request(self.client)
        self.times_ms: list[float] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            t0 = time.perf_counter()
            self.client.ask(self.request)
            self.times_ms.append((time.perf_counter() - t0) * 1000)

    def stop(self) -> list[float]:
        self.stopping.set()
        self.join(30)
        self.client.close()
        return sorted(self.times_ms)


def segment_files(data: Path, partitions: int) -> int:
    return sum(len(list((data / f"{TOPIC}-{p}").glob("*.log"))) for p in range(partitions))


def one_size(root: Path, template: Path, log_end: int, partitions: int) -> dict[str, float]:
    data = make_data_dir(root, template, partitions, WRITING)
    segments = segment_files(data, partitions)
    client = FramedClient()
    earliest = client.frame(
        LIST_OFFSETS,
        5,
        Message(
            replica_id=-1,
            isolation_level=0,
            topics=[
                Message(
                    name=TOPIC,
                    partitions=[
                        Message(partition_index=p, timestamp=-2) for p in range(partitions)
                    ],
                )
            ],
        ),
    )
    broker = BenchBroker(data_dir=data, overrides=OVERRIDES)
    broker.proc = subprocess.Popen(broker.command(), env=broker_env())
    try:
        client.connect(broker.port, time.perf_counter() + 120)
        client.ask(api_versions_request(client))
        started = time.perf_counter()
        probe = Probe(broker.port)
        probe.start()
        deadline = started + 600
        log_start_s = files_gone_s = 0.0
        while not (log_start_s and files_gone_s):
            assert time.perf_counter() < deadline, "retention did not finish in 10 minutes"
            if not log_start_s:
                starts = {p.offset for p in client.ask(earliest).topics[0].partitions}
                if starts == {log_end}:
                    log_start_s = time.perf_counter() - started
            if not files_gone_s and segment_files(data, partitions) == partitions:
                files_gone_s = time.perf_counter() - started
            time.sleep(0.05)
        probe_ms = probe.stop()
        rss = tree_rss_mb(broker.proc.pid)
        stop_cleanly(broker)
    finally:
        client.close()
        broker.kill()
        shutil.rmtree(data, ignore_errors=True)
    return {
        "segments": float(segments),
        "log_start_s": log_start_s,
        "files_gone_s": files_gone_s,
        "probe_p99_ms": probe_ms[int(len(probe_ms) * 0.99)] if probe_ms else float("nan"),
        "probe_max_ms": probe_ms[-1] if probe_ms else float("nan"),
        "rss_mb": rss,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.growth_retention")
    parser.add_argument("--sizes", default="1,4,16", help="partitions")
    parser.add_argument("--out", default="growth-retention")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    old = int(time.time() * 1000) - 2 * DAY_MS
    with tempfile.TemporaryDirectory(prefix="minikafka-retention-") as tmp:
        root = Path(tmp)
        template, base = make_template(root, WRITING, TEMPLATE_BATCHES, base_timestamp=old)
        found: dict[str, list[float]] = {key: [] for key in FIGURES}
        one_size(root, template, base, sizes[0])  # warm
        for partitions in sizes:
            for key, value in one_size(root, template, base, partitions).items():
                found[key].append(value)
    segments = [int(s) for s in found["segments"]]
    result = {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "partitions": sizes,
        "curves": {"minikafka": found},
        "exponents": {
            "minikafka": {k: exponent(segments, v) for k, v in found.items()},
        },
    }
    print("segments deleted at each size:", segments, "median", statistics.median(segments))
    how = (
        "partitions of 256 MiB in 1 MiB segments stamped two days ago (hard links of one "
        "partition written through the broker), retention.ms one day; exponents over the "
        "segments deleted; Tansu not measured (memory storage starts empty)"
    )
    write(args.out, result, how, "partitions", FIGURES)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
