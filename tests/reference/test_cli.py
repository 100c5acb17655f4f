"""Kafka's own command-line tools (the Java main classes behind bin/*.sh, from Kafka's jars)
run the same flow against Apache Kafka and against us: each step's exit code, stdout and
stderr must match once ids, ports, paths and timings are masked. A difference we keep is
listed in KNOWN with its reason (and in docs/REFERENCE.md); one that no longer shows fails.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer

from tests.reference.compare import normalise_text
from tests.reference.conftest import REFERENCE_VERSION
from tests.support.kafka_reference import run_tool
from tests.support.polling import until_sync

Result = subprocess.CompletedProcess[str]
# A tool's JVM takes 3-8 s to start on a loaded 2-core machine; a flow runs a dozen or more.
pytestmark = pytest.mark.timeout(900)


@dataclass
class Step:
    """One tool run: ``args`` formatted with {bs} (bootstrap) and {dir} (a work directory)."""

    tool: str
    args: str
    stdin: str | None = None
    # Re-run (polling, both sides) until this holds: Kafka applies metadata changes
    # asynchronously after answering, so a describe right after an alter may lag.
    until: Callable[[Result], bool] | None = None
    masks: tuple[tuple[str, str], ...] = ()
    label: str = ""
    # Kafka prints some lists in no defined order (from a hash map): compare them sorted.
    sort: bool = False
    # Differences we keep: (regular expression of the lines that differ, reason). Lines
    # matching are dropped from both outputs; one that matches neither fails the test.
    known: tuple[tuple[str, str], ...] = ()

    def name(self) -> str:
        return self.label or f"{self.tool} {self.args}"[:90]


@dataclass
class Py:
    """A step done with a client library (e.g. a transactional producer the tools lack)."""

    run: Callable[[str], None]
    label: str


@dataclass
class Flow:
    steps: list[Step | Py]
    files: dict[str, str] = field(default_factory=dict)


# Lines of a tool's log output on stderr start with a timestamp; its level and message stay.
_LOG_PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\] ", re.M)
# Figures a perf test measures.
_RATES = (r"\d+(\.\d+)?", "<n>")
# Wall-clock times in milliseconds, and a transaction's duration so far (column 8).
_TIME = (r"\b1\d{12}\b", "<time>")
# The number and its column padding: the padding's width depends on the number's.
_DURATION = (r"(<time>\s+\t)\d+ *", r"\1<duration>")
# Offsets in the KRaft metadata log, which every metadata change moves.
_METADATA_OFFSET = (r"(HighWatermark:\s+|\t)\d{3,}(\s)", r"\1<offset>\2")


def norm(text: str, step: Step) -> tuple[str, set[str]]:
    """The text compared, and the known differences that matched a line of it."""
    text = normalise_text(_LOG_PREFIX.sub("", text), step.masks).rstrip()
    # Table cells are padded to their column's width, the last line's too or not.
    lines = [line.rstrip() for line in text.splitlines()]
    if step.sort:
        lines = sorted(lines[:1]) + sorted(lines[1:]) if lines else lines
    used = set()
    for pattern, _reason in step.known:
        kept = [line for line in lines if not re.search(pattern, line)]
        if len(kept) != len(lines):
            used.add(pattern)
        lines = kept
    return "\n".join(lines), used


def run_step(step: Step, bootstrap: str, workdir: Path) -> Result:
    args = step.args.format(bs=bootstrap, dir=workdir).split()

    def once() -> Result:
        return run_tool(step.tool, args, version=REFERENCE_VERSION, input=step.stdin)

    result = once()
    if step.until is not None:
        holder = [result]

        def check() -> bool:
            if step.until is not None and step.until(holder[0]):
                return True
            holder[0] = once()
            return False

        until_sync(check, timeout=60)
        result = holder[0]
    return result


def run_flow(
    flow: Flow, bootstrap: str, workdir: Path
) -> list[tuple[Step, int, str, str, set[str]]]:
    workdir.mkdir(parents=True, exist_ok=True)
    for name, text in flow.files.items():
        (workdir / name).write_text(text)
    out = []
    for step in flow.steps:
        if isinstance(step, Py):
            step.run(bootstrap)
            continue
        result = run_step(step, bootstrap, workdir)
        stdout, used_out = norm(result.stdout, step)
        stderr, used_err = norm(result.stderr, step)
        out.append((step, result.returncode, stdout, stderr, used_out | used_err))
    return out


def compare_flow(name: str, flow: Flow, sides: dict[str, str], tmp_path: Path) -> list[str]:
    results: dict[str, Any] = {}

    def side(which: str) -> None:
        try:
            results[which] = run_flow(flow, sides[which], tmp_path / which)
        except BaseException as exc:  # reported below, on the test's thread
            results[which] = exc

    # Both sides at once: each flow is sequential, the two are independent.
    threads = [threading.Thread(target=side, args=(w,)) for w in ("kafka", "ours")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for which in ("kafka", "ours"):
        if isinstance(results[which], BaseException):
            raise results[which]
    diffs = []
    for k, o in zip(results["kafka"], results["ours"], strict=True):
        step: Step = k[0]
        for label, kv, ov in (("exit", k[1], o[1]), ("stdout", k[2], o[2]), ("stderr", k[3], o[3])):
            if kv != ov:
                diffs.append(f"{name} / {step.name()} / {label}:\n--- kafka\n{kv}\n--- ours\n{ov}")
        unused = {p for p, _ in step.known} - k[4] - o[4]
        if unused:
            diffs.append(f"{name} / {step.name()}: known differences no longer seen: {unused}")
    return diffs


def check(name: str, flow: Flow, sides: dict[str, str], tmp_path: Path) -> None:
    diffs = compare_flow(name, flow, sides, tmp_path)
    assert not diffs, "differences from Apache Kafka:\n\n" + "\n\n".join(diffs)


def partitions_shown(count: int) -> Callable[[Result], bool]:
    return lambda r: f"PartitionCount: {count}" in r.stdout


# --- flows ----------------------------------------------------------------------------------


def flow_topics() -> Flow:
    t = "cli-topics"
    return Flow(
        [
            Step(
                "kafka-topics",
                f"--bootstrap-server {{bs}} --create --topic {t} --partitions 2 "
                "--replication-factor 1 --config retention.ms=100000 "
                "--config cleanup.policy=compact",
            ),
            Step("kafka-topics", f"--bootstrap-server {{bs}} --create --topic {t} --partitions 1"),
            Step(
                "kafka-topics",
                f"--bootstrap-server {{bs}} --create --if-not-exists --topic {t} --partitions 1",
            ),
            Step(
                "kafka-topics",
                f"--bootstrap-server {{bs}} --describe --topic {t}",
                until=partitions_shown(2),
            ),
            Step("kafka-topics", f"--bootstrap-server {{bs}} --alter --topic {t} --partitions 4"),
            Step(
                "kafka-topics",
                f"--bootstrap-server {{bs}} --describe --topic {t}",
                until=partitions_shown(4),
            ),
            Step("kafka-topics", f"--bootstrap-server {{bs}} --alter --topic {t} --partitions 3"),
            Step("kafka-topics", "--bootstrap-server {bs} --describe --topic cli-no-such-topic"),
            Step("kafka-topics", "--bootstrap-server {bs} --list --topic cli-topics.*"),
            Step(
                "kafka-topics",
                "--bootstrap-server {bs} --create --topic cli-bad-rf --partitions 1 "
                "--replication-factor 3",
            ),
            Step(
                "kafka-topics",
                "--bootstrap-server {bs} --create --topic cli-bad-config --config no.such=1",
            ),
            Step("kafka-topics", f"--bootstrap-server {{bs}} --delete --topic {t}"),
            Step(
                "kafka-topics",
                "--bootstrap-server {bs} --list --topic cli-topics.*",
                until=lambda r: r.stdout.strip() == "",
            ),
            Step("kafka-topics", "--bootstrap-server {bs} --delete --topic cli-no-such-topic"),
            Step(
                "kafka-topics", "--bootstrap-server {bs} --delete --if-exists --topic cli-nothing"
            ),
        ]
    )


def flow_console() -> Flow:
    t = "cli-console"
    lines = "".join(f"h1:a{i},h2:b{i}\tk{i}:v{i}\n" for i in range(6))
    consume = (
        f"--bootstrap-server {{bs}} --topic {t} --from-beginning --max-messages 6 "
        "--timeout-ms 20000 --property print.key=true --property print.headers=true "
        "--property print.partition=true --property print.offset=true"
    )
    return Flow(
        [
            Step("kafka-topics", f"--bootstrap-server {{bs}} --create --topic {t} --partitions 1"),
            Step(
                "kafka-console-producer",
                f"--bootstrap-server {{bs}} --topic {t} --property parse.key=true "
                "--property key.separator=: --property parse.headers=true",
                stdin=lines,
            ),
            Step("kafka-console-consumer", consume, label="console consumer, keys and headers"),
            Step(
                "kafka-console-consumer",
                f"{consume} --group cli-console-group",
                label="console consumer in a group",
            ),
            Step(
                "kafka-console-consumer",
                f"--bootstrap-server {{bs}} --topic {t} --group cli-console-group "
                "--max-messages 1 --timeout-ms 5000",
                label="group resumes at its committed offset: nothing left",
            ),
            Step(
                "kafka-console-consumer",
                f"--bootstrap-server {{bs}} --topic {t} --partition 0 --offset 4 "
                "--max-messages 2 --timeout-ms 20000",
                label="from an offset",
            ),
            Py(produce_transactions, "transactional producer: commit, abort, open"),
            Step(
                "kafka-console-consumer",
                "--bootstrap-server {bs} --topic cli-txn --from-beginning --max-messages 10 "
                "--timeout-ms 8000 --isolation-level read_committed --property print.offset=true",
                label="read_committed",
            ),
            Step(
                "kafka-console-consumer",
                "--bootstrap-server {bs} --topic cli-txn --from-beginning --max-messages 10 "
                "--timeout-ms 8000 --property print.offset=true",
                label="read_uncommitted",
            ),
        ]
    )


def produce_transactions(bootstrap: str) -> None:
    from tests.reference.test_scenarios import create_topic

    create_topic(bootstrap, "cli-txn", 1)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "cli-txn-1"})
    producer.init_transactions(30)
    for tag, commit in (("a", True), ("b", False)):
        producer.begin_transaction()
        for i in range(2):
            producer.produce("cli-txn", value=f"{tag}{i}".encode(), partition=0)
        producer.flush(30)
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)
    # Left open: the describe steps of the transactions flow see it, read_committed stops
    # before it. The producer object is kept so the transaction stays open.
    producer.begin_transaction()
    producer.produce("cli-txn", value=b"open", partition=0)
    producer.flush(30)
    _OPEN_PRODUCERS.append(producer)


_OPEN_PRODUCERS: list[Producer] = []


def flow_consumer_groups() -> Flow:
    t, g = "cli-groups", "cli-groups-g"
    group = f"--bootstrap-server {{bs}} --group {g}"
    reset = f"{group} --topic {t} --reset-offsets"
    # CONSUMER-ID and HOST columns name the member, absent once the consumer is gone.
    return Flow(
        [
            Step("kafka-topics", f"--bootstrap-server {{bs}} --create --topic {t} --partitions 2"),
            Step(
                "kafka-console-producer",
                f"--bootstrap-server {{bs}} --topic {t} --property parse.key=true "
                "--property key.separator=:",
                stdin="".join(f"k{i}:v{i}\n" for i in range(10)),
            ),
            Step(
                "kafka-console-consumer",
                f"--bootstrap-server {{bs}} --topic {t} --group {g} --from-beginning "
                "--max-messages 4 --timeout-ms 20000 --consumer-property max.poll.records=1",
                masks=(("v\\d", "v<n>"),),
                label="consume 4 in the group",
            ),
            Step(
                "kafka-consumer-groups",
                "--bootstrap-server {bs} --list",
                until=lambda r: g in r.stdout,
                sort=True,
            ),
            Step("kafka-consumer-groups", "--bootstrap-server {bs} --list --state", sort=True),
            Step("kafka-consumer-groups", f"{group} --describe"),
            Step("kafka-consumer-groups", f"{group} --describe --state"),
            Step("kafka-consumer-groups", f"{group} --describe --members"),
            Step("kafka-consumer-groups", f"{reset} --to-earliest --dry-run"),
            Step("kafka-consumer-groups", f"{reset} --to-earliest --execute"),
            Step("kafka-consumer-groups", f"{reset} --to-offset 2 --execute"),
            Step("kafka-consumer-groups", f"{reset} --shift-by 1 --execute"),
            Step("kafka-consumer-groups", f"{reset} --shift-by -10 --execute"),
            Step("kafka-consumer-groups", f"{reset} --to-latest --execute"),
            Step("kafka-consumer-groups", f"{reset} --by-duration PT1H --execute"),
            Step(
                "kafka-consumer-groups", f"{reset} --to-datetime 2000-01-01T00:00:00.000 --execute"
            ),
            Step("kafka-consumer-groups", f"{group} --describe --offsets"),
            Step("kafka-consumer-groups", f"{group} --topic {t}:1 --delete-offsets"),
            Step("kafka-consumer-groups", f"{group} --describe"),
            Step("kafka-consumer-groups", f"{group} --delete"),
            Step("kafka-consumer-groups", "--bootstrap-server {bs} --group cli-nope --describe"),
            Step("kafka-consumer-groups", "--bootstrap-server {bs} --group cli-nope --delete"),
        ]
    )


def flow_configs() -> Flow:
    t = "cli-configs"
    topic = f"--bootstrap-server {{bs}} --entity-type topics --entity-name {t}"
    return Flow(
        [
            Step("kafka-topics", f"--bootstrap-server {{bs}} --create --topic {t} --partitions 1"),
            Step(
                "kafka-configs", f"{topic} --alter --add-config retention.ms=1234,segment.ms=600000"
            ),
            Step(
                "kafka-configs",
                f"{topic} --describe",
                until=lambda r: "retention.ms=1234" in r.stdout,
            ),
            Step("kafka-configs", f"{topic} --alter --delete-config segment.ms"),
            Step(
                "kafka-configs",
                f"{topic} --describe",
                until=lambda r: "segment.ms" not in r.stdout,
            ),
            Step("kafka-configs", f"{topic} --alter --add-config no.such.config=1"),
            Step("kafka-configs", f"{topic} --alter --add-config retention.ms=abc"),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type topics --entity-name cli-missing --describe",
            ),
            Step("kafka-configs", "--bootstrap-server {bs} --entity-type brokers --describe"),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type brokers --entity-default --describe",
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type brokers --entity-name 1 --alter "
                "--add-config log.cleaner.threads=2",
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type brokers --entity-name 1 --describe",
                until=lambda r: "log.cleaner.threads=2" in r.stdout,
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type brokers --entity-name 1 --alter "
                "--delete-config log.cleaner.threads",
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type users --entity-name cli-alice --alter "
                "--add-config SCRAM-SHA-256=[iterations=8192,password=alice-secret]",
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type users --entity-name cli-alice --describe",
                until=lambda r: "SCRAM-SHA-256" in r.stdout,
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type users --entity-name cli-alice --alter "
                "--delete-config SCRAM-SHA-256",
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type clients --entity-name cli-c1 --alter "
                "--add-config producer_byte_rate=1024,consumer_byte_rate=2048",
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type clients --entity-name cli-c1 --describe",
                until=lambda r: "producer_byte_rate" in r.stdout,
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type users --entity-name cli-bob "
                "--entity-type clients --entity-default --alter --add-config request_percentage=50",
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type users --describe",
                until=lambda r: "cli-bob" in r.stdout,
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type groups --entity-name cli-cg --alter "
                "--add-config consumer.session.timeout.ms=50000",
            ),
            Step(
                "kafka-configs",
                "--bootstrap-server {bs} --entity-type groups --entity-name cli-cg --describe",
                until=lambda r: "consumer.session.timeout.ms" in r.stdout,
            ),
        ]
    )


def flow_transactions() -> Flow:
    tx = "--bootstrap-server {bs}"
    return Flow(
        [
            Py(produce_open_transaction, "transactional producer with an open transaction"),
            Step(
                "kafka-transactions",
                f"{tx} list",
                until=lambda r: "cli-tx-open" in r.stdout,
                sort=True,
            ),
            Step(
                "kafka-transactions",
                f"{tx} describe --transactional-id cli-tx-open",
                masks=(_TIME, _DURATION),
            ),
            Step("kafka-transactions", f"{tx} describe --transactional-id cli-tx-none"),
            Step(
                "kafka-transactions",
                f"{tx} describe-producers --topic cli-tx --partition 0",
                masks=(_TIME,),
            ),
            Step("kafka-transactions", f"{tx} find-hanging --broker-id 1"),
            Step(
                "kafka-transactions", f"{tx} find-hanging --broker-id 1 --max-transaction-timeout 0"
            ),
            Step(
                "kafka-transactions",
                f"{tx} abort --topic cli-tx --partition 0 --start-offset 0",
            ),
            Step(
                "kafka-transactions",
                f"{tx} describe-producers --topic cli-tx --partition 0",
                masks=(_TIME,),
            ),
        ]
    )


def produce_open_transaction(bootstrap: str) -> None:
    from tests.reference.test_scenarios import create_topic

    create_topic(bootstrap, "cli-tx", 1)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "cli-tx-open",
            "transaction.timeout.ms": 600000,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("cli-tx", value=b"open", partition=0)
    producer.flush(30)
    _OPEN_PRODUCERS.append(producer)


def flow_offsets_and_records() -> Flow:
    t = "cli-records"
    return Flow(
        [
            Step("kafka-topics", f"--bootstrap-server {{bs}} --create --topic {t} --partitions 2"),
            Step(
                "kafka-console-producer",
                f"--bootstrap-server {{bs}} --topic {t} --property parse.key=true "
                "--property key.separator=:",
                stdin="".join(f"k{i}:v{i}\n" for i in range(10)),
            ),
            Step("kafka-get-offsets", f"--bootstrap-server {{bs}} --topic {t}"),
            Step("kafka-get-offsets", f"--bootstrap-server {{bs}} --topic {t} --time -2"),
            Step("kafka-get-offsets", f"--bootstrap-server {{bs}} --topic-partitions {t}:0"),
            Step(
                "kafka-delete-records",
                "--bootstrap-server {bs} --offset-json-file {dir}/delete.json",
            ),
            Step("kafka-get-offsets", f"--bootstrap-server {{bs}} --topic {t} --time -2"),
            Step(
                "kafka-delete-records",
                "--bootstrap-server {bs} --offset-json-file {dir}/delete-bad.json",
            ),
            Step(
                "kafka-log-dirs",
                f"--bootstrap-server {{bs}} --describe --topic-list {t}",
                masks=(('"size":\\d+', '"size":<n>'), ('"logDir":"[^"]*"', '"logDir":<dir>')),
            ),
            Step(
                "kafka-leader-election",
                f"--bootstrap-server {{bs}} --election-type preferred --topic {t} --partition 0",
            ),
            Step(
                "kafka-leader-election",
                "--bootstrap-server {bs} --election-type unclean --all-topic-partitions",
            ),
        ],
        files={
            "delete.json": (
                '{"partitions": [{"topic": "cli-records", "partition": 0, "offset": 2}], '
                '"version": 1}'
            ),
            "delete-bad.json": (
                '{"partitions": [{"topic": "cli-records", "partition": 1, "offset": 999}], '
                '"version": 1}'
            ),
        },
    )


_NO_QUORUM = (
    "KRaft quorum and ELR features describe a replicated controller quorum this single "
    "process does not have (as the oracle's allowed differences)."
)
_VOTER_ENDPOINT = (
    "The single voter's endpoint: Kafka's controller listener; we have no separate "
    "controller listener, so the broker's is named."
)
_NOT_PLANNED_APIS = (
    "Not planned: delegation tokens (38-41), UpdateFeatures (57), UnregisterBroker (64), "
    "ListClientMetricsResources (74), Add/RemoveRaftVoter (80, 81)."
)


def flow_cluster() -> Flow:
    return Flow(
        [
            Step(
                "kafka-features",
                "--bootstrap-server {bs} describe",
                masks=((r"Epoch: \d+", "Epoch: <n>"),),
                known=((r"Feature: (eligible\.leader\.replicas|kraft)\.version", _NO_QUORUM),),
            ),
            Step(
                "kafka-metadata-quorum",
                "--bootstrap-server {bs} describe --status",
                masks=(_METADATA_OFFSET,),
                known=((r"^CurrentVoters:", _VOTER_ENDPOINT),),
            ),
            Step(
                "kafka-metadata-quorum",
                "--bootstrap-server {bs} describe --replication",
                masks=(_METADATA_OFFSET, _TIME),
            ),
            Step(
                "kafka-broker-api-versions",
                "--bootstrap-server {bs}",
                known=((r"\((38|39|40|41|57|64|74|80|81)\): ", _NOT_PLANNED_APIS),),
            ),
        ]
    )


def flow_perf() -> Flow:
    return Flow(
        [
            Step(
                "kafka-topics", "--bootstrap-server {bs} --create --topic cli-perf --partitions 1"
            ),
            Step(
                "kafka-producer-perf-test",
                "--topic cli-perf --num-records 2000 --record-size 100 --throughput -1 "
                "--producer-props bootstrap.servers={bs} acks=all",
                masks=(_RATES,),
            ),
            Step(
                "kafka-consumer-perf-test",
                "--bootstrap-server {bs} --topic cli-perf --messages 2000 --timeout 30000",
                masks=(_RATES,),
            ),
        ]
    )


FLOWS: dict[str, Callable[[], Flow]] = {
    "topics": flow_topics,
    "console": flow_console,
    "consumer-groups": flow_consumer_groups,
    "configs": flow_configs,
    "transactions": flow_transactions,
    "offsets-and-records": flow_offsets_and_records,
    "cluster": flow_cluster,
    "perf": flow_perf,
}


@pytest.mark.parametrize("name", list(FLOWS))
def test_cli_flow(name: str, sides: dict[str, str], tmp_path: Path) -> None:
    try:
        check(name, FLOWS[name](), sides, tmp_path)
    finally:
        while _OPEN_PRODUCERS:
            producer = _OPEN_PRODUCERS.pop()
            # Fenced or aborted by the flow (kafka-transactions abort) is fine.
            with contextlib.suppress(KafkaException):
                producer.abort_transaction(30)
