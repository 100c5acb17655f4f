"""The official Java client (kafka-clients 3.9.0, 4.0.0 and 4.4.0) against a real broker.

`make compat` resolves the kafka-clients jars (and slf4j/log4j, lz4-java, snappy-java,
zstd-jni) with Maven from tests/compat/java/pom.xml and compiles tests/compat/java/*.java
with javac against each version into build/java/kafka-<version>/. 3.9.0 is what Spark 4.0's
Kafka connector uses, 4.0.0 the version the broker implements, 4.4.0 the newest 4.x. The
calls made here are the ones Java users and that connector make: an idempotent producer
with every codec, a consumer that assigns, looks offsets up, seeks and polls, a consumer in
a classic group, and AdminClient createTopics, describeTopics, describeCluster, listOffsets
(earliest, latest, max timestamp, by timestamp, read committed), deleteRecords and
describeConfigs.

Each program prints what the client reported, one JSON object a line; every check compares
that with what the broker stored (segment files, partition.metadata, topic-configs/,
log-start-offset-checkpoint, meta.properties) or answers a raw request with.

kafka-clients 4.x switches to KIP-848 groups only when the broker advertises group.version,
which this broker does not (yet): the classic group paths are what is tested with both
versions. It does finalize transaction.version 2, so 4.x transactional producers use
transactions v2 (test_java_transactions.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.messages.delete_records import DELETE_RECORDS
from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.offset_fetch import OFFSET_FETCH
from protocol.records import Record, build_batch, decode_records
from protocol.schema import Message
from storage.topic_config_store import DIR_NAME, decode
from tests.compat.checks import StoredRecord, assert_exactly_once_in_order, stored_partitions
from tests.compat.conftest import PARTITIONS, record_versions, require_tool
from tests.support.broker_process import BrokerProcess
from tests.support.capture_proxy import CaptureProxy
from tests.support.produce import create_topic, fetch_partition, produce, stored
from tests.support.raw_client import RawClient

# Must match KAFKA_CLIENTS_VERSIONS in the Makefile.
KAFKA_CLIENTS_VERSIONS = ("3.9.0", "4.0.0", "4.4.0")
# The newest: KIP-848 groups (group.protocol=consumer) are tested with it.
NEWEST = KAFKA_CLIENTS_VERSIONS[-1]
REPO = Path(__file__).resolve().parents[2]
JAVA_BUILD = REPO / "build" / "java"
JAVA_SOURCES = Path(__file__).parent / "java"
LOG4J_CONFIG = JAVA_SOURCES / "log4j2.properties"
# The programs give up on the broker after 30-45 s; this only catches a JVM that hangs.
JAVA_TIMEOUT_S = 100
# Kafka's codec ids (RecordBatch attributes bits 0-2) by compression.type.
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@dataclass(frozen=True)
class JavaClient:
    version: str

    @property
    def home(self) -> Path:
        return JAVA_BUILD / f"kafka-{self.version}"

    def command(self, main: str, *args: str) -> list[str]:
        """The JVM command line that runs compat program ``main`` with ``args``."""
        return [
            require_tool("java"),
            # Small and quick to start: two cores are shared by the broker and the JVM.
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
            "-cp",
            f"{self.home / 'classes'}:{self.home / 'lib'}/*",
            main,
            *args,
        ]

    def run(
        self, proxy: CaptureProxy, main: str, *args: str, stdin: str | None = None
    ) -> list[dict[str, Any]]:
        """Run one compat program through the proxy; its stdout, one JSON object a line."""
        command = self.command(main, proxy.bootstrap, *args)
        try:
            done = subprocess.run(
                command, input=stdin, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S
            )
        finally:
            record_versions(f"Java kafka-clients {self.version}", proxy.take())
        assert done.returncode == 0, f"{main} exited {done.returncode}:\n{done.stderr}"
        return [json.loads(line) for line in done.stdout.splitlines()]


def built(version: str) -> JavaClient:
    """The programs compiled against kafka-clients `version`, no older than their sources."""
    client = JavaClient(version)
    stamp = client.home / "classes" / ".compiled"
    sources = list(JAVA_SOURCES.glob("*.java"))
    if not stamp.exists() or any(s.stat().st_mtime > stamp.stat().st_mtime for s in sources):
        pytest.fail(f"kafka-clients {version} programs not built or stale: run `make compat`")
    return client


@pytest.fixture(params=KAFKA_CLIENTS_VERSIONS, ids=lambda v: f"kafka-clients-{v}")
def java_client(request: pytest.FixtureRequest) -> Iterator[JavaClient]:
    yield built(request.param)


def stored_records(data_dir: Path, topic: str, partition: int) -> list[tuple[int, int, Record]]:
    """(offset, timestamp, record) for every record in the partition's segment files."""
    return [
        (header.base_offset + r.offset_delta, header.base_timestamp + r.timestamp_delta, r)
        for header, data in stored(data_dir, topic, partition)
        for r in decode_records(data, header)
    ]


