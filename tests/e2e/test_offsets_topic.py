"""__consumer_offsets as Kafka shows it: created at the first FindCoordinator for a group,
listed as internal with offsets.topic.num.partitions partitions, compacted, and holding the
group coordinator's records in Kafka's formats at the partition Kafka picks for the group;
checked through real clients and on the partition's segment files."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol import coordinator_records as cr
from storage.committed_offsets import CommittedOffset, CommittedOffsets, GroupRecord
from tests.e2e.test_consumer_groups_raw import assigned, heartbeat_until, join
from tests.support.broker_process import BrokerProcess, running
from tests.support.compaction import StoredRecord, read_partition
from tests.support.internal_topics import java_partition
from tests.support.polling import until_sync
from tests.support.produce import create_partitioned_topic
from tests.support.raw_client import RawClient
from tests.support.stored_groups import stored_groups

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")

OFFSETS = "__consumer_offsets"
SETTINGS = {"offsets.topic.num.partitions": "7"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(tmp_path / "data", SETTINGS) as proc:
        yield proc


def produce(broker: BrokerProcess, topic: str, count: int) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(count):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0)
    assert producer.flush(15) == 0


def commit(broker: BrokerProcess, group: str, topic: str, offset: int, metadata: str) -> None:
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False
    )
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.commit({tp: kafka.structs.OffsetAndMetadata(offset, metadata, -1)})
    finally:
        consumer.close()


def consume_and_commit(
    broker: BrokerProcess, group: str, topic: str, count: int, **conf: str
) -> None:
    """A subscribed confluent-kafka consumer of ``group`` reads ``count`` records of
    ``topic``, commits them and leaves."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **conf,
        }
    )
    try:
        consumer.subscribe([topic])
        seen = 0
        for _ in range(300):
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                seen += 1
            if seen == count:
                break
        assert seen == count
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def decoded(records: list[StoredRecord]) -> list[tuple[int, object, object]]:
    """(record type, key, (value version, value) or None) of each stored record."""
    out: list[tuple[int, object, object]] = []
    for r in records:
        assert r.key is not None
        kind, key = cr.decode_key(r.key)
        out.append((kind, key, None if r.value is None else cr.decode_value(kind, r.value)))
    return out


def stored(broker: BrokerProcess, group: str) -> list[tuple[int, object, object]]:
    return decoded(read_partition(broker.data_dir, OFFSETS, java_partition(group, 7)))


def test_a_commit_creates_the_internal_topic_and_writes_kafkas_offset_commit_record(
    broker: BrokerProcess,
) -> None:
    produce(broker, "orders", 3)
    admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    assert OFFSETS not in admin.list_topics(timeout=10).topics
    commit(broker, "billing", "orders", 2, "checkpoint")

    listed = admin.list_topics(timeout=10).topics
    assert OFFSETS in listed and len(listed[OFFSETS].partitions) == 7
    kp_admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        [described] = kp_admin.describe_topics([OFFSETS])
    finally:
        kp_admin.close()
    assert described["is_internal"] is True
    configs = admin.describe_configs(
        [confluent_admin.ConfigResource(confluent_admin.ResourceType.TOPIC, OFFSETS)]
    )
    [entries] = [f.result(10) for f in configs.values()]
    assert entries["cleanup.policy"].value == "compact"

    [(kind, key, value)] = stored(broker, "billing")
    assert kind == cr.OFFSET_COMMIT
    assert (key.group, key.topic, key.partition) == ("billing", "orders", 0)
    assert value is not None
    version, body = value
    assert version == 3
    assert (body.offset, body.metadata, body.leader_epoch) == (2, "checkpoint", -1)
    assert body.commit_timestamp > 0
    # Nothing in the other partitions.
    others = [p for p in range(7) if p != java_partition("billing", 7)]
    assert all(read_partition(broker.data_dir, OFFSETS, p) == [] for p in others)


def test_find_coordinator_for_a_group_creates_the_topic(broker: BrokerProcess) -> None:
    admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    assert OFFSETS not in admin.list_topics(timeout=10).topics
    # DescribeConsumerGroups first asks FindCoordinator for the group.
    [described] = admin.describe_consumer_groups(["nobody-yet"], request_timeout=10).values()
    described.result(10)
    assert OFFSETS in admin.list_topics(timeout=10).topics
    assert (broker.data_dir / f"{OFFSETS}-6").is_dir()
    assert not (broker.data_dir / f"{OFFSETS}-7").exists()


