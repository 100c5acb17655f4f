"""The calls users of confluent-kafka, kafka-python and aiokafka make most, against a real broker.

Other e2e tests drive the clients through what our features need (idempotent produce, groups,
offsets). A user's first calls are different: list every topic, subscribe by pattern, describe
the cluster, the topics, the groups and the configs, look offsets up by timestamp, ask a
producer for a topic's partitions. Each is made here through each client's own API and checked
against what the broker stored (segment files, ``partition.metadata``, ``meta.properties``) or
answers on the wire to a raw request (DescribeGroups, OffsetFetch, ListGroups,
DescribeConfigs), not only against what the client reported.

As in Kafka, ``__consumer_offsets`` (internal) is among all topics once a group was used; a
consumer's topic listing leaves it out (exclude.internal.topics), admin listings do not.
"""

from __future__ import annotations

import asyncio
import base64
import struct
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.list_groups import LIST_GROUPS
from protocol.records import Record, build_batch, decode_records
from protocol.schema import Message
from tests.e2e.test_admin_configs import create
from tests.support.broker_process import BrokerProcess
from tests.support.group_offsets import committed_offsets
from tests.support.produce import produce, stored
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

# kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text, deprecated
# since Python 3.11; pytest runs with warnings as errors.
pytestmark = KAFKA_PYTHON_SCHEMA_READS

CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka")
DEADLINE_S = 30.0
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
T = TypeVar("T")


# --- what the broker stored and answers ------------------------------------------------------


