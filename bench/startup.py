"""Start and memory: how soon a freshly spawned broker answers, and how much memory it holds.

Four figures per broker, each from its own freshly spawned process:

- spawn -> first ApiVersions answer (a client polling the port, then asking, as every
  client's first request);
- spawn -> first acknowledged idempotent acks=all produce (ApiVersions, CreateTopics of one
  partition, Metadata until it has a leader, InitProducerId, Produce of one record);
- the CPU time (user + system) the broker process used by its first ApiVersions answer:
  what the start costs, which moves far less than the wall clock when other work shares
  the machine;
- resident memory (RSS, the process and its children) half a second after the first
  ApiVersions answer, before any topic exists.

With Tansu 0.6 (bench/tansu.py) the brokers take turns run by run, so load from elsewhere on
a shared machine falls on both alike; each figure is the median of the runs with its spread.
``python -m bench.startup [--runs N] [--no-tansu]`` prints the table and writes
bench/results/startup.json and startup.md; ``make bench`` reports the same figures.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.process import BenchBroker, rss_mb
from bench.tansu import TansuBroker
from protocol import codec
from protocol.header import decode_response_header
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.primitives import Reader
from protocol.records import build_batch
from protocol.schema import Api, Message
from tests.support.produce import create_topics_request, produce_request
from tests.support.raw_client import RawClient

RESULTS = Path(__file__).parent / "results"
SETTLE_S = 0.5  # RSS is read this long after the first ApiVersions answer
TOPIC = "start"

FIGURES = {
    "start_to_api_versions_s": ("spawn to first ApiVersions answer", "s", 3),
    "start_to_produce_s": ("spawn to first acknowledged idempotent produce", "s", 3),
    "cpu_to_api_versions_s": ("CPU time (user + system) to first ApiVersions answer", "s", 2),
    "rss_after_start_mb": ("resident memory after start (process and children)", "MB", 1),
}

# A broker under measurement: spawn() starts the process and returns its pid and port;
# close() stops it and removes what it wrote.
Spawner = Callable[[], "Spawned"]


class Spawned:
    def __init__(self, pid: int, port: int, close: Callable[[], None]) -> None:
        self.pid = pid
        self.port = port
        self.close = close


def broker_env() -> dict[str, str]:
    """The environment with Python's compiled-code cache on: an installed broker starts from
    its .pyc files, and with PYTHONDONTWRITEBYTECODE set every start would compile all of
    its source again (several times the whole start-up)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


class _Broker(BenchBroker):
    """A bench broker with the compiled-code cache on, run from this checkout or from the
    checkout at ``source`` (the directory -m runs from comes first on sys.path)."""

    def __init__(self, source: Path | None) -> None:
        super().__init__()
        self.source = source

    def spawn(self) -> subprocess.Popen[bytes]:
        self.proc = subprocess.Popen(self.command(), cwd=self.source, env=broker_env())
        return self.proc


def minikafka_spawner(source: Path | None = None) -> Spawner:
    """minikafka from this checkout, or from the checkout at ``source``."""

    def spawn() -> Spawned:
        broker = _Broker(source)
        proc = broker.spawn()
        return Spawned(proc.pid, broker.port, lambda: broker.__exit__(None, None, None))

    return spawn


spawn_minikafka = minikafka_spawner()


def spawn_tansu() -> Spawned:
    broker = TansuBroker()
    proc = broker.spawn()
    return Spawned(proc.pid, broker.port, lambda: broker.__exit__(None, None, None))


def tree_rss_mb(pid: int) -> float:
    """RSS of the process and its live children (minikafka's validation workers)."""
    total = rss_mb(pid)
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        children = []
    for child in children:
        try:
            total += rss_mb(int(child))
        except FileNotFoundError:
            continue
    return total


class FramedClient:
    """A raw client whose requests are encoded before the clock starts."""

    def __init__(self) -> None:
        self._encoder = RawClient.__new__(RawClient)
        self._encoder.client_id = "bench-start"
        self._next = 0
        self.sock: socket.socket | None = None

    def frame(self, api: Api, version: int, body: Message) -> tuple[bytes, Api, int, int]:
        self._next += 1
        return self._encoder.encode(api, version, body, self._next), api, version, self._next

    def connect(self, port: int, deadline: float) -> None:
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return
            except OSError:
                if time.perf_counter() > deadline:
                    raise
                time.sleep(0.001)

    def ask(self, framed: tuple[bytes, Api, int, int]) -> Message:
        data, api, version, correlation_id = framed
        assert self.sock is not None
        self.sock.sendall(data)
        (length,) = struct.unpack(">i", self._read(4))
        reader = Reader(self._read(length))
        got = decode_response_header(reader, api.response_header_version(version))
        assert got == correlation_id, (got, correlation_id)
        return codec.decode(api.response, version, api.is_flexible(version), reader)

    def _read(self, n: int) -> bytes:
        assert self.sock is not None
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the broker")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


def api_versions_request(client: FramedClient) -> tuple[bytes, Api, int, int]:
    body = Message(client_software_name="bench", client_software_version="1")
    return client.frame(API_VERSIONS, 3, body)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used (Linux /proc, clock-tick resolution).
    On a machine shared with other work this moves far less than the wall-clock figures."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_to_api_versions(spawn: Spawner) -> tuple[float, float, float]:
    """(seconds from spawn to the first ApiVersions answer, CPU seconds the broker used by
    then, MB resident after start)."""
    client = FramedClient()
    request = api_versions_request(client)
    started = time.perf_counter()
    broker = spawn()
    try:
        client.connect(broker.port, started + 30)
        answer = client.ask(request)
        elapsed = time.perf_counter() - started
        cpu = cpu_s(broker.pid)
        assert answer.error_code == 0, answer
        time.sleep(SETTLE_S)
        return elapsed, cpu, tree_rss_mb(broker.pid)
    finally:
        client.close()
        broker.close()