def test_a_consumer_reads_the_records_with_exclude_internal_topics_off(
    broker: BrokerProcess,
) -> None:
    produce(broker, "clicks", 5)
    commit(broker, "reader-a", "clicks", 4, "")
    reader = kafka.KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        exclude_internal_topics=False,
        auto_offset_reset="earliest",
    )
    try:
        partition = java_partition("reader-a", 7)
        tp = kafka.TopicPartition(OFFSETS, partition)
        reader.assign([tp])
        got: list[object] = []
        for _ in range(50):
            got += reader.poll(timeout_ms=200).get(tp, [])
            if got:
                break
        [message] = got
    finally:
        reader.close()
    assert message.partition == partition
    kind, key = cr.decode_key(message.key)
    assert (kind, key.group, key.topic, key.partition) == (
        cr.OFFSET_COMMIT,
        "reader-a",
        "clicks",
        0,
    )
    assert cr.decode_value(kind, message.value)[1].offset == 4


def test_a_classic_group_writes_group_metadata_and_its_deletion_tombstones(
    broker: BrokerProcess,
) -> None:
    produce(broker, "events", 4)
    group = "classic-g"
    consume_and_commit(broker, group, "events", 4, **{"client.id": "classic-client"})

    records = stored(broker, group)
    groups = [(k, v) for kind, k, v in records if kind == cr.GROUP_METADATA]
    assert groups, records
    _, (version, stable) = next((k, v) for k, v in groups if v is not None and v[1].members)
    assert version == 3
    assert stable.protocol_type == "consumer" and stable.generation >= 1
    [member] = stable.members
    assert member.client_id == "classic-client" and member.subscription and member.assignment
    assert stable.leader == member.member_id
    commits = [v[1].offset for kind, _, v in records if kind == cr.OFFSET_COMMIT and v]
    assert commits == [4]

    admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    [done] = admin.delete_consumer_groups([group], request_timeout=10).values()
    done.result(10)
    tail = stored(broker, group)[len(records) :]
    assert [(kind, v) for kind, _, v in tail][-2:] == [
        (cr.OFFSET_COMMIT, None),
        (cr.GROUP_METADATA, None),
    ]


def test_a_consumer_protocol_group_writes_the_consumer_group_records(
    broker: BrokerProcess,
) -> None:
    produce(broker, "payments", 2)
    group = "kip848-g"
    consume_and_commit(broker, group, "payments", 2, **{"group.protocol": "consumer"})

    def kinds() -> set[int]:
        return {kind for kind, _, _ in stored(broker, group)}

    wanted = {
        cr.CONSUMER_GROUP_MEMBER_METADATA,
        cr.CONSUMER_GROUP_METADATA,
        cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
        cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
        cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        cr.OFFSET_COMMIT,
    }
    assert until_sync(lambda: wanted <= kinds(), 10), kinds()
    records = stored(broker, group)
    epochs = [v[1].epoch for kind, _, v in records if kind == cr.CONSUMER_GROUP_METADATA and v]
    assert epochs and epochs == sorted(epochs) and epochs[0] >= 1
    subscribed = [
        v[1].subscribed_topic_names
        for kind, _, v in records
        if kind == cr.CONSUMER_GROUP_MEMBER_METADATA and v
    ]
    assert ["payments"] in subscribed
    # The member left on close: its three records end in tombstones.
    leaves = [kind for kind, _, v in records if v is None]
    assert set(leaves) >= {
        cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
        cr.CONSUMER_GROUP_MEMBER_METADATA,
    }