@dataclass(frozen=True, order=True)
class Rec:
    """One record: where it is and what it holds (stored in a segment, or read by a client)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    value: bytes | None


def tag() -> str:
    return uuid.uuid4().hex[:8]


def create_topics(broker: BrokerProcess, topics: dict[str, int], **configs: str) -> None:
    with RawClient(broker.port) as client:
        for name, partitions in topics.items():
            result = create(client, name, partitions, configs=dict(configs) or None)
            assert result.error_code == 0, result


def fill(broker: BrokerProcess, topic: str, partition: int, batches: list[list[int]]) -> None:
    """One raw Produce per batch; each record carries exactly its timestamp from ``batches``.

    Timestamps go down inside a batch and between batches, so "the first record at or after
    a timestamp" is not simply "the first batch whose base timestamp reaches it".
    """
    with RawClient(broker.port) as client:
        for stamps in batches:
            base = min(stamps)
            records = [
                Record(i, ts - base, b"k", f"{topic}/{partition}/{ts}".encode(), ())
                for i, ts in enumerate(stamps)
            ]
            answer = produce(
                client, topic, build_batch(records, base_timestamp=base), partition=partition
            )
            assert answer.error_code == 0, answer


def stored_records(data_dir: Path, topic: str, partition: int) -> list[Rec]:
    """Every record of a partition as the segment files hold it, in offset order."""
    out: list[Rec] = []
    for header, data in stored(data_dir, topic, partition):
        for r in decode_records(data, header):
            out.append(
                Rec(
                    topic,
                    partition,
                    header.base_offset + r.offset_delta,
                    header.base_timestamp + r.timestamp_delta,
                    r.value,
                )
            )
    return out


def log_end(data_dir: Path, topic: str, partition: int) -> int:
    batches = stored(data_dir, topic, partition)
    return batches[-1][0].next_offset if batches else 0


def topics_on_disk(data_dir: Path) -> dict[str, int]:
    """topic -> partition count, from the ``<topic>-<partition>`` directories."""
    counts: dict[str, int] = {}
    for path in data_dir.iterdir():
        if path.is_dir() and (path / "partition.metadata").exists():
            topic, _, _partition = path.name.rpartition("-")
            counts[topic] = counts.get(topic, 0) + 1
    return counts


def stored_topic_id(data_dir: Path, topic: str) -> bytes:
    """The 16 bytes of ``topic_id`` in partition.metadata (Kafka's url-safe base64)."""
    text = (data_dir / f"{topic}-0" / "partition.metadata").read_text()
    (line,) = [x for x in text.splitlines() if x.startswith("topic_id:")]
    return base64.urlsafe_b64decode(line.split(":", 1)[1].strip() + "==")


def stored_cluster_id(data_dir: Path) -> str:
    text = (data_dir / "meta.properties").read_text()
    (line,) = [x for x in text.splitlines() if x.startswith("cluster.id=")]
    return line.split("=", 1)[1]


def raw_committed(broker: BrokerProcess, group: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> committed offset, from an OffsetFetch v8 for every partition."""
    return committed_offsets(broker.port, group)


def raw_group(broker: BrokerProcess, group: str) -> Message:
    with RawClient(broker.port) as client:
        answer = client.request(
            DESCRIBE_GROUPS, 5, Message(groups=[group], include_authorized_operations=False)
        )
    (result,) = answer.groups
    assert result.error_code == 0, result
    return result  # type: ignore[no-any-return]


def raw_group_ids(broker: BrokerProcess) -> set[str]:
    with RawClient(broker.port) as client:
        answer = client.request(LIST_GROUPS, 4, Message(states_filter=[]))
    assert answer.error_code == 0, answer
    return {g.group_id for g in answer.groups}


def raw_configs(broker: BrokerProcess, kind: int, name: str) -> dict[str, str | None]:
    with RawClient(broker.port) as client:
        answer = client.request(
            DESCRIBE_CONFIGS,
            4,
            Message(
                resources=[
                    Message(resource_type=kind, resource_name=name, configuration_keys=None)
                ],
                include_synonyms=False,
                include_documentation=False,
            ),
        )
    (result,) = answer.results
    assert result.error_code == 0, result
    return {c.name: c.value for c in result.configs}


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """A classic consumer's ConsumerProtocolAssignment (any version): topic -> partitions."""
    pos = 2  # int16 version; every version starts with the same topic list
    (topics,) = struct.unpack_from(">i", data, pos)
    pos += 4
    out: dict[str, list[int]] = {}
    for _ in range(topics):
        (length,) = struct.unpack_from(">h", data, pos)
        name = data[pos + 2 : pos + 2 + length].decode()
        pos += 2 + length
        (count,) = struct.unpack_from(">i", data, pos)
        out[name] = list(struct.unpack_from(f">{count}i", data, pos + 4))
        pos += 4 + 4 * count
    return out


# --- a consumer group member of each client, driven synchronously -----------------------------


class GroupConsumer(Protocol):
    def poll(self) -> list[Rec]: ...
    def commit(self) -> None: ...
    def assignment(self) -> set[tuple[str, int]]: ...
    def close(self) -> None: ...


# Short metadata refreshes so that a topic created after a pattern subscription is seen within
# a second or two (Kafka's defaults are 5 minutes).
METADATA_MAX_AGE_MS = 500


class ConfluentGroupConsumer:
    def __init__(self, bootstrap: str, group: str, subscription: list[str]) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "topic.metadata.refresh.interval.ms": METADATA_MAX_AGE_MS,
                "heartbeat.interval.ms": 500,
            }
        )
        # librdkafka takes a name starting with "^" as a regular expression.
        self.consumer.subscribe(subscription)

    def poll(self) -> list[Rec]:
        out = []
        for m in self.consumer.consume(num_messages=500, timeout=0.2):
            assert m.error() is None, m.error()
            topic, partition, offset = m.topic(), m.partition(), m.offset()
            assert topic is not None and partition is not None and offset is not None
            out.append(Rec(topic, partition, offset, m.timestamp()[1], m.value()))
        return out

    def commit(self) -> None:
        self.consumer.commit(asynchronous=False)

    def assignment(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonGroupConsumer:
    def __init__(self, bootstrap: str, group: str, subscription: list[str]) -> None:
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            metadata_max_age_ms=METADATA_MAX_AGE_MS,
            heartbeat_interval_ms=500,
        )
        subscribe(self.consumer, subscription)

    def poll(self) -> list[Rec]:
        # A long timeout (poll returns as soon as records arrive): kafka-python 3.0.12 drops a
        # rebalance whose JoinGroup/SyncGroup round is still in flight when poll's timeout
        # expires. It leaves the join task running, and if the leader's assignment snapshot
        # already matches the metadata, need_rejoin() is False on the next poll, so nobody
        # applies the SyncGroup answer: the member keeps its old partitions and no heartbeat
        # (seen on a loaded machine; the broker's JoinGroup and SyncGroup answers were right).
        batches = self.consumer.poll(timeout_ms=5000)
        return [_rec(tp, m) for tp, ms in batches.items() for m in ms]

    def commit(self) -> None:
        self.consumer.commit()

    def assignment(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


class AiokafkaGroupConsumer:
    """aiokafka on a private event loop; its heartbeats run while a call is in progress."""

    def __init__(self, bootstrap: str, group: str, subscription: list[str]) -> None:
        self.loop = asyncio.new_event_loop()

        async def start() -> Any:
            from aiokafka import AIOKafkaConsumer

            consumer = AIOKafkaConsumer(
                bootstrap_servers=bootstrap,
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                metadata_max_age_ms=METADATA_MAX_AGE_MS,
                heartbeat_interval_ms=500,
            )
            await consumer.start()
            subscribe(consumer, subscription)
            return consumer

        try:
            self.consumer = self.run(start())
        except BaseException:
            self.loop.close()
            raise

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def poll(self) -> list[Rec]:
        batches = self.run(self.consumer.getmany(timeout_ms=200))
        return [_rec(tp, m) for tp, ms in batches.items() for m in ms]

    def commit(self) -> None:
        self.run(self.consumer.commit())

    def assignment(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def close(self) -> None:
        try:
            self.run(self.consumer.stop())
        finally:
            self.loop.close()


def subscribe(consumer: Any, subscription: list[str]) -> None:
    """kafka-python and aiokafka take a pattern as ``pattern=``, names as a list."""
    if len(subscription) == 1 and subscription[0].startswith("^"):
        consumer.subscribe(pattern=subscription[0])
    else:
        consumer.subscribe(subscription)


def _rec(tp: Any, m: Any) -> Rec:
    return Rec(tp.topic, tp.partition, m.offset, m.timestamp, m.value)


GROUP_CONSUMERS: dict[str, Callable[[str, str, list[str]], GroupConsumer]] = {
    "confluent-kafka": ConfluentGroupConsumer,
    "kafka-python": KafkaPythonGroupConsumer,
    "aiokafka": AiokafkaGroupConsumer,
}


def read_until(consumer: GroupConsumer, want: set[Rec], got: set[Rec]) -> None:
    """Poll (committing what each poll returned) until ``got`` holds every record in ``want``."""
    deadline = time.monotonic() + DEADLINE_S
    while not want <= got:
        assert time.monotonic() < deadline, f"still missing {sorted(want - got)[:5]}"
        batch = consumer.poll()
        if batch:
            got.update(batch)
            consumer.commit()


# --- list everything ---------------------------------------------------------------------------

# call -> {topic: partition count, or None where the call reports names only}
Listing = dict[str, dict[str, int | None]]


def list_confluent(bootstrap: str, one: str) -> Listing:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

    def counts(meta: Any) -> dict[str, int | None]:
        return {name: len(t.partitions) for name, t in meta.topics.items()}

    admin = AdminClient({"bootstrap.servers": bootstrap})
    producer = Producer({"bootstrap.servers": bootstrap})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"list-{tag()}"})
    try:
        return {
            "AdminClient.list_topics()": counts(admin.list_topics(timeout=10)),
            "Consumer.list_topics()": counts(consumer.list_topics(timeout=10)),
            "Consumer.list_topics(topic)": counts(consumer.list_topics(one, timeout=10)),
            "Producer.list_topics()": counts(producer.list_topics(timeout=10)),
            "Producer.list_topics(topic)": counts(producer.list_topics(one, timeout=10)),
        }
    finally:
        consumer.close()
        assert producer.flush(10) == 0