def produce_timed(client: RawClient, topic: str, partition: int, base_ms: int) -> None:
    """Five batches of five records, one per codec (none, gzip, snappy, lz4, zstd, so Java
    decompresses each); record n of the partition is stamped base_ms + 10 n."""
    for b, codec in enumerate(CODECS.values()):
        records = [
            Record(
                i,
                10 * i,
                b"k%d-%d" % (partition, 5 * b + i),
                b"v%d-%d" % (partition, 5 * b + i),
                (),
            )
            for i in range(5)
        ]
        data = build_batch(records, base_timestamp=base_ms + 50 * b, codec=codec)
        assert produce(client, topic, data, partition=partition).error_code == 0


def delete_records(client: RawClient, topic: str, partition: int, offset: int) -> int:
    answer = client.request(
        DELETE_RECORDS,
        2,
        Message(
            topics=[
                Message(name=topic, partitions=[Message(partition_index=partition, offset=offset)])
            ],
            timeout_ms=1000,
        ),
    )
    result = answer.topics[0].partitions[0]
    assert result.error_code == 0, result
    low_watermark: int = result.low_watermark
    return low_watermark


def log_start_checkpoint(data_dir: Path) -> dict[tuple[str, int], int]:
    """Kafka's log-start-offset-checkpoint: version 0, a count, then `topic partition offset`."""
    version, count, *lines = (data_dir / "log-start-offset-checkpoint").read_text().splitlines()
    assert version == "0" and int(count) == len(lines)
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines)}


def meta_properties(data_dir: Path) -> dict[str, str]:
    lines = (data_dir / "meta.properties").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def partition_topic_id(data_dir: Path, topic: str, partition: int) -> str:
    text = (data_dir / f"{topic}-{partition}" / "partition.metadata").read_text()
    fields = dict(line.split(": ", 1) for line in text.splitlines())
    return fields["topic_id"]


# Five JVM runs, one per codec: more than the default per-test timeout on a busy machine.
@pytest.mark.timeout(300)
def test_java_idempotent_producer_stores_every_codec_exactly_once(
    proxied_broker: tuple[BrokerProcess, CaptureProxy], java_client: JavaClient
) -> None:
    broker, proxy = proxied_broker
    count = 1000
    for codec, codec_id in CODECS.items():
        topic = f"java-{codec}"
        acks = java_client.run(proxy, "Produce", topic, str(count), codec)
        assert [a["i"] for a in acks] == list(range(count))

        sent = [
            (b"key-%d" % i, b"java record %d: the quick brown fox jumps over the lazy dog" % i)
            for i in range(count)
        ]
        by_partition = stored_partitions(broker.data_dir, topic, PARTITIONS, idempotent=True)
        assert_exactly_once_in_order(by_partition, sent)
        # Where Java says each record went is where the broker stored it.
        where = {
            (r.key, r.value): (p, r.offset) for p, records in by_partition.items() for r in records
        }
        assert [(a["partition"], a["offset"]) for a in acks] == [where[s] for s in sent]
        # Every batch carries the codec asked for (Java compresses whatever the ratio), and
        # each partition got several batches, so sequences ran on across batches.
        for partition in range(PARTITIONS):
            batches = stored(broker.data_dir, topic, partition)
            assert len(batches) > 1, (codec, partition)
            assert {h.attributes & 0x7 for h, _ in batches} == {codec_id}, codec
            timestamps = {o: ts for o, ts, _ in stored_records(broker.data_dir, topic, partition)}
            assert {a["offset"]: a["timestamp"] for a in acks if a["partition"] == partition} == (
                timestamps
            )


def by_partition_name(offsets: dict[int, int]) -> dict[str, int]:
    """A {partition: offset} map as the programs print it (JSON keys are strings)."""
    return {str(p): o for p, o in offsets.items()}


