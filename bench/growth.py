"""How the cost grows with the number of partitions: topics x partitions from 10 to 2,000.

For each size a fresh broker (minikafka, and Tansu 0.6 beside it unless --no-tansu) gets
``size / 10`` topics of 10 partitions in CreateTopics requests of up to 50 topics; then:

- create time: from the first CreateTopics request sent to the last answered;
- Metadata of all topics (v12, topics null): the median round trip over 20 requests, after
  one not counted (the first answer may build what later ones reuse);
- resident memory (the process and its children) after the topics exist.

The growth exponent of each figure is the slope of log(figure) over log(partitions), least
squares over the sizes: 1 is linear, below 1 better than linear. ``python -m bench.growth
[--sizes 10,100,500,1000,2000] [--no-tansu]`` writes bench/results/growth-partitions.json
and .md and prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.startup import (
    FramedClient,
    Spawned,
    Spawner,
    spawn_minikafka,
    spawn_tansu,
    tree_rss_mb,
)
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.metadata import METADATA
from protocol.schema import Message

RESULTS = Path(__file__).parent / "results"
PARTITIONS_PER_TOPIC = 10
TOPICS_PER_REQUEST = 50
METADATA_ROUNDS = 20

FIGURES = {
    "create_s": ("create time (all topics)", "s", 3),
    "metadata_all_ms": ("Metadata of all topics, round trip (median of 20)", "ms", 2),
    "rss_mb": ("resident memory with the topics", "MB", 1),
}


def create_request(names: list[str]) -> Message:
    return Message(
        topics=[
            Message(
                name=name,
                num_partitions=PARTITIONS_PER_TOPIC,
                replication_factor=1,
                assignments=[],
                configs=[],
            )
            for name in names
        ],
        timeout_ms=120_000,
        validate_only=False,
    )


def one_size(spawn: Spawner, partitions: int) -> dict[str, float]:
    topics = [f"grow-{i:05d}" for i in range(max(1, partitions // PARTITIONS_PER_TOPIC))]
    client = FramedClient()
    broker: Spawned = spawn()
    try:
        client.connect(broker.port, time.perf_counter() + 60)
        assert client.sock is not None
        client.sock.settimeout(300)  # a CreateTopics of 500 partitions takes seconds here
        requests = [
            client.frame(CREATE_TOPICS, 5, create_request(topics[i : i + TOPICS_PER_REQUEST]))
            for i in range(0, len(topics), TOPICS_PER_REQUEST)
        ]
        started = time.perf_counter()
        for request in requests:
            answer = client.ask(request)
            codes = {t.error_code for t in answer.topics}
            assert codes == {0}, f"CreateTopics answered {codes}"
        create_s = time.perf_counter() - started
        everything = Message(
            topics=None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        seen = client.ask(client.frame(METADATA, 12, everything))
        assert len(seen.topics) >= len(topics), (len(seen.topics), len(topics))
        rounds = []
        for _ in range(METADATA_ROUNDS):
            request = client.frame(METADATA, 12, everything)
            t0 = time.perf_counter()
            client.ask(request)
            rounds.append((time.perf_counter() - t0) * 1000)
        return {
            "create_s": create_s,
            "metadata_all_ms": statistics.median(rounds),
            "rss_mb": tree_rss_mb(broker.pid),
        }
    finally:
        client.close()
        broker.close()


def exponent(sizes: list[int], values: list[float]) -> float:
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(v, 1e-9)) for v in values]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


OneSize = Callable[[Spawner, int], dict[str, float]]


def curves(
    sizes: list[int],
    one_size: OneSize,
    figures: dict[str, tuple[str, str, int]],
    tansu: bool,
    minikafka: Spawner = spawn_minikafka,
) -> dict[str, Any]:
    """``one_size`` at every size for minikafka and (when it can be measured) Tansu, the
    brokers taking turns at each size, after one unmeasured round each; with the exponents."""
    spawners: dict[str, Spawner] = {"minikafka": minikafka}
    if tansu:
        try:
            one_size(spawn_tansu, sizes[0])
            spawners["tansu"] = spawn_tansu
        except (OSError, AssertionError, subprocess.CalledProcessError) as e:
            print(f"Tansu not measured: {e}")
    one_size(minikafka, sizes[0])  # warm: the files each start reads into the cache
    found: dict[str, dict[str, list[float]]] = {
        name: {key: [] for key in figures} for name in spawners
    }
    for size in sizes:
        for name, spawn in spawners.items():
            for key, value in one_size(spawn, size).items():
                found[name][key].append(value)
    return {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "sizes": sizes,
        "curves": found,
        "exponents": {
            name: {key: exponent(sizes, values) for key, values in per.items()}
            for name, per in found.items()
        },
    }


def write(
    out: str,
    result: dict[str, Any],
    how: str,
    dimension: str,
    figures: dict[str, tuple[str, str, int]],
) -> None:
    """bench/results/<out>.json and .md (``out`` may be a path elsewhere); prints the table."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{out}.json").write_text(json.dumps(result, indent=2) + "\n")
    table = markdown(result, how, dimension, figures)
    (RESULTS / f"{out}.md").write_text(table)
    print(table)