def list_kafka_python(bootstrap: str, one: str) -> Listing:
    from kafka import KafkaConsumer
    from kafka.admin import KafkaAdminClient

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        names = consumer.topics()
        return {
            "KafkaConsumer.topics()": {n: len(consumer.partitions_for_topic(n)) for n in names},
            "KafkaConsumer.partitions_for_topic(topic)": {
                one: len(consumer.partitions_for_topic(one))
            },
            "KafkaAdminClient.list_topics()": dict.fromkeys(admin.list_topics()),
        }
    finally:
        consumer.close()
        admin.close()


def list_aiokafka(bootstrap: str, one: str) -> Listing:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient

    async def run() -> Listing:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await consumer.start()
        await admin.start()
        try:
            return {
                "AIOKafkaConsumer.topics()": dict.fromkeys(await consumer.topics()),
                "AIOKafkaAdminClient.list_topics()": dict.fromkeys(await admin.list_topics()),
            }
        finally:
            await consumer.stop()
            await admin.close()

    return asyncio.run(run())


LISTERS: dict[str, Callable[[str, str], Listing]] = {
    "confluent-kafka": list_confluent,
    "kafka-python": list_kafka_python,
    "aiokafka": list_aiokafka,
}


INTERNAL = ("__consumer_offsets", "__transaction_state")


@pytest.mark.parametrize("client", CLIENTS)
def test_list_topics_names_exactly_the_topics_on_disk(
    shared_broker: BrokerProcess, client: str
) -> None:
    t = tag()
    one, three = f"ls-one-{t}", f"ls-three-{t}"
    create_topics(shared_broker, {one: 1, three: 3})
    # A group was used (as Kafka, the first FindCoordinator for a group creates
    # __consumer_offsets), so that no listing creates it midway through.
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    [found] = admin.describe_consumer_groups([f"ls-{t}"], request_timeout=10).values()
    found.result(10)
    listing = LISTERS[client](shared_broker.bootstrap, three)
    on_disk = topics_on_disk(shared_broker.data_dir)
    assert {one, three} <= on_disk.keys()
    for call, topics in listing.items():
        want = {three: on_disk[three]} if "(topic)" in call else on_disk
        if "Consumer.topics()" in call:
            # Consumers leave internal topics out (exclude.internal.topics=true).
            want = {n: c for n, c in want.items() if n not in INTERNAL}
        assert topics.keys() == want.keys(), call
        reported = {n: c for n, c in topics.items() if c is not None}
        assert reported == {n: want[n] for n in reported}, call