def time_to_produce(spawn: Spawner) -> float:
    """Seconds from spawn to the first acknowledged idempotent acks=all produce."""
    client = FramedClient()
    hello = api_versions_request(client)
    create = client.frame(CREATE_TOPICS, 5, create_topics_request(TOPIC, 1, 30000))
    metadata = Message(topics=[Message(name=TOPIC)], allow_auto_topic_creation=False)
    init = Message(transactional_id=None, transaction_timeout_ms=60000)
    init_request = client.frame(INIT_PRODUCER_ID, 4, init)
    started = time.perf_counter()
    broker = spawn()
    try:
        client.connect(broker.port, started + 30)
        assert client.ask(hello).error_code == 0
        created = client.ask(create).topics[0].error_code
        assert created == 0, f"CreateTopics answered {created}"
        while True:  # brokers differ in whether a new topic has its leader at once
            meta = client.ask(client.frame(METADATA, 12, metadata)).topics[0]
            if meta.error_code == 0 and meta.partitions and meta.partitions[0].leader_id >= 0:
                break
            assert time.perf_counter() < started + 30, meta
            time.sleep(0.001)
        producer = client.ask(init_request)
        assert producer.error_code == 0, producer
        data = build_batch(
            [(None, b"first")],
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            base_sequence=0,
        )
        answer = client.ask(client.frame(PRODUCE, 9, produce_request(TOPIC, data, acks=-1)))
        part = answer.responses[0].partition_responses[0]
        elapsed = time.perf_counter() - started
        assert part.error_code == 0, part
        return elapsed
    finally:
        client.close()
        broker.close()


def summarize(samples: list[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "runs": len(samples),
    }


def warm(spawn: Spawner) -> None:
    """One start not counted: the interpreter, binary and imported files into the page cache."""
    time_to_api_versions(spawn)


def measure(
    runs: int, tansu: bool = True, others: dict[str, Path] | None = None
) -> dict[str, dict[str, dict[str, Any]]]:
    """The figures per broker ("minikafka", each of ``others`` (name: another checkout),
    and "tansu" when its binary can be had)."""
    spawners: dict[str, Spawner] = {"minikafka": spawn_minikafka}
    for name, source in (others or {}).items():
        spawners[name] = minikafka_spawner(source)
        warm(spawners[name])
    if tansu:
        try:
            warm(spawn_tansu)
            spawners["tansu"] = spawn_tansu
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"Tansu not measured: {e}")
    warm(spawn_minikafka)
    samples: dict[str, dict[str, list[float]]] = {
        name: {key: [] for key in FIGURES} for name in spawners
    }
    order = list(spawners)
    for run in range(runs):
        # Alternate which broker goes first, so neither always follows the other.
        for name in order if run % 2 == 0 else order[::-1]:
            api_s, cpu, rss = time_to_api_versions(spawners[name])
            samples[name]["start_to_api_versions_s"].append(api_s)
            samples[name]["cpu_to_api_versions_s"].append(cpu)
            samples[name]["rss_after_start_mb"].append(rss)
        for name in order[::-1] if run % 2 == 0 else order:
            samples[name]["start_to_produce_s"].append(time_to_produce(spawners[name]))
    return {
        name: {key: summarize(values) for key, values in per.items()}
        for name, per in samples.items()
    }


def markdown(figures: dict[str, dict[str, dict[str, Any]]], when: str) -> str:
    names = list(figures)
    peer = "tansu" in figures
    runs = next(iter(figures.values()))["start_to_api_versions_s"]["runs"]
    lines = [
        f"Measured {when}: {runs} alternating runs, each figure from a freshly spawned "
        "process. Median (min-max).",
        "",
        "| figure | " + " | ".join(names) + (" | minikafka / tansu |" if peer else " |"),
        "|---|" + "---|" * len(names) + ("---|" if peer else ""),
    ]
    for key, (label, unit, digits) in FIGURES.items():
        fmt = f"{{:,.{digits}f}}"
        cells = [
            f"{fmt.format(v['median'])} {unit} ({fmt.format(v['min'])}-{fmt.format(v['max'])})"
            for v in (figures[name][key] for name in names)
        ]
        row = f"| {label} | " + " | ".join(cells) + " |"
        if peer:
            ours, theirs = (figures[n][key]["median"] for n in ("minikafka", "tansu"))
            row += f" {ours / theirs:.2f} (lower is better) |" if theirs else " - |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-tansu", action="store_true")
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="also measure the broker of another checkout (e.g. before=/tmp/before)",
    )
    parser.add_argument("--out", default="startup", help="results file stem in bench/results")
    args = parser.parse_args(argv)
    when = time.strftime("%Y-%m-%d %H:%M")
    others = {name: Path(path) for name, _, path in (a.partition("=") for a in args.also)}
    figures = measure(args.runs, tansu=not args.no_tansu, others=others)
    RESULTS.mkdir(exist_ok=True)
    result = {"when": when, "figures": figures}
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2) + "\n")
    table = markdown(figures, when)
    (RESULTS / f"{args.out}.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