def markdown(
    result: dict[str, Any],
    how: str,
    dimension: str,
    figures: dict[str, tuple[str, str, int]] = FIGURES,
) -> str:
    """The curves as a table: a row per figure and broker, a column per size of
    ``dimension`` (the sizes under that key, or "sizes", in ``result``), then the exponent."""
    sizes = result.get("sizes") or result[dimension]
    lines = [
        f"Measured {result['when']}: {how}; growth exponent = slope of log(figure) over "
        f"log({dimension}) (1 linear, below 1 better; for a rate, 0 is flat).",
        "",
        "| figure | broker | " + " | ".join(f"{s:,} {dimension}" for s in sizes) + " | exponent |",
        "|---|---|" + "---|" * len(sizes) + "---|",
    ]
    for key, (label, unit, digits) in figures.items():
        for name, per in result["curves"].items():
            fmt = f"{{:,.{digits}f}} {unit}"
            cells = " | ".join(fmt.format(v) for v in per[key])
            lines.append(f"| {label} | {name} | {cells} | {result['exponents'][name][key]:.2f} |")
    return "\n".join(lines) + "\n"


def command(
    argv: list[str] | None,
    name: str,
    one_size: OneSize,
    figures: dict[str, tuple[str, str, int]],
    *,
    sizes: str,
    dimension: str,
    how: str,
    out: str,
    minikafka: Spawner = spawn_minikafka,
    check: Callable[[list[int]], str | None] = lambda sizes: None,
) -> int:
    """A curve's command line: ``python -m bench.<name> [--sizes ...] [--no-tansu] [--out]``;
    ``check`` names what the sizes need and this machine lacks, if anything."""
    parser = argparse.ArgumentParser(prog=f"python -m bench.{name}")
    parser.add_argument("--sizes", default=sizes, help=dimension)
    parser.add_argument("--no-tansu", action="store_true")
    parser.add_argument("--out", default=out)
    args = parser.parse_args(argv)
    chosen = [int(s) for s in args.sizes.split(",")]
    problem = check(chosen)
    if problem:
        parser.error(problem)
    result = curves(chosen, one_size, figures, not args.no_tansu, minikafka=minikafka)
    write(args.out, result, how, dimension, figures)
    return 0


def main(argv: list[str] | None = None) -> int:
    return command(
        argv,
        "growth",
        one_size,
        FIGURES,
        sizes="10,100,500,1000,2000",
        dimension="partitions",
        how=f"a fresh broker per size, topics of {PARTITIONS_PER_TOPIC} partitions",
        out="growth-partitions",
    )


if __name__ == "__main__":
    raise SystemExit(main())