# --- regex subscribe ---------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_pattern_subscription_reads_every_matching_topic_and_picks_up_new_ones(
    shared_broker: BrokerProcess, client: str
) -> None:
    t = tag()
    a, b, other, late = f"evt-{t}-a", f"evt-{t}-b", f"other-evt-{t}", f"evt-{t}-late"
    create_topics(shared_broker, {a: 2, b: 1, other: 1})
    now = int(time.time() * 1000) - 60_000
    for topic, partition in ((a, 0), (a, 1), (b, 0), (other, 0)):
        fill(shared_broker, topic, partition, [[now + i, now + i + 1] for i in range(3)])
    data = shared_broker.data_dir
    want = {r for topic, p in ((a, 0), (a, 1), (b, 0)) for r in stored_records(data, topic, p)}
    assert len(want) == 18
    group = f"re-{t}"
    got: set[Rec] = set()
    consumer = GROUP_CONSUMERS[client](shared_broker.bootstrap, group, [f"^evt-{t}-.*"])
    try:
        read_until(consumer, want, got)
        # Created while the subscription is live: the client sees it on a metadata refresh
        # and rejoins the group with it.
        create_topics(shared_broker, {late: 1})
        fill(shared_broker, late, 0, [[now, now + 5]])
        want |= set(stored_records(data, late, 0))
        read_until(consumer, want, got)
        # Records of the late topic were read, so it is assigned: one member owns everything.
        assert consumer.assignment() == {(a, 0), (a, 1), (b, 0), (late, 0)}
        described = raw_group(shared_broker, group)
        assert described.group_state == "Stable"
        assert described.protocol_type == "consumer"
        (member,) = described.members
        assigned = decode_assignment(member.member_assignment)
        assert {k: sorted(v) for k, v in assigned.items()} == {a: [0, 1], b: [0], late: [0]}
    finally:
        consumer.close()
    assert got == want  # every matching record, nothing of the non-matching topic
    assert raw_committed(shared_broker, group) == {
        (topic, p): log_end(data, topic, p) for topic, p in ((a, 0), (a, 1), (b, 0), (late, 0))
    }


# --- describe everything -----------------------------------------------------------------------


@dataclass(frozen=True)
class TopicView:
    name: str
    topic_id: bytes | None  # None where the client does not report it
    partitions: tuple[tuple[int, int, tuple[int, ...], tuple[int, ...]], ...]  # id, leader, ...


@dataclass(frozen=True)
class ClusterView:
    cluster_id: str
    controller: int
    nodes: tuple[tuple[int, str, int], ...]


@dataclass(frozen=True)
class Described:
    topic: TopicView
    cluster: ClusterView


def describe_confluent(bootstrap: str, topic: str) -> Described:
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    d = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    assert not d.is_internal
    c = admin.describe_cluster().result(10)
    return Described(
        TopicView(
            d.name,
            # librdkafka prints a Uuid in standard base64 ("/" and "+"), Kafka url-safe.
            base64.b64decode(str(d.topic_id) + "=="),
            tuple(
                (p.id, p.leader.id, tuple(r.id for r in p.replicas), tuple(r.id for r in p.isr))
                for p in d.partitions
            ),
        ),
        ClusterView(c.cluster_id, c.controller.id, tuple((n.id, n.host, n.port) for n in c.nodes)),
    )


def describe_kafka_python(bootstrap: str, topic: str) -> Described:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        (d,) = admin.describe_topics([topic])
        c = admin.describe_cluster()
    finally:
        admin.close()
    assert d["error_code"] == 0 and not d["is_internal"]
    return Described(
        TopicView(
            d["name"],
            uuid.UUID(d["topic_id"]).bytes,
            tuple(
                (
                    p["partition_index"],
                    p["leader_id"],
                    tuple(p["replica_nodes"]),
                    tuple(p["isr_nodes"]),
                )
                for p in d["partitions"]
            ),
        ),
        ClusterView(
            c["cluster_id"],
            c["controller_id"],
            tuple((b["broker_id"], b["host"], b["port"]) for b in c["brokers"]),
        ),
    )


def describe_aiokafka(bootstrap: str, topic: str) -> Described:
    from aiokafka.admin import AIOKafkaAdminClient

    async def run() -> tuple[Any, Any]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return await admin.describe_topics([topic]), await admin.describe_cluster()
        finally:
            await admin.close()

    (d,), c = asyncio.run(run())
    assert d["error_code"] == 0 and not d["is_internal"]
    return Described(
        TopicView(
            d["topic"],
            None,  # aiokafka asks Metadata v5 at most; topic ids came with v10
            tuple(
                (p["partition"], p["leader"], tuple(p["replicas"]), tuple(p["isr"]))
                for p in d["partitions"]
            ),
        ),
        ClusterView(
            c["cluster_id"],
            c["controller_id"],
            tuple((b["node_id"], b["host"], b["port"]) for b in c["brokers"]),
        ),
    )


DESCRIBERS: dict[str, Callable[[str, str], Described]] = {
    "confluent-kafka": describe_confluent,
    "kafka-python": describe_kafka_python,
    "aiokafka": describe_aiokafka,
}


