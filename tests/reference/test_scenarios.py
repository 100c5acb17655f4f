"""The same client scenario against Apache Kafka and against us: what the clients saw must match.

Each scenario is a function of a bootstrap address returning what an application can observe
(delivery reports, records read back, offsets, committed offsets, error codes, admin answers);
the two results are compared after normalisation (tests/reference/compare.py). A difference
we keep is listed in KNOWN with its reason, and in docs/REFERENCE.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from protocol.messages.fetch import FETCH
from protocol.records import build_batch
from tests.reference.compare import RecordsValue, assert_same
from tests.support.produce import produce
from tests.support.raw_client import RawClient

TIMEOUT = 30.0
T = TypeVar("T")


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    client = admin(bootstrap)
    futures = client.create_topics(
        [NewTopic(name, partitions, 1, config=configs)], operation_timeout=TIMEOUT
    )
    futures[name].result(TIMEOUT)
    # Kafka's brokers learn a new topic from the metadata log a moment after the controller
    # answers; a producer started earlier would see UNKNOWN_TOPIC_OR_PARTITION first.
    settled(
        lambda: client.list_topics(name, timeout=TIMEOUT).topics[name].partitions,
        lambda found: len(found) == partitions,
    )


def settled(read: Callable[[], T], done: Callable[[T], bool], timeout: float = TIMEOUT) -> T:
    """``read()`` once ``done`` holds for it (Kafka applies a metadata change asynchronously
    after answering it), or its last value when ``timeout`` passes; polled, not slept."""
    deadline = time.monotonic() + timeout
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value


def run_both(sides: dict[str, str], scenario: Any, *args: Any) -> tuple[Any, Any]:
    return scenario(sides["kafka"], *args), scenario(sides["ours"], *args)


def read_all(consumer: Consumer, count: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise KafkaException(msg.error())
        got.append(
            {
                "partition": msg.partition(),
                "offset": msg.offset(),
                "key": msg.key(),
                "value": msg.value(),
                "headers": msg.headers() or [],
                "timestamp_type": msg.timestamp()[0],
            }
        )
    return got


# --- idempotent produce + read back ---------------------------------------------------------


def idempotent_produce_and_read(bootstrap: str) -> dict[str, Any]:
    topic = "ref-idempotent"
    create_topic(bootstrap, topic, 2)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    )
    reports: list[dict[str, Any]] = []

    def delivered(err: KafkaError | None, msg: Any) -> None:
        reports.append(
            {
                "error": err.name() if err else None,
                "partition": msg.partition(),
                "offset": msg.offset(),
                "key": msg.key(),
            }
        )

    for i in range(20):
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=f"v{i}".encode() * (i + 1),
            partition=i % 2,
            headers=[("h", f"{i}".encode()), ("n", None)],
            timestamp=1_700_000_000_000 + i,
            on_delivery=delivered,
        )
        if i == 9:
            producer.flush(TIMEOUT)
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in (0, 1)])
    records = read_all(consumer, 20)
    watermarks = [consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT) for p in (0, 1)]
    by_time = consumer.offsets_for_times(
        [TopicPartition(topic, p, 1_700_000_000_000 + 5) for p in (0, 1)], TIMEOUT
    )
    consumer.close()
    return {
        "reports": sorted(reports, key=lambda r: (r["partition"], r["offset"])),
        "records": sorted(records, key=lambda r: (r["partition"], r["offset"])),
        "watermarks": watermarks,
        "offsets_for_times": [(tp.partition, tp.offset) for tp in by_time],
    }


def test_idempotent_produce_and_read_back(sides: dict[str, str]) -> None:
    assert_same(*run_both(sides, idempotent_produce_and_read))


# --- fetch limits ---------------------------------------------------------------------------


def fetch_limits(bootstrap: str) -> dict[str, Any]:
    """Five batches of growing size, then Fetch v12 with a partition limit smaller than the
    first batch, a response limit that stops after the second, and offsets in mid-batch."""
    topic = "ref-fetch-limits"
    create_topic(bootstrap, topic, 1)
    port = int(bootstrap.rsplit(":", 1)[1])
    # Batches built here (not by a client that picks its own boundaries): n+2 records of
    # 300 bytes each, with fixed timestamps, at offsets 0, 2, 5, 9, 14.
    with RawClient(port) as client:
        for n in range(5):
            data = build_batch(
                [(b"k", bytes([65 + n]) * 300)] * (n + 2), base_timestamp=1_700_000_000_000 + n
            )
            assert produce(client, topic, data).error_code == 0
    answers: dict[str, Any] = {}
    cases = {
        "partition_limit_below_first_batch": (0, 100, 1_000_000),
        "response_limit_below_first_batch": (0, 1_000_000, 100),
        "response_limit_in_second_batch": (0, 1_000_000, 1500),
        "partition_limit_in_third_batch": (0, 2500, 1_000_000),
        "mid_batch_offset": (3, 1_000_000, 1_000_000),
        "offset_at_end": (20, 1_000_000, 1_000_000),
        "offset_out_of_range": (99, 1_000_000, 1_000_000),
    }
    with RawClient(port) as client:
        for name, (offset, partition_max, response_max) in cases.items():
            body = {
                "replica_id": -1,
                "max_wait_ms": 0,
                "min_bytes": 0,
                "max_bytes": response_max,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {
                                "partition": 0,
                                "current_leader_epoch": -1,
                                "fetch_offset": offset,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": partition_max,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            }
            answer = client.request(FETCH, 12, body).to_dict()
            for t in answer["responses"]:
                for p in t["partitions"]:
                    p["records"] = RecordsValue(bytes(p["records"] or b""))
            answers[name] = answer
    return answers


def test_fetch_limits(sides: dict[str, str]) -> None:
    assert_same(*run_both(sides, fetch_limits), api_key=1)


# --- consumer group commit / fetch ----------------------------------------------------------


def group_commit_and_fetch(bootstrap: str) -> dict[str, Any]:
    topic, group = "ref-group", "ref-group-1"
    create_topic(bootstrap, topic, 3)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        producer.produce(topic, value=f"{i}".encode(), partition=i % 3)
    producer.flush(TIMEOUT)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    records = read_all(consumer, 30)
    consumer.commit(
        offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 10, metadata="m")],
        asynchronous=False,
    )
    committed = consumer.committed([TopicPartition(topic, p) for p in range(3)], TIMEOUT)
    consumer.close()
    client = admin(bootstrap)
    listed = client.list_consumer_group_offsets(
        [__import__("confluent_kafka").ConsumerGroupTopicPartitions(group)]
    )[group].result(TIMEOUT)
    described = client.describe_consumer_groups([group])[group].result(TIMEOUT)
    deleted = client.delete_consumer_groups([group])[group].result(TIMEOUT)
    gone = client.list_consumer_group_offsets(
        [__import__("confluent_kafka").ConsumerGroupTopicPartitions(group)]
    )[group].result(TIMEOUT)
    return {
        "read": sorted((r["partition"], r["offset"]) for r in records),
        "committed": [(tp.partition, tp.offset, tp.metadata) for tp in committed],
        "listed": sorted((tp.partition, tp.offset, tp.metadata) for tp in listed.topic_partitions),
        "state_after_close": str(described.state),
        "members_after_close": len(described.members),
        "protocol_type": "consumer" if described.is_simple_consumer_group is False else "simple",
        "deleted": deleted,
        "after_delete": sorted((tp.partition, tp.offset) for tp in gone.topic_partitions),
    }


def test_consumer_group_commit_and_fetch(sides: dict[str, str]) -> None:
    assert_same(*run_both(sides, group_commit_and_fetch))


# --- transactions: commit, abort, read_committed ---------------------------------------------


def transactions_read_committed(bootstrap: str) -> dict[str, Any]:
    topic = "ref-txn"
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "ref-txn-1"})
    producer.init_transactions(TIMEOUT)
    for batch, commit in (("a", True), ("b", False), ("c", True)):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, value=f"{batch}{i}".encode(), partition=0)
        producer.flush(TIMEOUT)
        if commit:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.abort_transaction(TIMEOUT)
    # An open transaction: read_committed stops before it (last stable offset).
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    producer.flush(TIMEOUT)
    seen: dict[str, Any] = {}
    for level in ("read_committed", "read_uncommitted"):
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"ref-txn-{level}",
                "isolation.level": level,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        expected = 6 if level == "read_committed" else 10
        got = read_all(consumer, expected)
        seen[level] = [(r["offset"], r["value"]) for r in got]
        seen[f"{level}_watermarks"] = consumer.get_watermark_offsets(
            TopicPartition(topic, 0), TIMEOUT
        )
        consumer.close()
    producer.abort_transaction(TIMEOUT)
    return seen


def test_transaction_commit_abort_read_committed(sides: dict[str, str]) -> None:
    assert_same(*run_both(sides, transactions_read_committed))


# --- admin: topics and configs --------------------------------------------------------------


def _outcome(future: Any) -> str:
    try:
        result = future.result(TIMEOUT)
    except KafkaException as exc:
        return exc.args[0].name()
    return "ok" if result is None else str(result)


TOPIC_CONFIG_KEYS = ("cleanup.policy", "retention.ms", "segment.bytes", "max.message.bytes")


def admin_topics_and_configs(bootstrap: str) -> dict[str, Any]:
    client = admin(bootstrap)
    out: dict[str, Any] = {}
    created = client.create_topics(
        [
            NewTopic("ref-admin-a", 2, 1, config={"retention.ms": "12345"}),
            NewTopic("ref-admin-b", 1, 1),
            NewTopic("ref-admin-bad-rf", 1, 3),
            NewTopic("ref-admin-bad-config", 1, 1, config={"cleanup.policy": "nope"}),
            NewTopic("ref-admin-bad-name!", 1, 1),
        ],
        operation_timeout=TIMEOUT,
    )
    out["create"] = {name: _outcome(f) for name, f in created.items()}
    again = client.create_topics([NewTopic("ref-admin-a", 1, 1)], operation_timeout=TIMEOUT)
    out["create_existing"] = _outcome(again["ref-admin-a"])
    partitions = client.create_partitions(
        [NewPartitions("ref-admin-a", 4), NewPartitions("ref-admin-b", 1)]
    )
    out["create_partitions"] = {name: _outcome(f) for name, f in partitions.items()}
    out["partitions"] = settled(
        lambda: {
            name: len(t.partitions)
            for name, t in client.list_topics(timeout=TIMEOUT).topics.items()
            if name.startswith("ref-admin-")
        },
        lambda found: found.get("ref-admin-a") == 4,
    )
    resource = ConfigResource(ResourceType.TOPIC, "ref-admin-a")
    altered = client.incremental_alter_configs(
        [
            ConfigResource(
                ResourceType.TOPIC,
                "ref-admin-a",
                incremental_configs=[
                    ConfigEntry(
                        "cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET
                    ),
                    ConfigEntry(
                        "retention.ms", None, incremental_operation=AlterConfigOpType.DELETE
                    ),
                ],
            )
        ]
    )
    out["alter"] = [_outcome(f) for f in altered.values()]
    bad = client.incremental_alter_configs(
        [
            ConfigResource(
                ResourceType.TOPIC,
                "ref-admin-a",
                incremental_configs=[
                    ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)
                ],
            )
        ]
    )
    out["alter_unknown"] = [_outcome(f) for f in bad.values()]
    described = settled(
        lambda: client.describe_configs([resource])[resource].result(TIMEOUT),
        lambda configs: (
            configs["cleanup.policy"].value == "compact" and configs["retention.ms"].is_default
        ),
    )
    out["configs"] = {
        key: {
            "value": described[key].value,
            "source": str(described[key].source),
            "is_default": described[key].is_default,
            "read_only": described[key].is_read_only,
            "sensitive": described[key].is_sensitive,
        }
        for key in TOPIC_CONFIG_KEYS
    }
    missing = ConfigResource(ResourceType.TOPIC, "ref-admin-missing")
    out["describe_missing"] = _outcome(client.describe_configs([missing])[missing])
    deleted = client.delete_topics(["ref-admin-a", "ref-admin-b", "ref-admin-missing"])
    out["delete"] = {name: _outcome(f) for name, f in deleted.items()}
    return out


def test_admin_topics_and_configs(sides: dict[str, str]) -> None:
    assert_same(*run_both(sides, admin_topics_and_configs))