def test_a_data_directory_from_before_the_topic_is_written_into_it_at_start(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with running(data, SETTINGS) as first:
        produce(first, "legacy", 3)
    # As a data directory of an older version: the groups in the private log only, written
    # by that version's writer.
    old = CommittedOffsets.open(data)
    old.commit("old-group", [("legacy", 0, CommittedOffset(3, -1, "kept", 1_000))])
    old.commit("old-group", [("legacy", 1, CommittedOffset(7, 2, None, 1_001))])
    old.put_group("old-group", GroupRecord("consumer", 5, state_timestamp_ms=1_002))
    old.commit("other", [("legacy", 0, CommittedOffset(1, -1, "", 1_003))])
    old.close()
    with running(data, SETTINGS) as second:
        log_text = second.log_text()
        records = decoded(read_partition(data, OFFSETS, java_partition("old-group", 7)))
        assert [
            (kind, k.partition, v[1].offset, v[1].leader_epoch, v[1].metadata)
            for kind, k, v in records
            if v and kind == cr.OFFSET_COMMIT
        ] == [(cr.OFFSET_COMMIT, 0, 3, -1, "kept"), (cr.OFFSET_COMMIT, 1, 7, 2, "")]
        [(_, _, group_value)] = [r for r in records if r[0] == cr.GROUP_METADATA]
        assert group_value is not None
        assert (group_value[1].protocol_type, group_value[1].generation) == ("consumer", 5)
        # ... and the group's offset is what it was, through the normal API.
        consumer = kafka.KafkaConsumer(bootstrap_servers=second.bootstrap, group_id="old-group")
        try:
            assert consumer.committed(kafka.TopicPartition("legacy", 0)) == 3
        finally:
            consumer.close()
    assert "moved 2 group(s) from committed-offsets.log into __consumer_offsets" in log_text
    # The private file is renamed, never read again.
    assert not (data / "committed-offsets.log").exists()
    assert (data / "committed-offsets.log.migrated").exists()
    # The key bytes are Kafka's: int16 type 1, then group, topic, partition (int16 lengths).
    raw = read_partition(data, OFFSETS, java_partition("old-group", 7))[0].key
    assert raw == struct.pack(">hh", 1, 9) + b"old-group" + struct.pack(">h", 6) + b"legacy" + (
        b"\x00\x00\x00\x00"
    )
    # A second start moves nothing and keeps the state (from the topic alone).
    with running(data, SETTINGS) as third:
        assert "moved" not in third.log_text()
    state = stored_groups(data)
    assert state.offsets("old-group")[("legacy", 1)].offset == 7
    assert state.offsets("other")[("legacy", 0)].offset == 1


def test_a_migration_writes_only_what_the_topic_lacks(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running(data, SETTINGS) as first:
        produce(first, "mixed", 1)
        commit(first, "in-topic", "mixed", 1, "topic")
    before = len(read_partition(data, OFFSETS, java_partition("in-topic", 7)))
    # An older version mirrored its log into the topic: the same offset in both, and one
    # group only in the log (a mirror write it dropped).
    topic_value = stored_groups(data).offsets("in-topic")[("mixed", 0)]
    old = CommittedOffsets.open(data)
    old.commit("in-topic", [("mixed", 0, topic_value)])
    old.commit("log-only", [("mixed", 0, CommittedOffset(1, -1, "log", 2_000))])
    old.close()
    with running(data, SETTINGS) as second:
        assert (
            "moved 2 group(s) from committed-offsets.log into __consumer_offsets (1 written)"
            in (second.log_text())
        )
    assert len(read_partition(data, OFFSETS, java_partition("in-topic", 7))) == before
    assert stored_groups(data).offsets("log-only")[("mixed", 0)].metadata == "log"
    assert not (data / "committed-offsets.log").exists()


def test_acknowledged_commits_survive_sigkill_without_a_private_log(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running(data, SETTINGS) as proc:
        produce(proc, "killed", 1)
        for i in range(1, 21):
            commit(proc, f"kill-{i % 3}", "killed", i, f"m{i}")
        proc.kill()
        proc.start()
        consumer = kafka.KafkaConsumer(bootstrap_servers=proc.bootstrap, group_id="kill-2")
        try:
            got = consumer.committed(kafka.TopicPartition("killed", 0), metadata=True)
            assert got == kafka.structs.OffsetAndMetadata(20, "m20", -1)
        finally:
            consumer.close()
    assert not list(data.glob("committed-offsets*"))
    state = stored_groups(data)
    assert {g: state.offsets(g)[("killed", 0)].offset for g in ("kill-0", "kill-1", "kill-2")} == {
        "kill-0": 18,
        "kill-1": 19,
        "kill-2": 20,
    }


def test_a_client_may_not_produce_to_the_internal_topic(broker: BrokerProcess) -> None:
    commit_topic = "refused"
    produce(broker, commit_topic, 1)
    commit(broker, "guarded", commit_topic, 1, "")
    partition = java_partition("guarded", 7)
    before = read_partition(broker.data_dir, OFFSETS, partition)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "retries": 0, "acks": "all"}
    )
    errors: list[object] = []
    producer.produce(
        OFFSETS,
        key=b"k",
        value=b"v",
        partition=partition,
        on_delivery=lambda e, m: errors.append(e),
    )
    producer.flush(15)
    [error] = errors
    assert error is not None and error.code() == confluent_kafka.KafkaError.TOPIC_EXCEPTION
    assert read_partition(broker.data_dir, OFFSETS, partition) == before
    assert "refused a produce to internal topic __consumer_offsets" in broker.log_text()


def test_a_restart_loads_the_groups_from_the_topic_alone(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with running(data, SETTINGS) as first:
        produce(first, "history", 4)
        commit(first, "standalone", "history", 3, "kept")
        commit(first, "standalone", "history", 4, "newer")
        commit(first, "doomed", "history", 1, "")
        admin = confluent_admin.AdminClient({"bootstrap.servers": first.bootstrap})
        [deleted] = admin.delete_consumer_groups(["doomed"], request_timeout=10).values()
        deleted.result(10)
    # The topic is the coordinator's only store: no file of its own in the data directory.
    assert not (data / "committed-offsets.log").exists()
    assert not list(data.glob("committed-offsets*"))
    with running(data, SETTINGS) as second:
        assert "loaded 1 group(s) from __consumer_offsets" in second.log_text()
        consumer = kafka.KafkaConsumer(bootstrap_servers=second.bootstrap, group_id="standalone")
        try:
            tp = kafka.TopicPartition("history", 0)
            assert consumer.committed(tp, metadata=True) == kafka.structs.OffsetAndMetadata(
                4, "newer", -1
            )
        finally:
            consumer.close()
        admin = confluent_admin.AdminClient({"bootstrap.servers": second.bootstrap})
        listed = admin.list_consumer_groups(request_timeout=10).result(10)
        assert {g.group_id for g in listed.valid} == {"standalone"}
    assert not list(data.glob("committed-offsets*"))


def _described(bootstrap: str, groups: list[str]) -> dict[str, object]:
    admin = confluent_admin.AdminClient({"bootstrap.servers": bootstrap})
    out: dict[str, object] = {}
    for group, future in admin.describe_consumer_groups(groups, request_timeout=10).items():
        d = future.result(10)
        out[group] = (
            str(d.type),
            str(d.state),
            sorted(
                (m.member_id, sorted((p.topic, p.partition) for p in m.assignment.topic_partitions))
                for m in d.members
            ),
        )
    return out


def test_groups_with_members_are_read_back_from_the_topic_as_they_were(tmp_path: Path) -> None:
    data = tmp_path / "data"
    overrides = {**SETTINGS, "group.initial.rebalance.delay.ms": "0"}
    names = {"classic": "back-classic", "consumer": "back-consumer"}
    with running(data, overrides) as first:
        produce(first, "roster", 2)
        consumers = []
        for protocol, group in names.items():
            consumer = confluent_kafka.Consumer(
                {
                    "bootstrap.servers": first.bootstrap,
                    "group.id": group,
                    "group.protocol": protocol,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
            consumer.subscribe(["roster"])
            consumers.append(consumer)
        got = 0
        for _ in range(300):
            for consumer in consumers:
                msg = consumer.poll(0.05)
                got += msg is not None and msg.error() is None
            if got == 4:
                break
        assert got == 4

        def stable() -> bool:
            found = _described(first.bootstrap, list(names.values()))
            return all("STABLE" in str(v[1]) and v[2] for v in found.values())  # type: ignore[index]

        assert until_sync(stable, 20)
        before = _described(first.bootstrap, list(names.values()))
        # Stopped while the members are in their groups (their records stay, as after a crash).
        first.stop()
        for consumer in consumers:
            consumer.close()
    assert not (data / "committed-offsets.log").exists()
    with running(data, overrides) as second:
        assert "loaded 2 group(s) from __consumer_offsets" in second.log_text()
        after = _described(second.bootstrap, list(names.values()))
    assert after == before


def test_the_log_cleaner_keeps_the_latest_commit_of_each_key(tmp_path: Path) -> None:
    overrides = {"offsets.topic.num.partitions": "1", "log.cleaner.backoff.ms": "200"}
    with running(tmp_path / "data", overrides) as proc:
        produce(proc, "busy", 1)
        produce(proc, "busy-tick", 1)
        consumer = kafka.KafkaConsumer(
            bootstrap_servers=proc.bootstrap, group_id="churn", enable_auto_commit=False
        )
        try:
            tp = kafka.TopicPartition("busy", 0)
            consumer.assign([tp])
            om = kafka.structs.OffsetAndMetadata
            consumer.commit({tp: om(0, "v0", -1)})
            admin = confluent_admin.AdminClient({"bootstrap.servers": proc.bootstrap})
            resource = confluent_admin.ConfigResource(
                confluent_admin.ResourceType.TOPIC,
                OFFSETS,
                incremental_configs=[
                    confluent_admin.ConfigEntry(
                        name,
                        value,
                        incremental_operation=confluent_admin.AlterConfigOpType.SET,
                    )
                    for name, value in (
                        ("segment.ms", "300"),
                        ("min.cleanable.dirty.ratio", "0.01"),
                    )
                ],
            )
            [altered] = admin.incremental_alter_configs([resource]).values()
            altered.result(10)
            for n in range(1, 40):
                consumer.commit({tp: om(n, f"v{n}", -1)})

            def versions() -> list[tuple[int, str]]:
                out = []
                for r in read_partition(proc.data_dir, OFFSETS, 0):
                    assert r.key is not None and r.value is not None
                    kind, key = cr.decode_key(r.key)
                    if kind == cr.OFFSET_COMMIT and key.topic == "busy":
                        body = cr.decode_value(kind, r.value)[1]
                        out.append((body.offset, body.metadata))
                return out

            # 40 commits were appended, one record each (the cleaner may already be at work).
            # Commits of another key keep rolling segments (segment.ms) so the cleaner gets to
            # the ones above; the active segment is never cleaned.
            other = kafka.TopicPartition("busy-tick", 0)
            for tick in range(200):
                if versions() == [(39, "v39")]:
                    break
                consumer.commit({other: om(tick, "", -1)})
                time.sleep(0.1)  # pacing, not waiting: segment.ms counts wall-clock time
            assert versions() == [(39, "v39")]
        finally:
            consumer.close()
        assert consumer_committed(proc, "churn", "busy") == 39


def consumer_committed(broker: BrokerProcess, group: str, topic: str) -> int | None:
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group)
    try:
        committed: int | None = consumer.committed(kafka.TopicPartition(topic, 0))
        return committed
    finally:
        consumer.close()


def test_in_a_simulated_cluster_a_consumer_reads_it_from_its_leader(tmp_path: Path) -> None:
    # Metadata names each partition's leader as FindCoordinator names the group's
    # coordinator (keyed by the topic's name), and Fetch is served there.
    with running(tmp_path / "data", {"minikafka.cluster.size": "3"}) as proc:
        produce(proc, "spread", 2)
        commit(proc, "clustered", "spread", 2, "here")
        partition = java_partition("clustered", 50)
        reader = confluent_kafka.Consumer(
            {
                "bootstrap.servers": proc.bootstrap,
                "group.id": "offsets-reader",
                "enable.auto.commit": False,
            }
        )
        try:
            reader.assign([confluent_kafka.TopicPartition(OFFSETS, partition, 0)])
            got = None
            for _ in range(100):
                msg = reader.poll(0.1)
                if msg is not None and msg.error() is None:
                    kind, key = cr.decode_key(msg.key())
                    if kind == cr.OFFSET_COMMIT and key.group == "clustered":
                        got = cr.decode_value(kind, msg.value())[1]
                        break
            assert got is not None and (got.offset, got.metadata) == (2, "here")
        finally:
            reader.close()


def test_a_regex_group_writes_its_regex_and_subscription_metadata_records(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    regex, group = r"orders\..*", "regex-g"
    with running(data, SETTINGS) as proc, RawClient(proc.port) as client:
        v1 = create_partitioned_topic(client, "orders.v1", 2)
        create_partitioned_topic(client, "payments", 1)
        answer = join(client, group, "m", [], regex=regex)
        assert answer.error_code == 0, answer
        heartbeat_until(
            client,
            group,
            "m",
            answer.member_epoch,
            assigned(answer),
            lambda o: o == {v1: {0, 1}},
            10,
        )
        records = stored(proc, group)
    # ConsumerGroupRegularExpression: the regex's topics once resolved.
    regexes = [(k, v) for kind, k, v in records if kind == cr.CONSUMER_GROUP_REGULAR_EXPRESSION]
    assert regexes, records
    key, value = regexes[-1]
    assert (key.group_id, key.regular_expression) == (group, regex)
    assert value is not None and value[0] == 0 and value[1].topics == ["orders.v1"]
    assert value[1].timestamp > 0
    # ConsumerGroupPartitionMetadata: the subscribed topics' ids and partition counts (no
    # racks in 4.0), written before the group epoch it bumps.
    kinds = [kind for kind, _, _ in records]
    at = max(i for i, kind in enumerate(kinds) if kind == cr.CONSUMER_GROUP_PARTITION_METADATA)
    assert cr.CONSUMER_GROUP_METADATA in kinds[at + 1 :]
    [topic] = records[at][2][1].topics  # type: ignore[index]
    assert (topic.topic_name, bytes(topic.topic_id), topic.num_partitions) == ("orders.v1", v1, 2)
    assert topic.partition_metadata == []

    # Read back from the topic (the only store): the group keeps its resolved regex.
    with running(data, SETTINGS):
        pass
    assert not (data / "committed-offsets.log").exists()
    kept = stored_groups(data).consumer_groups()[group]
    assert kept.resolved_regexes == ((regex, ("orders.v1",)),)