@pytest.mark.parametrize("client", CLIENTS)
def test_describe_topics_and_cluster_match_the_data_directory(
    shared_broker: BrokerProcess, client: str
) -> None:
    topic = f"desc-{tag()}"
    create_topics(shared_broker, {topic: 3})
    described = DESCRIBERS[client](shared_broker.bootstrap, topic)
    data = shared_broker.data_dir
    assert topics_on_disk(data)[topic] == 3
    node = 1  # the only node: leader, sole replica and in-sync replica of every partition
    # aiokafka reports no topic id; the others must report the one in partition.metadata.
    topic_id = None if client == "aiokafka" else stored_topic_id(data, topic)
    assert described.topic == TopicView(
        topic, topic_id, tuple((p, node, (node,), (node,)) for p in range(3))
    )
    assert described.cluster == ClusterView(
        stored_cluster_id(data), node, ((node, "127.0.0.1", shared_broker.port),)
    )


# Groups as the admin clients report them: {group: (state, assignor, members)}, a member being
# (member id, client id, client host, {topic: partitions}); committed offsets separately.
Member = tuple[str, str, str, dict[str, list[int]]]
GroupView = tuple[str, str, list[Member]]


@dataclass(frozen=True)
class Groups:
    listed: set[str]
    described: GroupView
    offsets: dict[tuple[str, int], int]


def groups_confluent(bootstrap: str, group: str) -> Groups:
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(10)
    assert listed.errors == []
    d = admin.describe_consumer_groups([group])[group].result(10)
    assert not d.is_simple_consumer_group
    members: list[Member] = []
    for m in d.members:
        parts: dict[str, list[int]] = {}
        for tp in m.assignment.topic_partitions:
            parts.setdefault(tp.topic, []).append(tp.partition)
        members.append((m.member_id, m.client_id, m.host, parts))
    (offsets,) = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values()
    return Groups(
        {g.group_id for g in listed.valid},
        (d.state.name.lower(), d.partition_assignor, members),
        {(tp.topic, tp.partition): tp.offset for tp in offsets.result(10).topic_partitions},
    )


def groups_kafka_python(bootstrap: str, group: str) -> Groups:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listed = admin.list_groups()
        d = admin.describe_groups([group])[group]
        offsets = admin.list_group_offsets({group: None})
    finally:
        admin.close()
    assert d["error"] is None and d["protocol_type"] == "consumer"
    members: list[Member] = [
        (
            m["member_id"],
            m["client_id"],
            m["client_host"],
            {a["topic"]: a["partitions"] for a in m["member_assignment"]["assigned_partitions"]},
        )
        for m in d["members"]
    ]
    return Groups(
        {g["group_id"] for g in listed},
        (d["group_state"].lower(), d["protocol_data"], members),
        {(tp.topic, tp.partition): o.offset for tp, o in offsets[group].items()},
    )


def groups_aiokafka(bootstrap: str, group: str) -> Groups:
    from aiokafka.admin import AIOKafkaAdminClient

    async def run() -> tuple[Any, Any, Any]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return (
                await admin.list_consumer_groups(),
                await admin.describe_consumer_groups([group]),
                await admin.list_consumer_group_offsets(group),
            )
        finally:
            await admin.close()

    listed, (response,), offsets = asyncio.run(run())
    # DescribeGroups v2 as aiokafka decodes it: tuples in the schema's field order.
    ((error, group_id, state, protocol_type, protocol, members),) = response.groups
    assert (error, group_id, protocol_type) == (0, group, "consumer")
    return Groups(
        {g[0] for g in listed},
        (
            state.lower(),
            protocol,
            [
                (member_id, client_id, host, decode_assignment(assignment))
                for member_id, client_id, host, _metadata, assignment in members
            ],
        ),
        {(tp.topic, tp.partition): o.offset for tp, o in offsets.items()},
    )


GROUP_ADMINS: dict[str, Callable[[str, str], Groups]] = {
    "confluent-kafka": groups_confluent,
    "kafka-python": groups_kafka_python,
    "aiokafka": groups_aiokafka,
}


def sorted_parts(parts: dict[str, list[int]]) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in parts.items()}


@pytest.mark.parametrize("client", CLIENTS)
def test_list_and_describe_a_live_consumer_group_as_the_coordinator_answers(
    shared_broker: BrokerProcess, client: str
) -> None:
    t = tag()
    topic, group = f"grp-{t}", f"grp-{t}"
    create_topics(shared_broker, {topic: 2})
    now = int(time.time() * 1000) - 60_000
    for p in range(2):
        fill(shared_broker, topic, p, [[now, now + 1], [now + 2]])
    data = shared_broker.data_dir
    want = {r for p in range(2) for r in stored_records(data, topic, p)}
    consumer = GROUP_CONSUMERS[client](shared_broker.bootstrap, group, [topic])
    try:
        read_until(consumer, want, set())
        seen = GROUP_ADMINS[client](shared_broker.bootstrap, group)
        raw = raw_group(shared_broker, group)
        raw_ids = raw_group_ids(shared_broker)
    finally:
        consumer.close()
    assert group in seen.listed
    assert seen.listed == raw_ids
    state, assignor, members = seen.described
    assert (state, assignor) == (raw.group_state.lower(), raw.protocol_data) == ("stable", assignor)
    (member,) = members
    (raw_member,) = raw.members
    assert member[:3] == (raw_member.member_id, raw_member.client_id, raw_member.client_host)
    member_id, client_id, client_host, _ = member
    # Kafka names a member "<client id>-<uuid>" (ClassicGroup.generateMemberId) and reports its
    # host as InetAddress.toString prints it (kafka-oracle/admin_groups_kafkapython).
    assert member_id.startswith(client_id + "-") and client_host == "/127.0.0.1"
    assert sorted_parts(member[3]) == sorted_parts(decode_assignment(raw_member.member_assignment))
    assert sorted_parts(member[3]) == {topic: [0, 1]}
    assert seen.offsets == raw_committed(shared_broker, group)
    assert seen.offsets == {(topic, p): log_end(data, topic, p) for p in range(2)}


