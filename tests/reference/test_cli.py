"""Kafka's own command-line tools (the Java main classes behind bin/*.sh, from Kafka's jars)
run the same flow against Apache Kafka and against us: each step's exit code, stdout and
stderr must match once ids, ports, paths and timings are masked. A difference we keep is
listed in KNOWN with its reason (and in docs/REFERENCE.md); one that no longer shows fails.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer

from protocol.messages.describe_acls import DESCRIBE_ACLS
from protocol.schema import Message
from storage.acl_store import FILE_NAME as ACL_FILE
from storage.acl_store import decode
from tests.reference.compare import normalise_text
from tests.reference.conftest import REFERENCE_VERSION
from tests.support.broker_process import BrokerProcess
from tests.support.kafka_reference import run_tool
from tests.support.polling import until_sync
from tests.support.raw_client import RawClient

Result = subprocess.CompletedProcess[str]
# A tool's JVM takes 3-8 s to start on a loaded 2-core machine; a flow runs a dozen or more.
pytestmark = pytest.mark.timeout(900)


@dataclass
class Step:
    """One tool run: ``args`` formatted with {bs} (bootstrap) and {dir} (a work directory),
    then split as a shell splits a command line (quotes as in librdkafka's test lines)."""

    tool: str
    args: str
    stdin: str | None = None
    # Re-run (polling, both sides) until this holds: Kafka applies metadata changes
    # asynchronously after answering, so a describe right after an alter may lag.
    until: Callable[[Result], bool] | None = None
    masks: tuple[tuple[str, str], ...] = ()
    label: str = ""
    # Kafka prints some lists in no defined order (from a hash map): compare them sorted,
    # below their first line when that is a header.
    sort: bool = False
    headed: bool = True
    # The same for output in blocks (a line at the margin, then its indented lines), as
    # kafka-acls prints resources and their ACLs: each block's lines sorted, then the blocks.
    blocks: bool = False
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
# Offsets in the KRaft metadata log, which every metadata change moves, and a table cell's
# padding after one (its width depends on the number's).
_METADATA_OFFSET = (r"(HighWatermark:\s+|\t)\d{3,} *(?=\s|$)", r"\1<offset>")


def norm(text: str, step: Step) -> tuple[str, set[str]]:
    """The text compared, and the known differences that matched a line of it."""
    text = normalise_text(_LOG_PREFIX.sub("", text), step.masks).rstrip()
    # Table cells are padded to their column's width, the last line's too or not.
    lines = [line.rstrip() for line in text.splitlines()]
    if step.sort:
        head = 1 if step.headed else 0
        lines = lines[:head] + sorted(lines[head:])
    if step.blocks:
        lines = sorted_blocks(lines)
    used = set()
    for pattern, _reason in step.known:
        kept = [line for line in lines if not re.search(pattern, line)]
        if len(kept) != len(lines):
            used.add(pattern)
        lines = kept
    return "\n".join(lines), used


def sorted_blocks(lines: list[str]) -> list[str]:
    """Blocks sorted, and the indented lines within each; every position keeps its own
    indentation (kafka-acls indents the first ACL of a block differently), blank lines go."""
    blocks: list[list[str]] = []
    for line in lines:
        if not line.strip():
            continue
        if line[:1].isspace() and blocks:
            blocks[-1].append(line)
        else:
            blocks.append([line])
    out: list[str] = []
    for block in sorted(_sort_indented(b) for b in blocks):
        out += [*block, ""]
    return out[:-1]


def _sort_indented(block: list[str]) -> list[str]:
    head, rest = block[:1], block[1:]
    indents = [line[: len(line) - len(line.lstrip())] for line in rest]
    return head + [i + b for i, b in zip(indents, sorted(r.lstrip() for r in rest), strict=True)]


def run_step(step: Step, bootstrap: str, workdir: Path) -> Result:
    args = shlex.split(step.args.format(bs=bootstrap, dir=workdir))

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
    report(compare_flow(name, flow, sides, tmp_path))


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
                headed=False,
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


# ResourceType, PatternType, AclOperation and AclPermissionType codes (Kafka's protocol).
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, USER = 2, 3, 4, 5, 7
LITERAL, PREFIXED = 3, 4
ALL, READ, WRITE, CREATE, DESCRIBE, IDEMPOTENT_WRITE = 2, 3, 4, 5, 8, 12
DENY, ALLOW = 2, 3

Acl = tuple[int, str, int, str, str, int, int]


def _acls_added() -> set[Acl]:
    t, g = "cli-acl-t", "cli-acl-g"
    acls: set[Acl] = set()
    for who in ("User:alice", "User:bob"):
        acls |= {(TOPIC, t, LITERAL, who, "*", op, ALLOW) for op in (READ, WRITE)}
    acls |= {
        (kind, t if kind == TOPIC else g, LITERAL, "User:mallory", "10.0.0.1", ALL, DENY)
        for kind in (TOPIC, GROUP)
    }
    acls |= {(GROUP, g, LITERAL, "User:alice", "*", op, ALLOW) for op in (READ, DESCRIBE)}
    acls |= {(GROUP, g, LITERAL, "User:bob", "*", op, DENY) for op in (READ, DESCRIBE)}
    acls |= {
        (TOPIC, "cli-acl-p", LITERAL, "User:alice", "*", op, ALLOW)
        for op in (WRITE, DESCRIBE, CREATE)
    }
    acls |= {(TOPIC, "cli-acl-c", LITERAL, "User:carol", "*", op, ALLOW) for op in (READ, DESCRIBE)}
    acls.add((GROUP, "cli-acl-cg", LITERAL, "User:carol", "*", READ, ALLOW))
    acls |= {
        (TOPIC, "cli-acl-pre-", PREFIXED, "User:dave", "*", op, ALLOW)
        for op in (WRITE, DESCRIBE, CREATE)
    }
    acls |= {
        (TRANSACTIONAL_ID, "cli-acl-tx-", PREFIXED, "User:dave", "*", op, ALLOW)
        for op in (WRITE, DESCRIBE)
    }
    acls.add((CLUSTER, "kafka-cluster", LITERAL, "User:dave", "*", IDEMPOTENT_WRITE, ALLOW))
    acls.add((CLUSTER, "kafka-cluster", LITERAL, "User:ops", "*", ALL, ALLOW))
    acls.add((USER, "User:bob", LITERAL, "User:ops", "*", ALL, ALLOW))
    acls.add((TOPIC, "cli-acl-unauth", LITERAL, "User:*", "*", ALL, DENY))
    return acls


ACLS_ADDED = _acls_added()
# What the removes take: everything on the group, the producer's topic, the cluster, the user
# and librdkafka's topic, and one of bob's ACLs on the topic.
ACLS_REMOVED = {
    acl
    for acl in ACLS_ADDED
    if acl[0] in (CLUSTER, USER) or acl[1] in ("cli-acl-g", "cli-acl-p", "cli-acl-unauth")
} | {(TOPIC, "cli-acl-t", LITERAL, "User:bob", "*", WRITE, ALLOW)}
ACLS_LEFT = ACLS_ADDED - ACLS_REMOVED


def acl_count(n: int) -> Callable[[Result], bool]:
    return lambda r: r.stdout.count("(principal=") == n


def flow_acls(held: Callable[[str], None]) -> Flow:
    """kafka-acls against a broker with StandardAuthorizer: allow and deny ACLs on a topic
    and a group, --producer/--consumer (with --idempotent, a transactional id and a prefixed
    pattern), the cluster and a user principal, lines as librdkafka's tests 0109, 0115 and
    0119 write them (quoted 'User:*' and '*'), a duplicate; --list of everything, of a
    resource, of a principal and by match; --remove --force by entry, by resource and by role.
    ``held`` records what the broker holds after the adds and after the removes."""
    acls = "--bootstrap-server {bs}"
    t, g = "cli-acl-t", "cli-acl-g"
    add_t = (
        f"{acls} --add --allow-principal User:alice --allow-principal User:bob "
        f"--operation Read --operation Write --topic {t}"
    )
    unauth = "--deny-principal 'User:*' --operation All --deny-host '*' --topic 'cli-acl-unauth'"
    return Flow(
        [
            Step("kafka-acls", add_t, blocks=True),
            Step(
                "kafka-acls",
                f"{acls} --add --deny-principal User:mallory --deny-host 10.0.0.1 "
                f"--operation All --topic {t} --group {g}",
                blocks=True,
            ),
            Step(
                "kafka-acls",
                f"{acls} --add --allow-principal User:alice --deny-principal User:bob "
                f"--operation Read --operation Describe --group {g}",
                blocks=True,
            ),
            Step(
                "kafka-acls",
                f"{acls} --add --producer --topic cli-acl-p --allow-principal User:alice",
                blocks=True,
            ),
            Step(
                "kafka-acls",
                f"{acls} --add --consumer --topic cli-acl-c --group cli-acl-cg "
                "--allow-principal User:carol",
                blocks=True,
            ),
            Step(
                "kafka-acls",
                f"{acls} --add --producer --idempotent --topic cli-acl-pre- "
                "--transactional-id cli-acl-tx- --resource-pattern-type prefixed "
                "--allow-principal User:dave",
                blocks=True,
            ),
            Step(
                "kafka-acls",
                f"{acls} --add --allow-principal User:ops --cluster --user-principal User:bob",
                blocks=True,
            ),
            Step("kafka-acls", f"{acls} --add {unauth}", blocks=True, label="librdkafka's deny"),
            Step("kafka-acls", add_t, blocks=True, label="the same ACLs again"),
            Step("kafka-acls", f"{acls} --list --topic {t}", until=acl_count(5), blocks=True),
            Step("kafka-acls", f"{acls} --list", until=acl_count(len(ACLS_ADDED)), blocks=True),
            Step("kafka-acls", f"{acls} --list --principal User:alice", blocks=True),
            Step(
                "kafka-acls",
                f"{acls} --list --topic cli-acl-pre-x --resource-pattern-type match",
                blocks=True,
            ),
            Step("kafka-acls", f"{acls} --list --group cli-acl-none"),
            Py(held, "ACLs the broker holds after the adds"),
            Step(
                "kafka-acls",
                f"{acls} --remove --force --allow-principal User:bob --operation Write --topic {t}",
            ),
            Step("kafka-acls", f"{acls} --remove --force --group {g}"),
            Step(
                "kafka-acls",
                f"{acls} --remove --force --producer --topic cli-acl-p "
                "--allow-principal User:alice",
            ),
            Step("kafka-acls", f"{acls} --remove --force --cluster --user-principal User:bob"),
            Step("kafka-acls", f"{acls} --remove --force {unauth}", label="librdkafka's remove"),
            Step("kafka-acls", f"{acls} --list", until=acl_count(len(ACLS_LEFT)), blocks=True),
            Py(held, "ACLs the broker holds after the removes"),
        ]
    )


def described_acls(bootstrap: str) -> set[Acl]:
    """Every ACL a broker answers DescribeAcls (v3) with."""
    host, port = bootstrap.rsplit(":", 1)
    any_acl = Message(
        resource_type_filter=1,
        resource_name_filter=None,
        pattern_type_filter=1,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    with RawClient(int(port), host) as client:
        answer = client.request(DESCRIBE_ACLS, 3, any_acl)
    assert answer.error_code == 0, answer
    return {
        (
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        )
        for r in answer.resources
        for a in r.acls
    }


def stored_acls(broker: BrokerProcess) -> set[Acl]:
    """The ACLs in our broker's ACL store, read from its file as the broker wrote it (read
    only: AclStore.open would also tidy the directory under the running broker)."""
    # StoredAcl's fields are in Acl's order.
    return {astuple(a) for a in decode((broker.data_dir / ACL_FILE).read_bytes())}


def run_acls(
    sides: dict[str, str], ours: BrokerProcess, workdir: Path
) -> tuple[list[str], dict[str, list[set[Acl]]]]:
    """The acls flow's differences, and what each broker held after the adds and after the
    removes: ours from its ACL store on disk, Kafka's from its DescribeAcls answer."""
    held: dict[str, list[set[Acl]]] = {"kafka": [], "ours": []}

    def record(bootstrap: str) -> None:
        if bootstrap == ours.bootstrap:
            held["ours"].append(stored_acls(ours))
        else:
            held["kafka"].append(described_acls(bootstrap))

    return compare_flow("acls", flow_acls(record), sides, workdir), held


def report(diffs: list[str]) -> None:
    assert not diffs, "differences from Apache Kafka:\n\n" + "\n\n".join(diffs)


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

# Flows whose output depends on no other flow (their own topics, no list of every group,
# transaction, user or partition) and on which no other's depends (the acls flow lists every
# ACL; only it adds any). When selected, they run one after the other in a thread of their
# own (each flow still both sides at once) while pytest runs the rest, and their tests come
# last and check what was found: the tools spend much of their time waiting (JVM start-up on
# a busy core, the console consumer's timeouts), so this fills the other core.
BACKGROUND = {"topics": "test_cli_flow[topics]", "acls": "test_acls_flow"}  # flow: its test


@pytest.fixture(scope="session")
def background(
    request: pytest.FixtureRequest,
    sides: dict[str, str],
    ours: BrokerProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Future[Any]]]:
    jobs: dict[str, Callable[[Path], Any]] = {
        "topics": lambda workdir: compare_flow("topics", flow_topics(), sides, workdir),
        "acls": lambda workdir: run_acls(sides, ours, workdir),
    }
    selected = {item.name for item in request.session.items}
    with ThreadPoolExecutor(1, thread_name_prefix="cli-background") as pool:
        futures = {
            name: pool.submit(jobs[name], tmp_path_factory.mktemp(f"cli-{name}"))
            for name, test in BACKGROUND.items()
            if test in selected
        }
        yield futures
        # A run stopped early (-x) does not start what is left; the one running finishes.
        for future in futures.values():
            future.cancel()


@pytest.mark.parametrize(
    "name",
    sorted(FLOWS, key=lambda name: name in BACKGROUND),  # background flows last
)
def test_cli_flow(
    name: str, sides: dict[str, str], background: dict[str, Future[Any]], tmp_path: Path
) -> None:
    try:
        if name in background:
            report(background[name].result())
        else:
            check(name, FLOWS[name](), sides, tmp_path)
    finally:
        while _OPEN_PRODUCERS:
            producer = _OPEN_PRODUCERS.pop()
            # Fenced or aborted by the flow (kafka-transactions abort) is fine.
            with contextlib.suppress(KafkaException):
                producer.abort_transaction(30)


def test_acl_with_an_empty_resource_name(sides: dict[str, str], tmp_path: Path) -> None:
    step = Step(
        "kafka-acls",
        "--bootstrap-server {bs} --add --allow-principal User:alice --operation Read --topic ''",
    )
    check("acls, empty name", Flow([step]), sides, tmp_path)


def test_acls_flow(background: dict[str, Future[Any]], ours: BrokerProcess) -> None:
    """kafka-acls compared (flow_acls), and the ACLs each broker held after the adds and
    after the removes: on our side as stored in its ACL store."""
    diffs, held = background["acls"].result()
    report(diffs)
    assert held["kafka"] == [ACLS_ADDED, ACLS_LEFT]
    assert held["ours"] == [ACLS_ADDED, ACLS_LEFT]
    # What our broker answers is what it stored.
    assert described_acls(ours.bootstrap) == ACLS_LEFT