def test_java_assigned_consumer_looks_up_seeks_and_reads_what_is_stored(
    proxied_broker: tuple[BrokerProcess, CaptureProxy], java_client: JavaClient
) -> None:
    broker, proxy = proxied_broker
    topic, base_ms = "java-assign", 1_700_000_000_000
    with RawClient(broker.port) as client:
        create_topic(client, topic)
        for partition in range(PARTITIONS):
            produce_timed(client, topic, partition, base_ms + partition)
        # Partition 1 starts inside its first batch: Java must skip the records before 4.
        assert delete_records(client, topic, 1, 4) == 4
    assert log_start_checkpoint(broker.data_dir) == {(topic, 1): 4}
    on_disk = {p: stored_records(broker.data_dir, topic, p) for p in range(PARTITIONS)}
    log_starts = {0: 0, 1: 4, 2: 0}
    log_ends = {p: records[-1][0] + 1 for p, records in on_disk.items()}
    seek_to = {0: 0, 1: 4, 2: 7}
    query_ms = base_ms + 125

    for isolation in ("read_uncommitted", "read_committed"):
        seeks = ",".join(f"{p}:{o}" for p, o in seek_to.items())
        lines = java_client.run(
            proxy, "ConsumeAssign", topic, str(PARTITIONS), isolation, str(query_ms), seeks
        )
        begin, end, to_beginning, to_end, by_time, *records, positions = lines
        assert begin == {"beginningOffsets": by_partition_name(log_starts)}
        assert to_beginning == {"seekToBeginning": by_partition_name(log_starts)}
        # Without transactions read_committed's end (the last stable offset) is the log end.
        assert end == {"endOffsets": by_partition_name(log_ends)}
        assert to_end == {"seekToEnd": by_partition_name(log_ends)}
        # offsetsForTimes: the first stored record stamped at or after the query.
        expected_by_time = {}
        for p, recs in on_disk.items():
            offset, ts = next((o, t) for o, t, _ in recs if t >= query_ms and o >= log_starts[p])
            expected_by_time[str(p)] = {"offset": offset, "timestamp": ts}
        assert by_time == {"offsetsForTimes": expected_by_time}
        # From each seek position to the end: exactly what the segment files hold.
        polled = {
            p: [
                (r["offset"], r["timestamp"], r["key"], r["value"])
                for r in records
                if r["partition"] == p
            ]
            for p in range(PARTITIONS)
        }
        assert polled == {
            p: [
                (o, ts, (r.key or b"").decode(), (r.value or b"").decode())
                for o, ts, r in recs
                if o >= seek_to[p]
            ]
            for p, recs in on_disk.items()
        }
        assert positions == {"positions": by_partition_name(log_ends)}


def test_java_consumer_group_reads_everything_and_commits_the_ends(
    proxied_broker: tuple[BrokerProcess, CaptureProxy], java_client: JavaClient
) -> None:
    broker, proxy = proxied_broker
    topic, group, count = "java-group", "java-group-1", 300
    java_client.run(proxy, "Produce", topic, str(count), "lz4")
    by_partition = stored_partitions(broker.data_dir, topic, PARTITIONS, idempotent=True)

    *records, assignment, committed = java_client.run(
        proxy, "ConsumeGroup", topic, group, str(count)
    )
    consumed: dict[int, list[StoredRecord]] = {p: [] for p in range(PARTITIONS)}
    for r in records:
        consumed[r["partition"]].append(
            StoredRecord(r["offset"], r["key"].encode(), r["value"].encode())
        )
    assert consumed == by_partition
    assert assignment == {"assignment": list(range(PARTITIONS))}
    ends = {p: len(records) for p, records in by_partition.items()}
    assert committed == {"committed": by_partition_name(ends)}

    assert committed_offsets(broker.port, group, topic) == ends
    with RawClient(broker.port) as client:
        # close() left the group (LeaveGroup): no member remains.
        described = client.request(DESCRIBE_GROUPS, 5, Message(groups=[group]))
        [state] = described.groups
        assert (state.error_code, state.group_state, state.members) == (0, "Empty", [])