Configs = dict[str, str | None]


def configs_confluent(bootstrap: str, topic: str) -> tuple[Configs, Configs]:
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})

    def one(kind: Any, name: str) -> Configs:
        (future,) = admin.describe_configs([ConfigResource(kind, name)]).values()
        return {k: e.value for k, e in future.result(10).items()}

    return one(ResourceType.TOPIC, topic), one(ResourceType.BROKER, "1")


def configs_kafka_python(bootstrap: str, topic: str) -> tuple[Configs, Configs]:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        topic_all = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
        )
        modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        broker_all = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all"
        )
    finally:
        admin.close()
    # kafka-python's default filter keeps what differs from the default: the topic override.
    assert {k: v["value"] for k, v in modified["topic"][topic].items()} == {
        "retention.ms": "3600000"
    }
    return (
        {k: v["value"] for k, v in topic_all["topic"][topic].items()},
        {k: v["value"] for k, v in broker_all["broker"]["1"].items()},
    )


def configs_aiokafka(bootstrap: str, topic: str) -> tuple[Configs, Configs]:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def run() -> list[Any]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return [
                await admin.describe_configs([ConfigResource(kind, name)])
                for kind, name in (
                    (ConfigResourceType.TOPIC, topic),
                    (ConfigResourceType.BROKER, "1"),
                )
            ]
        finally:
            await admin.close()

    out: list[Configs] = []
    for (response,) in asyncio.run(run()):
        # DescribeConfigs v2 as aiokafka decodes it: (error, message, type, name, entries).
        ((error, _message, _kind, _name, entries),) = response.resources
        assert error == 0
        out.append({entry[0]: entry[1] for entry in entries})
    return out[0], out[1]


CONFIG_DESCRIBERS: dict[str, Callable[[str, str], tuple[Configs, Configs]]] = {
    "confluent-kafka": configs_confluent,
    "kafka-python": configs_kafka_python,
    "aiokafka": configs_aiokafka,
}


@pytest.mark.parametrize("client", CLIENTS)
def test_describe_configs_of_a_topic_and_the_broker_as_the_broker_answers(
    shared_broker: BrokerProcess, client: str
) -> None:
    topic = f"cfg-{tag()}"
    create_topics(shared_broker, {topic: 1}, **{"retention.ms": "3600000"})
    topic_configs, broker_configs = CONFIG_DESCRIBERS[client](shared_broker.bootstrap, topic)
    assert topic_configs["retention.ms"] == "3600000"
    assert topic_configs == raw_configs(shared_broker, TOPIC_RESOURCE, topic)
    assert broker_configs == raw_configs(shared_broker, BROKER_RESOURCE, "1")
    assert broker_configs["log.dirs"] == str(shared_broker.data_dir)


# --- list offsets and seek by timestamp ---------------------------------------------------------

# Three batches on one partition, offsets 0-2, 3-5 and 6-8: timestamps fall inside each batch
# and between batches (a batch's base timestamp is below the previous batch's maximum), and the
# largest (BASE + 90) is unique.
STAMPS = [[30, 10, 20], [50, 25, 40], [45, 90, 60]]


@dataclass(frozen=True)
class Lookup:
    """What a client reports for one timestamp: the offset it found, and the first record it
    reads after seeking there (None where it reports "no such record")."""

    offset: int | None
    first_read: Rec | None


def timed_topic(broker: BrokerProcess, prefix: str) -> tuple[str, int, list[Rec]]:
    topic = f"{prefix}-{tag()}"
    create_topics(broker, {topic: 1})
    base = int(time.time() * 1000) - 3_600_000
    fill(broker, topic, 0, [[base + s for s in batch] for batch in STAMPS])
    records = stored_records(broker.data_dir, topic, 0)
    assert [r.timestamp - base for r in records] == [s for batch in STAMPS for s in batch]
    return topic, base, records


def first_at_or_after(records: list[Rec], target: int) -> Rec | None:
    """Kafka's answer: the first record in OFFSET order whose timestamp reaches the target
    (LogSegment.findOffsetByTimestamp; these batches are too small for a time-index entry)."""
    return next((r for r in records if r.timestamp >= target), None)


