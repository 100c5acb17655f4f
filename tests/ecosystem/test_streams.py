"""A Kafka Streams application (streams/WordCount.java: a count in a state store after a
repartition, joined with a table) under processing.guarantee=exactly_once_v2 against a real
broker, killed with SIGKILL in the middle of its input and restarted.

Exactly once is checked on what the broker stored: the output partitions' committed
transactions (worked out from the segment files and their COMMIT/ABORT markers) hold, for each
word, counts that only grow and end at the expected count, the same a read_committed
consumer reads; the group committed the end of the input; the counts' changelog topic was
created compacted and the restarted application restored the counts from it.
The same runs with group.protocol=streams (KIP-1071) against minikafka with
minikafka.streams.version=1 and against Kafka 4.4.0.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.messages.streams_group import STREAMS_GROUP_DESCRIBE
from protocol.schema import Message
from tests.compat.test_java_client import committed_offsets
from tests.ecosystem.conftest import (
    ABORT,
    COMMIT,
    STREAMS_VERSION,
    Jvm,
    Target,
    classpath,
    cleanup_policy,
    jvm_command,
    partition_view,
)
from tests.support.broker_process import BrokerProcess
from tests.support.kafka_reference import KafkaReference
from tests.support.polling import until_sync
from tests.support.produce import create_partitioned_topic, stored
from tests.support.raw_client import RawClient

APP = "wc"
PARTITIONS = 2
WORDS = [f"w{n:02d}" for n in range(24)]
LABELS = {word: f"label-{word}" for word in WORDS}
# Enough input that the application is still working through it when it is killed.
LINES_BEFORE, LINES_AFTER = 20_000, 5_000


def line(n: int) -> str:
    return " ".join(WORDS[(7 * n + 5 * j) % len(WORDS)] for j in range(1 + n % 5))


def producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    # murmur2 as Java's partitioner: the labels land where the join's repartitioned counts
    # of the same word do.
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 20,
            "partitioner": "murmur2_random",
        }
    )


def produce_lines(bootstrap: str, first: int, count: int) -> None:
    lines = producer(bootstrap)
    for n in range(first, first + count):
        lines.produce("lines", value=line(n).encode())
        lines.poll(0)
    assert lines.flush(60) == 0


def produce_labels(bootstrap: str) -> None:
    labels = producer(bootstrap)
    for word, label in LABELS.items():
        labels.produce("labels", key=word.encode(), value=label.encode())
    assert labels.flush(60) == 0


def start_app(bootstrap: str, state_dir: Path, protocol: str = "classic") -> Jvm:
    cp = classpath("streams", STREAMS_VERSION)
    return Jvm(jvm_command(cp, "WordCount", bootstrap, APP, str(state_dir), protocol, heap="512m"))


def events(app: Jvm) -> list[dict[str, Any]]:
    return [json.loads(text) for text in list(app.stdout) if text.startswith("{")]


def log_end(data_dir: Path, topic: str, partition: int) -> int:
    batches = stored(data_dir, topic, partition)
    return batches[-1][0].base_offset + batches[-1][0].last_offset_delta + 1 if batches else 0


def committed_input(port: int) -> dict[int, int]:
    return committed_offsets(port, APP, "lines")


def updates_by_word(rows: list[tuple[bytes | None, bytes | None]]) -> dict[str, list[int]]:
    by_word: dict[str, list[int]] = {}
    for key, value in rows:
        assert key is not None and value is not None
        by_word.setdefault(key.decode(), []).append(struct.unpack(">q", value)[0])
    return by_word


def changelog_records(data_dir: Path) -> int:
    return sum(
        len(partition_view(data_dir, f"{APP}-counts-changelog", p).committed)
        for p in range(PARTITIONS)
    )


def final_counts(data_dir: Path) -> dict[str, int]:
    """Each word's last count in the committed transactions of the output."""
    rows = [
        (row.key, row.value)
        for p in range(PARTITIONS)
        for row in partition_view(data_dir, "counts", p).committed
    ]
    return {word: counts[-1] for word, counts in updates_by_word(rows).items()}


