"""How a restart's cost grows with the data on disk: 1 to 100 GiB of segments.

One partition of 1 GiB (256 MiB segments, 64 x 1 KiB records per batch, idempotent) is
written once through a broker and stopped cleanly. For each size N a data directory gets a
topic of N partitions whose segment, index and snapshot files are hard links to that one
partition's (so 100 GiB of segments take 1 GiB of disk; every partition's log is complete and
consistent on its own). A broker is then started on it twice, after a clean shutdown and
after a SIGKILL, and measured:

- start to the first ApiVersions answer, and to a ListOffsets of the last partition that
  answers its full log end (every partition open);
- bytes the process read through read() calls by then (/proc/<pid>/io rchar): a start that
  reads the data shows N GiB here, whether or not the page cache held it;
- resident memory once serving.

Kafka's LogManager trusts the indexes after a clean shutdown and, after a crash, checks only
what lies past each partition's recovery point: neither case reads the segments below it.
Tansu is not measured: it runs here with memory storage, which keeps nothing across a
restart. ``python -m bench.growth_restart [--sizes 1,10,50,100]`` writes
bench/results/growth-restart.json and .md and prints the table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench.growth import exponent, write
from bench.ingest import build_requests, check_responses, create_topic, send_pipelined
from bench.process import BenchBroker, wait_accepting
from bench.startup import FramedClient, api_versions_request, broker_env, tree_rss_mb
from protocol.messages.list_offsets import LIST_OFFSETS
from protocol.schema import Message

SEGMENT_BYTES = 256 * 1024 * 1024
TEMPLATE_BATCHES = 16_384  # x 64 x 1 KiB records: about 1 GiB
TOPIC = "restart"
OVERRIDES = {"log.segment.bytes": str(SEGMENT_BYTES), "auto.create.topics.enable": "false"}

FIGURES = {
    "clean_api_versions_s": ("clean restart: start to first ApiVersions answer", "s", 3),
    "clean_all_open_s": ("clean restart: start to last partition's log end answered", "s", 3),
    "clean_read_mb": ("clean restart: bytes read by then", "MB", 1),
    "crash_api_versions_s": ("after SIGKILL: start to first ApiVersions answer", "s", 3),
    "crash_all_open_s": ("after SIGKILL: start to last partition's log end answered", "s", 3),
    "crash_read_mb": ("after SIGKILL: bytes read by then", "MB", 1),
    "rss_mb": ("resident memory serving (after SIGKILL)", "MB", 1),
}


def read_bytes_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1]) / 1e6
    return float("nan")


def stop_cleanly(broker: BenchBroker) -> None:
    assert broker.proc is not None
    broker.proc.send_signal(signal.SIGTERM)
    code = broker.proc.wait(120)
    assert code == 0, f"the broker did not stop cleanly: exit {code}"


def make_template(
    root: Path,
    overrides: dict[str, str] = OVERRIDES,
    batches: int = TEMPLATE_BATCHES,
    base_timestamp: int | None = None,
) -> tuple[Path, int]:
    """One partition (about 1 GiB by default) written through a broker; its directory and
    log end."""
    broker = BenchBroker(data_dir=root / "template", overrides=overrides)
    broker.proc = subprocess.Popen(broker.command(), env=broker_env())
    try:
        wait_accepting(broker.port, time.perf_counter() + 60)
        create_topic(broker.port, "seed")
        frames, _ = build_requests(broker.port, "seed", batches, base_timestamp=base_timestamp)
        _, responses = send_pipelined(broker.port, frames, in_flight=16)
        check_responses(responses, 1)
    finally:
        stop_cleanly(broker)
    return root / "template" / "seed-0", batches * 64


def make_data_dir(
    root: Path, template: Path, partitions: int, overrides: dict[str, str] = OVERRIDES
) -> Path:
    """A data directory with a topic of ``partitions`` partitions, each a hard-linked copy of
    ``template``'s segments (the topic itself created by a broker, so ids are its own)."""
    data = root / f"data-{partitions}"
    broker = BenchBroker(data_dir=data, overrides=overrides)
    broker.proc = subprocess.Popen(broker.command(), env=broker_env())
    try:
        wait_accepting(broker.port, time.perf_counter() + 60)
        create_topic(broker.port, TOPIC, partitions)
    finally:
        stop_cleanly(broker)
    segment_files = [f for f in template.iterdir() if f.name != "partition.metadata"]
    for p in range(partitions):
        d = data / f"{TOPIC}-{p}"
        for old in d.iterdir():
            if old.name != "partition.metadata":
                old.unlink()
        for f in segment_files:
            os.link(f, d / f.name)
    return data


def start_and_measure(
    data: Path, partitions: int, log_end: int
) -> tuple[BenchBroker, dict[str, float]]:
    client = FramedClient()
    hello = api_versions_request(client)
    last = Message(
        replica_id=-1,
        isolation_level=0,
        topics=[
            Message(name=TOPIC, partitions=[Message(partition_index=partitions - 1, timestamp=-1)])
        ],
    )
    ask_end = client.frame(LIST_OFFSETS, 5, last)
    broker = BenchBroker(data_dir=data, overrides=OVERRIDES)
    started = time.perf_counter()
    broker.proc = subprocess.Popen(broker.command(), env=broker_env())
    client.connect(broker.port, started + 600)
    try:
        assert client.ask(hello).error_code == 0
        first = time.perf_counter() - started
        deadline = started + 600
        while True:
            answer = client.ask(ask_end).topics[0].partitions[0]
            if answer.error_code == 0 and answer.offset == log_end:
                break
            assert time.perf_counter() < deadline, f"never served the log end: {answer}"
            time.sleep(0.01)
        all_open = time.perf_counter() - started
        figures = {
            "api_versions_s": first,
            "all_open_s": all_open,
            "read_mb": read_bytes_mb(broker.proc.pid),
        }
        figures["rss_mb"] = tree_rss_mb(broker.proc.pid)
    finally:
        client.close()
    return broker, figures


def one_size(root: Path, template: Path, log_end: int, gib: int) -> dict[str, float]:
    data = make_data_dir(root, template, gib)
    try:
        broker, clean = start_and_measure(data, gib, log_end)
        assert broker.proc is not None
        broker.proc.kill()
        broker.proc.wait(60)
        broker, crash = start_and_measure(data, gib, log_end)
        stop_cleanly(broker)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    figures = {f"clean_{k}": v for k, v in clean.items() if k != "rss_mb"}
    figures |= {f"crash_{k}": v for k, v in crash.items() if k != "rss_mb"}
    figures["rss_mb"] = crash["rss_mb"]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.growth_restart")
    parser.add_argument("--sizes", default="1,10,50,100", help="GiB of segments")
    parser.add_argument("--out", default="growth-restart")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="minikafka-restart-") as tmp:
        root = Path(tmp)
        template, log_end = make_template(root)
        found: dict[str, list[float]] = {key: [] for key in FIGURES}
        one_size(root, template, log_end, sizes[0])  # warm: the files each start reads
        for gib in sizes:
            for key, value in one_size(root, template, log_end, gib).items():
                found[key].append(value)
    result = {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "GiB": sizes,
        "curves": {"minikafka": found},
        "exponents": {"minikafka": {k: exponent(sizes, v) for k, v in found.items()}},
    }
    how = (
        "a topic of one 1 GiB partition per GiB (256 MiB segments, hard links of one partition "
        "written through the broker), started after a clean shutdown and after a SIGKILL; "
        "Tansu not measured (memory storage keeps nothing across a restart)"
    )
    write(args.out, result, how, "GiB", FIGURES)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