def lookups_confluent(bootstrap: str, topic: str, targets: list[int]) -> list[Lookup]:
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"seek-{tag()}", "enable.auto.commit": False}
    )
    out = []
    try:
        for target in targets:
            (found,) = consumer.offsets_for_times([TopicPartition(topic, 0, target)], timeout=10)
            assert found.error is None, found
            if found.offset == OFFSET_END:  # librdkafka's "no record at or after the target"
                out.append(Lookup(None, None))
                continue
            consumer.assign([TopicPartition(topic, 0, found.offset)])
            first = None
            deadline = time.monotonic() + DEADLINE_S
            while first is None and time.monotonic() < deadline:
                m = consumer.poll(0.2)
                if m is not None:
                    assert m.error() is None, m.error()
                    offset = m.offset()
                    assert offset is not None
                    first = Rec(topic, 0, offset, m.timestamp()[1], m.value())
            consumer.unassign()
            out.append(Lookup(found.offset, first))
    finally:
        consumer.close()
    return out


def lookups_kafka_python(bootstrap: str, topic: str, targets: list[int]) -> list[Lookup]:
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    out = []
    try:
        consumer.assign([tp])
        for target in targets:
            found = consumer.offsets_for_times({tp: target})[tp]
            if found is None:
                out.append(Lookup(None, None))
                continue
            consumer.seek(tp, found.offset)
            first = None
            deadline = time.monotonic() + DEADLINE_S
            while first is None and time.monotonic() < deadline:
                got = consumer.poll(timeout_ms=200, max_records=1).get(tp)
                first = _rec(tp, got[0]) if got else None
            out.append(Lookup(found.offset, first))
    finally:
        consumer.close()
    return out


def lookups_aiokafka(bootstrap: str, topic: str, targets: list[int]) -> list[Lookup]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)

    async def run() -> list[Lookup]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await consumer.start()
        out = []
        try:
            consumer.assign([tp])
            for target in targets:
                found = (await consumer.offsets_for_times({tp: target}))[tp]
                if found is None:
                    out.append(Lookup(None, None))
                    continue
                consumer.seek(tp, found.offset)
                first = None
                deadline = time.monotonic() + DEADLINE_S
                while first is None and time.monotonic() < deadline:
                    got = (await consumer.getmany(tp, timeout_ms=200, max_records=1)).get(tp)
                    first = _rec(tp, got[0]) if got else None
                out.append(Lookup(found.offset, first))
        finally:
            await consumer.stop()
        return out

    return asyncio.run(run())


LOOKUPS: dict[str, Callable[[str, str, list[int]], list[Lookup]]] = {
    "confluent-kafka": lookups_confluent,
    "kafka-python": lookups_kafka_python,
    "aiokafka": lookups_aiokafka,
}


@pytest.mark.parametrize("client", CLIENTS)
def test_offsets_for_times_then_seek_reads_the_first_stored_record_at_or_after_the_target(
    shared_broker: BrokerProcess, client: str
) -> None:
    topic, base, records = timed_topic(shared_broker, f"seek-{client}")
    # target - BASE -> offset Kafka answers: before everything -> 0; 26 -> 0 (30), though
    # offsets 1-2 are older; 31 -> 3 (50), though batch 2 starts at 25 and holds 40 later;
    # 51 -> 7 (90), inside batch 3 whose first record (45) is older; past the largest -> none.
    offsets = {-5: 0, 26: 0, 31: 3, 42: 3, 51: 7, 90: 7, 91: None}
    targets = [base + s for s in offsets]
    lookups = LOOKUPS[client](shared_broker.bootstrap, topic, targets)
    for target, lookup in zip(targets, lookups, strict=True):
        want = first_at_or_after(records, target)
        assert lookup == Lookup(want and want.offset, want), target - base
    assert [lookup.offset for lookup in lookups] == list(offsets.values())


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_admin_list_offsets_earliest_latest_max_and_by_timestamp_match_the_segment_files(
    shared_broker: BrokerProcess, client: str
) -> None:
    topic, base, records = timed_topic(shared_broker, f"lo-{client}")
    specs = ["earliest", "latest", "max_timestamp", base + 51, base + 91]
    if client == "confluent-kafka":
        got = list_offsets_confluent(shared_broker.bootstrap, topic, specs)
    else:
        got = list_offsets_kafka_python(shared_broker.bootstrap, topic, specs)
    largest = max(records, key=lambda r: r.timestamp)
    at_51 = first_at_or_after(records, base + 51)
    assert at_51 is not None
    assert got == [
        (0, -1),  # Kafka answers earliest and latest without a timestamp (-1)
        (log_end(shared_broker.data_dir, topic, 0), -1),
        (largest.offset, largest.timestamp),
        (at_51.offset, at_51.timestamp),
        (-1, -1),  # no record at or after the target
    ]


def list_offsets_confluent(bootstrap: str, topic: str, specs: list[Any]) -> list[tuple[int, int]]:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    named = {
        "earliest": OffsetSpec.earliest(),
        "latest": OffsetSpec.latest(),
        "max_timestamp": OffsetSpec.max_timestamp(),
    }
    out = []
    for spec in specs:
        wanted = named[spec] if isinstance(spec, str) else OffsetSpec.for_timestamp(spec)
        (future,) = admin.list_offsets({TopicPartition(topic, 0): wanted}).values()
        info = future.result(10)
        out.append((info.offset, info.timestamp))
    return out