def read_committed(bootstrap: str, topic: str, expected: dict[int, int]) -> list[Any]:
    """(partition, offset) of every record a read_committed consumer gets from the topic,
    until it has as many per partition as ``expected`` says the committed transactions
    hold."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "wc-check",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        got: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}

        def complete() -> bool:
            for message in consumer.consume(500, timeout=0.2):
                assert message.error() is None, message.error()
                got[message.partition()].append(message.offset())
            return all(len(got[p]) >= n for p, n in expected.items())

        assert until_sync(complete, 60), {p: len(r) for p, r in got.items()}
        return [(p, offset) for p in range(PARTITIONS) for offset in got[p]]
    finally:
        consumer.close()


def test_word_count_exactly_once_across_a_kill(target: Target, tmp_path: Path) -> None:
    word_count_across_a_kill(target, tmp_path, "classic")


@pytest.fixture(params=("minikafka", "kafka-4.4.0"))
def streams_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    """minikafka with streams groups on (minikafka.streams.version=1), or Kafka 4.4.0."""
    if request.param == "minikafka":
        proc = BrokerProcess(tmp_path / "data", {"minikafka.streams.version": "1"}).start()
        try:
            yield Target("minikafka", proc.bootstrap, proc.port, proc.data_dir)
        finally:
            proc.kill() if not proc.is_running() else proc.stop()
        return
    kafka = KafkaReference("4.4.0", data_dir=tmp_path / "kafka")
    try:
        kafka.start()
        yield Target(request.param, kafka.bootstrap, kafka.port, kafka.data_dir / "logs")
    finally:
        kafka.stop()


def test_word_count_exactly_once_with_the_streams_protocol(
    streams_target: Target, tmp_path: Path
) -> None:
    """The same with group.protocol=streams (KIP-1071): the broker's streams group assigns
    the tasks and creates the internal topics; the killed member's tasks come to the
    restarted one after group.streams.session.timeout.ms (45 s)."""
    word_count_across_a_kill(streams_target, tmp_path, "streams")


def word_count_across_a_kill(target: Target, tmp_path: Path, protocol: str) -> None:
    bootstrap, data_dir = target.bootstrap, target.log_dir
    with RawClient(target.port) as client:
        for topic in ("lines", "labels", "counts", "labelled"):
            create_partitioned_topic(client, topic, PARTITIONS)
    produce_labels(bootstrap)
    produce_lines(bootstrap, 0, LINES_BEFORE)
    state_dir = tmp_path / "state"

    app = start_app(bootstrap, state_dir, protocol)
    try:
        # Killed as soon as a transaction committed counts to the changelog: mid-run, with
        # state to restore.
        assert until_sync(lambda: changelog_records(data_dir) > 0, 120), app.log_tail()
        app.kill()
        stored_state = changelog_records(data_dir)
        first = Counter(word for n in range(LINES_BEFORE) for word in line(n).split())
        assert final_counts(data_dir) != first, "the application finished before it was killed"
    finally:
        app.kill()

    # More input while it is down, then the same application (same state directory) again.
    produce_lines(bootstrap, LINES_BEFORE, LINES_AFTER)
    total = LINES_BEFORE + LINES_AFTER
    ends = {p: log_end(data_dir, "lines", p) for p in range(PARTITIONS)}
    assert sum(ends.values()) == total
    expected = Counter(word for n in range(total) for word in line(n).split())
    app = start_app(bootstrap, state_dir, protocol)
    try:
        # Done when the counts' committed transactions end at the expected counts and no
        # transaction is left open in the output.
        assert until_sync(lambda: final_counts(data_dir) == expected, 180), (
            final_counts(data_dir),
            app.log_tail(),
        )
        assert until_sync(
            lambda: all(not partition_view(data_dir, "counts", p).open for p in range(PARTITIONS)),
            30,
        )
        second_run = events(app)
    finally:
        app.kill()

    views = {p: partition_view(data_dir, "counts", p) for p in range(PARTITIONS)}
    for p, view in views.items():
        # Every output batch is transactional and its transaction ended with a marker.
        assert not view.non_transactional and not view.open
        assert any(kind == COMMIT for _, kind in view.markers), p
        assert all(kind in (COMMIT, ABORT) for _, kind in view.markers)
    committed = [(row.key, row.value) for view in views.values() for row in view.committed]
    by_word = updates_by_word(committed)
    assert {word: counts[-1] for word, counts in by_word.items()} == dict(expected)
    for word, counts in by_word.items():
        # Exactly once: each committed update of a word is a new, larger count (processing
        # a line twice, or losing the restored state, would repeat or lower one).
        assert counts == sorted(set(counts)), (word, counts)

    # A read_committed consumer reads the same.
    consumed = read_committed(bootstrap, "counts", {p: len(v.committed) for p, v in views.items()})
    assert sorted(consumed) == sorted(
        (p, row.offset) for p, v in views.items() for row in v.committed
    )

    # The join: each word's last committed label:count.
    labelled: dict[str, str] = {}
    for p in range(PARTITIONS):
        for row in partition_view(data_dir, "labelled", p).committed:
            assert row.key is not None and row.value is not None
            labelled[row.key.decode()] = row.value.decode()
    assert labelled == {word: f"{LABELS[word]}:{n}" for word, n in expected.items()}

    # The group committed the end of its input; the repartition topic was read to its end.
    assert committed_input(target.port) == ends
    repartition = f"{APP}-by-word-repartition"
    assert committed_offsets(target.port, APP, repartition) == {
        p: log_end(data_dir, repartition, p) for p in range(PARTITIONS)
    }

    if protocol == "streams":
        # The broker ran the group as a streams group (its tasks assigned by the broker).
        with RawClient(target.port) as client:
            (group,) = client.request(
                STREAMS_GROUP_DESCRIBE,
                0,
                Message(group_ids=[APP], include_authorized_operations=False),
            ).groups
        assert group.error_code == 0, group
        assert {s.subtopology_id for s in group.topology.subtopologies} == {"0", "1"}

    # The state: a compacted changelog, restored by the second run.
    assert cleanup_policy(target, f"{APP}-counts-changelog") == "compact"
    assert cleanup_policy(target, repartition) == "delete"
    restored = [e for e in second_run if e.get("restore") == "end" and e["store"] == "counts"]
    # At least what the first run committed to the changelog (the second run's restart
    # after the kill wipes the local store: exactly-once state is not trusted after a crash).
    assert sum(e["records"] for e in restored) >= stored_state, json.dumps(second_run)