def test_java_kip848_consumer_group_reads_everything_and_commits_the_ends(
    proxied_broker: tuple[BrokerProcess, CaptureProxy],
) -> None:
    broker, proxy = proxied_broker
    java_client = built(NEWEST)
    topic, group, count = "java-kip848", "java-kip848-1", 100
    java_client.run(proxy, "Produce", topic, str(count), "none")
    by_partition = stored_partitions(broker.data_dir, topic, PARTITIONS, idempotent=True)

    *records, _assignment, committed = java_client.run(
        proxy, "ConsumeGroup", topic, group, str(count), "consumer"
    )
    assert sorted((r["partition"], r["offset"]) for r in records) == sorted(
        (p, r.offset) for p, stored_records in by_partition.items() for r in stored_records
    )
    ends = {p: len(records) for p, records in by_partition.items()}
    assert committed == {"committed": by_partition_name(ends)}
    assert committed_offsets(broker.port, group, topic) == ends


def committed_offsets(port: int, group: str, topic: str) -> dict[int, int]:
    """What the group committed for the topic, by a raw OffsetFetch v8."""
    with RawClient(port) as client:
        fetched = client.request(
            OFFSET_FETCH,
            8,
            Message(groups=[Message(group_id=group, topics=None)], require_stable=False),
        )
    [stored_group] = fetched.groups
    assert stored_group.error_code == 0, stored_group
    return {
        p.partition_index: p.committed_offset
        for t in stored_group.topics
        if t.name == topic
        for p in t.partitions
    }


def admin_result(line: dict[str, Any], op: str) -> Any:
    assert line["op"] == op, line
    assert "ok" in line, line
    return line["ok"]


def admin_error(line: dict[str, Any], op: str) -> str:
    assert line["op"] == op and "error" in line, line
    error: str = line["error"]
    return error