def list_offsets_kafka_python(
    bootstrap: str, topic: str, specs: list[Any]
) -> list[tuple[int, int]]:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient, OffsetSpec

    tp = TopicPartition(topic, 0)
    named = {
        "earliest": OffsetSpec.EARLIEST,
        "latest": OffsetSpec.LATEST,
        "max_timestamp": OffsetSpec.MAX_TIMESTAMP,
    }
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        out = []
        for spec in specs:
            found = admin.list_partition_offsets({tp: named.get(spec, spec)})[tp]
            out.append((found.offset, found.timestamp))
        return out
    finally:
        admin.close()


# --- the common producer calls ------------------------------------------------------------------

# (partition or None for the client's partitioner, key, value)
SENDS = [(1, b"k1", b"explicit-1"), (None, b"k2", b"keyed-2"), (2, None, b"explicit-3")] + [
    (None, b"key-%d" % i, b"keyed-%d" % i) for i in range(4, 12)
]


@dataclass(frozen=True)
class Produced:
    partitions: set[int]  # partitions_for / partitions_for_topic / list_topics(topic)
    acked: list[tuple[int, int, bytes]]  # (partition, offset, value) as each ack reported


def produce_confluent(bootstrap: str, topic: str) -> Produced:
    from confluent_kafka import KafkaError, Producer
    from confluent_kafka import Message as CkMessage

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    acked: list[tuple[int, int, bytes]] = []
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: CkMessage) -> None:
        if err is not None:
            errors.append(err)
            return
        partition, offset, value = msg.partition(), msg.offset(), msg.value()
        assert partition is not None and offset is not None and value is not None
        acked.append((partition, offset, value))

    # librdkafka has no partitions_for: its users read list_topics(topic).
    partitions = set(producer.list_topics(topic, timeout=10).topics[topic].partitions)
    for partition, key, value in SENDS:
        extra = {} if partition is None else {"partition": partition}
        producer.produce(topic, key=key, value=value, on_delivery=on_delivery, **extra)
        producer.poll(0)
    assert producer.flush(10) == 0
    assert errors == []
    return Produced(partitions, acked)


def produce_kafka_python(bootstrap: str, topic: str) -> Produced:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    acked: list[tuple[int, int, bytes]] = []
    try:
        partitions = producer.partitions_for(topic)
        (partition, key, value), *rest = SENDS
        metadata = producer.send(topic, key=key, value=value, partition=partition).get(10)
        acked.append((metadata.partition, metadata.offset, value))
        futures = []
        for partition, key, value in rest:
            future = producer.send(topic, key=key, value=value, partition=partition)
            future.add_callback(lambda md, v=value: acked.append((md.partition, md.offset, v)))
            futures.append(future)
        producer.flush(10)
        assert all(f.succeeded() for f in futures)
    finally:
        producer.close(10)
    return Produced(partitions, acked)


def produce_aiokafka(bootstrap: str, topic: str) -> Produced:
    from aiokafka import AIOKafkaProducer

    async def run() -> Produced:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        await producer.start()
        acked: list[tuple[int, int, bytes]] = []
        try:
            partitions = await producer.partitions_for(topic)
            (partition, key, value), *rest = SENDS
            metadata = await producer.send_and_wait(topic, value, key=key, partition=partition)
            acked.append((metadata.partition, metadata.offset, value))
            futures = [
                (await producer.send(topic, value, key=key, partition=partition), value)
                for partition, key, value in rest
            ]
            await producer.flush()
            for future, value in futures:
                assert future.done()
                md = future.result()
                acked.append((md.partition, md.offset, value))
        finally:
            await producer.stop()
        return Produced(partitions, acked)

    return asyncio.run(run())


PRODUCERS: dict[str, Callable[[str, str], Produced]] = {
    "confluent-kafka": produce_confluent,
    "kafka-python": produce_kafka_python,
    "aiokafka": produce_aiokafka,
}


@pytest.mark.parametrize("client", CLIENTS)
def test_producer_partitions_sends_and_flush_report_what_the_broker_stored(
    shared_broker: BrokerProcess, client: str
) -> None:
    topic = f"prod-{tag()}"
    create_topics(shared_broker, {topic: 3})
    produced = PRODUCERS[client](shared_broker.bootstrap, topic)
    data = shared_broker.data_dir
    assert produced.partitions == set(range(topics_on_disk(data)[topic])) == {0, 1, 2}
    stored_values = {
        (r.partition, r.offset, r.value) for p in range(3) for r in stored_records(data, topic, p)
    }
    # Every acknowledged record is stored where its ack said, and nothing else is stored.
    assert sorted(produced.acked) == sorted(stored_values)
    assert len(produced.acked) == len(SENDS)
    explicit = {value: partition for partition, _, value in SENDS if partition is not None}
    assert {v: p for p, _, v in produced.acked if v in explicit} == explicit