def test_java_admin_client_calls_match_what_the_broker_stored(
    proxied_broker: tuple[BrokerProcess, CaptureProxy], java_client: JavaClient
) -> None:
    broker, proxy = proxied_broker
    data = broker.data_dir
    topic, timed, base_ms = "java-admin", "java-timed", 1_700_000_000_000
    with RawClient(broker.port) as client:
        create_topic(client, timed)
        for partition in range(PARTITIONS):
            produce_timed(client, timed, partition, base_ms + partition)
    plan = [
        f"create-topic {topic} 2 cleanup.policy=compact retention.ms=3600000",
        f"create-topic {topic} 2",
        "create-topic java-bad 1 no.such.config=1",
        f"describe-topics {topic} {timed}",
        "describe-topics java-missing",
        "describe-cluster",
        f"list-offsets {timed} {PARTITIONS} earliest read_uncommitted",
        f"list-offsets {timed} {PARTITIONS} latest read_uncommitted",
        f"list-offsets {timed} {PARTITIONS} latest read_committed",
        f"list-offsets {timed} {PARTITIONS} max-timestamp read_uncommitted",
        f"list-offsets {timed} {PARTITIONS} {base_ms + 125} read_uncommitted",
        f"list-offsets {timed} {PARTITIONS} {base_ms + 10_000} read_committed",
        f"delete-records {timed} 0:6 2:20",
        f"delete-records {timed} 1:26",
        f"list-offsets {timed} {PARTITIONS} earliest read_committed",
        f"describe-configs topic {topic}",
        f"describe-configs broker {meta_properties(data)['node.id']}",
    ]
    (
        created,
        exists,
        bad,
        described,
        missing,
        cluster,
        earliest,
        latest,
        latest_committed,
        max_ts,
        by_time,
        after_all,
        deleted,
        beyond,
        earliest_after,
        topic_configs,
        broker_configs,
    ) = java_client.run(proxy, "AdminOps", stdin="\n".join(plan) + "\n")
    meta = meta_properties(data)
    node_id = int(meta["node.id"])

    # createTopics: the partitions are on disk under the topic id Java was given, the
    # overrides are stored; an existing topic and an unknown config are refused.
    made = admin_result(created, "create-topic")
    assert sorted(p.name for p in data.glob(f"{topic}-*")) == [f"{topic}-0", f"{topic}-1"]
    assert {partition_topic_id(data, topic, p) for p in range(2)} == {made["topicId"]}
    assert (made["numPartitions"], made["replicationFactor"]) == (2, 1)
    stored_configs = {}
    for file in (data / DIR_NAME).iterdir():
        name, configs = decode(file.read_bytes())
        stored_configs[name] = configs
    assert stored_configs == {topic: {"cleanup.policy": "compact", "retention.ms": "3600000"}}
    assert made["configs"]["cleanup.policy"] == "compact"
    assert made["configs"]["retention.ms"] == "3600000"
    assert admin_error(exists, "create-topic") == "TopicExistsException"
    assert admin_error(bad, "create-topic") == "InvalidConfigurationException"
    assert not list(data.glob("java-bad-*"))

    # describeTopics: ids from partition.metadata, this node leads every partition.
    topics = admin_result(described, "describe-topics")
    for name, partitions in ((topic, 2), (timed, PARTITIONS)):
        assert topics[name] == {
            "topicId": partition_topic_id(data, name, 0),
            "internal": False,
            "partitions": [
                {"partition": p, "leader": node_id, "replicas": [node_id], "isr": [node_id]}
                for p in range(partitions)
            ],
        }
    assert admin_error(missing, "describe-topics") == "UnknownTopicOrPartitionException"

    # describeCluster: meta.properties' cluster id, this node at its advertised address.
    assert admin_result(cluster, "describe-cluster") == {
        "clusterId": meta["cluster.id"],
        "controller": node_id,
        "nodes": [{"id": node_id, "host": "127.0.0.1", "port": proxy.port, "rack": None}],
    }

    # listOffsets, each against the segment files.
    on_disk = {p: stored_records(data, timed, p) for p in range(PARTITIONS)}

    def offsets(line: dict[str, Any]) -> dict[int, tuple[int, int]]:
        answer = admin_result(line, "list-offsets")
        # Leader epoch 0 (this node's only epoch) with every offset found; -1 (Java: none)
        # when there is none, as Kafka's ListOffsetsPartitionResponse default.
        for a in answer.values():
            assert a["leaderEpoch"] == (None if a["offset"] == -1 else 0), answer
        return {int(p): (a["offset"], a["timestamp"]) for p, a in answer.items()}

    ends = {p: (recs[-1][0] + 1, -1) for p, recs in on_disk.items()}
    assert offsets(earliest) == {p: (0, -1) for p in range(PARTITIONS)}
    assert offsets(latest) == ends
    # No transactions: the last stable offset is the high watermark.
    assert offsets(latest_committed) == ends
    # Max timestamp: the first record carrying the partition's largest timestamp.
    expected_max = {}
    for p, recs in on_disk.items():
        top = max(ts for _, ts, _ in recs)
        expected_max[p] = next((o, ts) for o, ts, _ in recs if ts == top)
    assert offsets(max_ts) == expected_max
    assert offsets(by_time) == {
        p: next((o, ts) for o, ts, _ in recs if ts >= base_ms + 125) for p, recs in on_disk.items()
    }
    # No record that late: offset -1 (Kafka's UNKNOWN_OFFSET), timestamp -1.
    assert offsets(after_all) == {p: (-1, -1) for p in range(PARTITIONS)}

    # deleteRecords: Java's low watermarks are the log starts the broker checkpointed; an
    # offset past the high watermark is refused and changes nothing.
    assert admin_result(deleted, "delete-records") == {"0": 6, "2": 20}
    assert log_start_checkpoint(data) == {(timed, 0): 6, (timed, 2): 20}
    assert admin_error(beyond, "delete-records") == "OffsetOutOfRangeException"
    log_starts = {0: 6, 1: 0, 2: 20}
    assert offsets(earliest_after) == {p: (o, -1) for p, o in log_starts.items()}
    with RawClient(broker.port) as client:
        assert fetch_partition(client, timed, 5, partition=0).error_code == (
            ErrorCode.OFFSET_OUT_OF_RANGE
        )
        for p, start in log_starts.items():
            answer = fetch_partition(client, timed, start, partition=p)
            assert (answer.error_code, answer.log_start_offset) == (0, start)
            # What read_committed's latest was checked against above: without transactions
            # the last stable offset is the high watermark.
            assert answer.last_stable_offset == answer.high_watermark == ends[p][0]

    # describeConfigs: the stored overrides as DYNAMIC_TOPIC_CONFIG, the rest defaults.
    described_configs = admin_result(topic_configs, "describe-configs")
    overridden = {
        name: entry["value"]
        for name, entry in described_configs.items()
        if entry["source"] == "DYNAMIC_TOPIC_CONFIG"
    }
    assert overridden == stored_configs[topic]
    assert described_configs["segment.bytes"] == {
        "value": "1073741824",
        "source": "DEFAULT_CONFIG",
        "readOnly": False,
        "sensitive": False,
    }
    brokers = admin_result(broker_configs, "describe-configs")
    assert brokers["node.id"]["value"] == str(node_id)
    assert brokers["log.dirs"]["value"] == str(data)
