"""Topic configs through the admin APIs of three clients, checked on what the broker does.

CreateTopics with configs, DescribeConfigs, AlterConfigs and IncrementalAlterConfigs from
kafka-python, confluent-kafka and aiokafka; each change is checked against the broker's
behaviour afterwards (MESSAGE_TOO_LARGE, LogAppendTime timestamps in the segment files,
keyless records refused on compacted topics, retention deleting segments), and bad input
against Kafka's error codes and messages.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.messages.alter_configs import ALTER_CONFIGS
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.messages.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from protocol.messages.produce import PRODUCE
from protocol.records import build_batch, crc_ok
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import produce, produce_request, stored
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS

TOPIC, BROKER = 2, 4
SOURCE_TOPIC, SOURCE_DEFAULT, SOURCE_STATIC = 1, 5, 4


def create(
    client: RawClient,
    name: str,
    partitions: int = 1,
    replication: int = 1,
    configs: dict[str, str | None] | None = None,
    *,
    version: int = 7,
    validate_only: bool = False,
) -> Message:
    answer = client.request(
        CREATE_TOPICS,
        version,
        Message(
            topics=[
                Message(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=replication,
                    assignments=[],
                    configs=[Message(name=k, value=v) for k, v in (configs or {}).items()],
                )
            ],
            timeout_ms=10000,
            validate_only=validate_only,
        ),
    )
    result: Message = answer.topics[0]
    return result


def describe(client: RawClient, kind: int, name: str, version: int = 4, **kw: Any) -> Message:
    answer = client.request(
        DESCRIBE_CONFIGS,
        version,
        Message(
            resources=[Message(resource_type=kind, resource_name=name, configuration_keys=None)],
            include_synonyms=kw.get("synonyms", False),
            include_documentation=kw.get("documentation", False),
        ),
    )
    result: Message = answer.results[0]
    return result


def incremental(
    client: RawClient,
    name: str,
    ops: list[tuple[str, int, str | None]],
    kind: int = BROKER,
    validate_only: bool = False,
) -> Message:
    """IncrementalAlterConfigs v1 of one resource: (name, operation, value) ops; its result."""
    answer = client.request(
        INCREMENTAL_ALTER_CONFIGS,
        1,
        Message(
            resources=[
                Message(
                    resource_type=kind,
                    resource_name=name,
                    configs=[Message(name=n, config_operation=o, value=v) for n, o, v in ops],
                )
            ],
            validate_only=validate_only,
        ),
    )
    result: Message = answer.responses[0]
    return result


def topic_configs(client: RawClient, name: str) -> dict[str, tuple[str | None, int]]:
    result = describe(client, TOPIC, name)
    assert result.error_code == 0, result
    return {c.name: (c.value, c.config_source) for c in result.configs}


def keyed_batch(size: int, key: bytes | None = b"k") -> bytes:
    return build_batch([(key, b"x" * size)])


# -- kafka-python --------------------------------------------------------------------------


def test_kafka_python_creates_with_configs_and_max_message_bytes_takes_effect(
    shared_broker: BrokerProcess,
) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        admin.create_topics(
            {
                "kp-limits": {
                    "num_partitions": 2,
                    "replication_factor": 1,
                    "configs": {"max.message.bytes": "500", "retention.ms": "3600000"},
                }
            }
        )
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "kp-limits")], config_filter="all"
        )
        assert described is not None
        with RawClient(shared_broker.port) as client:
            configs = topic_configs(client, "kp-limits")
            assert configs["max.message.bytes"] == ("500", SOURCE_TOPIC)
            assert configs["retention.ms"] == ("3600000", SOURCE_TOPIC)
            assert configs["segment.bytes"] == ("1073741824", SOURCE_DEFAULT)
            too_big = produce(client, "kp-limits", keyed_batch(600))
            assert too_big.error_code == ErrorCode.MESSAGE_TOO_LARGE
            assert produce(client, "kp-limits", keyed_batch(100)).error_code == 0
            # Incremental SET raises the limit; the next produce of the same batch succeeds.
            admin.alter_configs(
                [
                    ConfigResource(
                        ConfigResourceType.TOPIC,
                        "kp-limits",
                        configs={"max.message.bytes": ("SET", "5000")},
                    )
                ],
                incremental=True,
            )
            assert topic_configs(client, "kp-limits")["max.message.bytes"] == ("5000", 1)
            assert produce(client, "kp-limits", keyed_batch(600)).error_code == 0
            # DELETE returns it to the broker default.
            admin.alter_configs(
                [
                    ConfigResource(
                        ConfigResourceType.TOPIC,
                        "kp-limits",
                        configs={"max.message.bytes": ("DELETE", None)},
                    )
                ],
                incremental=True,
            )
            assert topic_configs(client, "kp-limits")["max.message.bytes"] == (
                "1048588",
                SOURCE_DEFAULT,
            )
    finally:
        admin.close()
    assert len(stored(shared_broker.data_dir, "kp-limits")) == 2


# -- confluent-kafka -----------------------------------------------------------------------


def test_confluent_log_append_time_topic_returns_broker_timestamps(
    shared_broker: BrokerProcess,
) -> None:
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    futures = admin.create_topics(
        [NewTopic("cf-lat", 1, 1, config={"message.timestamp.type": "LogAppendTime"})]
    )
    futures["cf-lat"].result(10)
    described = admin.describe_configs([ConfigResource("topic", "cf-lat")])
    (entries,) = [f.result(10) for f in described.values()]
    assert entries["message.timestamp.type"].value == "LogAppendTime"
    assert entries["message.timestamp.type"].source == SOURCE_TOPIC
    assert entries["retention.ms"].source == SOURCE_DEFAULT

    old = 1_000_000_000_000  # 2001: far from the broker's clock
    before = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap, "enable.idempotence": True})
    for i in range(3):
        producer.produce("cf-lat", key=b"k%d" % i, value=b"v%d" % i, timestamp=old)
    assert producer.flush(10) == 0
    after = int(time.time() * 1000)

    batches = stored(shared_broker.data_dir, "cf-lat")
    assert batches
    for header, data in batches:
        assert header.log_append_time
        assert before <= header.max_timestamp <= after
        assert crc_ok(data, header)

    consumer = Consumer(
        {
            "bootstrap.servers": shared_broker.bootstrap,
            "group.id": "cf-lat",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition("cf-lat", 0, 0)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 3 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.timestamp())
    consumer.close()
    assert len(got) == 3
    for kind, ts in got:
        assert kind == TIMESTAMP_LOG_APPEND_TIME
        assert before <= ts <= after


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_confluent_alter_configs_replaces_the_whole_set(shared_broker: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    admin.create_topics(
        [NewTopic("cf-alter", 1, 1, config={"retention.ms": "1000", "segment.ms": "60000"})]
    )["cf-alter"].result(10)
    resource = ConfigResource("topic", "cf-alter", set_config={"retention.bytes": "123456"})
    for future in admin.alter_configs([resource]).values():
        future.result(10)
    with RawClient(shared_broker.port) as client:
        configs = topic_configs(client, "cf-alter")
    # The legacy API sets exactly what it lists: the earlier overrides are gone.
    assert configs["retention.bytes"] == ("123456", SOURCE_TOPIC)
    assert configs["retention.ms"][1] == SOURCE_DEFAULT
    assert configs["segment.ms"][1] == SOURCE_DEFAULT


def test_confluent_incremental_alter_configs_appends_to_cleanup_policy(
    shared_broker: BrokerProcess,
) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
    )

    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    admin.create_topics([NewTopic("cf-inc", 1, 1)])["cf-inc"].result(10)
    resource = ConfigResource(
        "topic",
        "cf-inc",
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(10)
    with RawClient(shared_broker.port) as client:
        assert topic_configs(client, "cf-inc")["cleanup.policy"] == ("delete,compact", 1)
        # Now compacted: a keyless record is refused.
        refused = produce(client, "cf-inc", build_batch([(None, b"v")]))
        assert refused.error_code == ErrorCode.INVALID_RECORD


# -- aiokafka ------------------------------------------------------------------------------


def test_aiokafka_compacted_topic_refuses_keyless_records(shared_broker: BrokerProcess) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def create() -> Any:
        admin = AIOKafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics(
                [NewTopic("aio-compact", 1, 1, topic_configs={"cleanup.policy": "compact"})]
            )
            return await admin.describe_configs([_aio_resource("aio-compact")])
        finally:
            await admin.close()

    described = asyncio.run(create())
    assert described
    with RawClient(shared_broker.port) as client:
        assert topic_configs(client, "aio-compact")["cleanup.policy"] == ("compact", SOURCE_TOPIC)
        data = build_batch([(b"k1", b"v"), (None, b"v"), (b"k3", b"v"), (None, b"v")])
        answer = client.request(PRODUCE, 9, produce_request("aio-compact", data))
        part = answer.responses[0].partition_responses[0]
        assert part.error_code == ErrorCode.INVALID_RECORD
        assert [e.batch_index for e in part.record_errors] == [1, 3]
        assert part.record_errors[0].batch_index_error_message.startswith(
            "Compacted topic cannot accept message without key in topic partition aio-compact-0"
        )
        assert "2 record errors" in part.error_message
        assert produce(client, "aio-compact", build_batch([(b"k", b"v")])).error_code == 0
    assert len(stored(shared_broker.data_dir, "aio-compact")) == 1


def _aio_resource(name: str) -> Any:
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    return ConfigResource(ConfigResourceType.TOPIC, name)


def test_aiokafka_alter_configs_changes_retention(shared_broker: BrokerProcess) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic("aio-alter", 1, 1)])
            await admin.alter_configs(
                [
                    ConfigResource(
                        ConfigResourceType.TOPIC, "aio-alter", configs={"retention.ms": "7200000"}
                    )
                ]
            )
        finally:
            await admin.close()

    asyncio.run(run())
    with RawClient(shared_broker.port) as client:
        assert topic_configs(client, "aio-alter")["retention.ms"] == ("7200000", SOURCE_TOPIC)


# -- effects that need their own broker ----------------------------------------------------


def test_retention_ms_set_at_runtime_deletes_old_segments(tmp_path: Path) -> None:
    broker = BrokerProcess(
        tmp_path / "data", overrides={"log.retention.check.interval.ms": "100"}
    ).start()
    try:
        with RawClient(broker.port) as client:
            # Tiny segments (still above one batch, else RECORD_LIST_TOO_LARGE): every batch
            # rolls a new one.
            assert create(client, "ret", configs={"segment.bytes": "200"}).error_code == 0
            for _ in range(4):
                assert produce(client, "ret", keyed_batch(80)).error_code == 0
            assert len(list((tmp_path / "data" / "ret-0").glob("*.log"))) == 4
            set_retention = [("retention.ms", 0, "1")]
            assert incremental(client, "ret", set_retention, TOPIC).error_code == 0
            broker.wait_for_log(r"ret-0: deleted \d+ segment\(s\) by retention.ms")
    finally:
        broker.stop()


def test_topic_configs_persist_across_restarts(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        with RawClient(broker.port) as client:
            assert create(client, "kept", configs={"max.message.bytes": "300"}).error_code == 0
    finally:
        broker.stop()
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        with RawClient(broker.port) as client:
            assert topic_configs(client, "kept")["max.message.bytes"] == ("300", SOURCE_TOPIC)
            assert (
                produce(client, "kept", keyed_batch(400)).error_code == ErrorCode.MESSAGE_TOO_LARGE
            )
    finally:
        broker.kill()
    # After a crash too (the file is written atomically before the answer).
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        with RawClient(broker.port) as client:
            assert topic_configs(client, "kept")["max.message.bytes"] == ("300", SOURCE_TOPIC)
    finally:
        broker.stop()


# -- raw requests: every version, and bad input --------------------------------------------


@pytest.mark.parametrize("version", range(2, 8))
def test_create_topics_every_version(shared_broker: BrokerProcess, version: int) -> None:
    name = f"raw-create-v{version}"
    with RawClient(shared_broker.port) as client:
        result = create(client, name, 3, configs={"retention.ms": "5000"}, version=version)
        assert (result.error_code, result.error_message) == (0, None)
        if version >= 5:
            assert (result.num_partitions, result.replication_factor) == (3, 1)
            configs = {c.name: (c.value, c.config_source) for c in result.configs}
            assert configs["retention.ms"] == ("5000", SOURCE_TOPIC)
        if version >= 7:
            assert result.topic_id != bytes(16)
        again = create(client, name, 3, version=version)
        assert again.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        assert again.error_message == f"Topic '{name}' already exists."
    assert (shared_broker.data_dir / f"{name}-2").is_dir()


def test_validate_only_creates_nothing(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        result = create(client, "dry-run", 2, validate_only=True)
        assert (result.error_code, result.num_partitions) == (0, 2)
        assert describe(client, TOPIC, "dry-run").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert not (shared_broker.data_dir / "dry-run-0").exists()


@pytest.mark.parametrize(
    ("name", "partitions", "replication", "configs", "code", "message"),
    [
        ("bad name", 1, 1, {}, ErrorCode.INVALID_TOPIC_EXCEPTION, "contains a character other"),
        ("", 1, 1, {}, ErrorCode.INVALID_TOPIC_EXCEPTION, "can't be empty"),
        ("x" * 250, 1, 1, {}, ErrorCode.INVALID_TOPIC_EXCEPTION, "longer than 249"),
        ("neg", -5, 1, {}, ErrorCode.INVALID_PARTITIONS, "invalid non-positive value"),
        ("zero", 0, 1, {}, ErrorCode.INVALID_PARTITIONS, "invalid non-positive value"),
        ("rf0", 1, 0, {}, ErrorCode.INVALID_REPLICATION_FACTOR, "must be larger than 0"),
        ("rf3", 1, 3, {}, ErrorCode.INVALID_REPLICATION_FACTOR, "only 1 broker(s)"),
        ("cfg", 1, 1, {"bogus": "1"}, ErrorCode.INVALID_CONFIG, "Unknown topic config name: bogus"),
        (
            "cfg2",
            1,
            1,
            {"retention.ms": "soon"},
            ErrorCode.INVALID_CONFIG,
            "Invalid value soon for configuration retention.ms",
        ),
        ("cfg3", 1, 1, {"segment.ms": None}, ErrorCode.INVALID_CONFIG, "Null value not supported"),
    ],
)
def test_create_topics_refuses_bad_input_with_kafkas_errors(
    shared_broker: BrokerProcess,
    name: str,
    partitions: int,
    replication: int,
    configs: dict[str, str | None],
    code: ErrorCode,
    message: str,
) -> None:
    with RawClient(shared_broker.port) as client:
        result = create(client, name, partitions, replication, configs)
    assert result.error_code == code
    assert message in result.error_message
    assert not (shared_broker.data_dir / f"{name}-0").exists()


def test_default_partitions_and_duplicate_names(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        assert create(client, "defaults", -1, -1).num_partitions == 1
        answer = client.request(
            CREATE_TOPICS,
            7,
            Message(
                topics=[
                    Message(name="twice", num_partitions=1, replication_factor=1),
                    Message(name="twice", num_partitions=1, replication_factor=1),
                ],
                timeout_ms=1000,
            ),
        )
        assert [t.error_code for t in answer.topics] == [ErrorCode.INVALID_REQUEST] * 2
        assert create(client, "a.b").error_code == 0
        collides = create(client, "a_b")
        assert collides.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert collides.error_message == "Topic 'a_b' collides with existing topic: a.b"


def test_describe_configs_broker_and_topic_every_version(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "desc")
        for version in range(1, 5):
            topic = describe(client, TOPIC, "desc", version, synonyms=True, documentation=True)
            assert topic.error_code == 0
            entry = next(c for c in topic.configs if c.name == "segment.bytes")
            assert entry.synonyms[-1].name == "log.segment.bytes"
            assert bool(entry.documentation) == (version >= 3)
            broker = describe(client, BROKER, "1", version)
            names = {c.name: c for c in broker.configs}
            assert names["log.dirs"].value == str(shared_broker.data_dir)
            assert names["log.dirs"].config_source == SOURCE_STATIC
            assert names["log.dirs"].read_only
        assert describe(client, BROKER, "").configs == []
        other = describe(client, BROKER, "7")
        assert other.error_code == ErrorCode.INVALID_REQUEST
        assert "Unexpected broker id" in other.error_message
        missing = describe(client, TOPIC, "no-such-topic")
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # Kafka's ConfigHelper sets no message here: the field's default "".
        assert missing.error_message == ""


def test_only_requested_keys_are_described(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "keys")
        answer = client.request(
            DESCRIBE_CONFIGS,
            4,
            Message(
                resources=[
                    Message(
                        resource_type=TOPIC,
                        resource_name="keys",
                        configuration_keys=["retention.ms", "nope"],
                    )
                ]
            ),
        )
    assert [c.name for c in answer.results[0].configs] == ["retention.ms"]


def alter(client: RawClient, kind: int, name: str, configs: dict[str, str | None]) -> Message:
    answer = client.request(
        ALTER_CONFIGS,
        2,
        Message(
            resources=[
                Message(
                    resource_type=kind,
                    resource_name=name,
                    configs=[Message(name=k, value=v) for k, v in configs.items()],
                )
            ],
            validate_only=False,
        ),
    )
    result: Message = answer.responses[0]
    return result


def test_alter_configs_bad_input(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "alter-bad")
        read_only = alter(client, BROKER, "1", {"log.dirs": "/elsewhere"})
        assert read_only.error_code == ErrorCode.INVALID_REQUEST
        assert read_only.error_message == "Cannot update these configs dynamically: Set(log.dirs)"
        unknown = alter(client, TOPIC, "alter-bad", {"retention.mss": "1"})
        assert unknown.error_code == ErrorCode.INVALID_CONFIG
        assert unknown.error_message == "Unknown topic config name: retention.mss"
        bad_value = alter(client, TOPIC, "alter-bad", {"max.message.bytes": "-1"})
        assert bad_value.error_code == ErrorCode.INVALID_CONFIG
        assert "Value must be at least 0" in bad_value.error_message
        null = alter(client, TOPIC, "alter-bad", {"retention.ms": None})
        assert null.error_code == ErrorCode.INVALID_REQUEST
        missing = alter(client, TOPIC, "no-such", {"retention.ms": "1"})
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        tiered = alter(client, TOPIC, "alter-bad", {"remote.storage.enable": "true"})
        assert tiered.error_code == ErrorCode.INVALID_CONFIG
        # Nothing above changed the topic.
        assert all(src == SOURCE_DEFAULT for _, src in topic_configs(client, "alter-bad").values())


def test_incremental_append_to_a_non_list_is_invalid_request(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "inc-bad")
        answer = client.request(
            INCREMENTAL_ALTER_CONFIGS,
            0,
            Message(
                resources=[
                    Message(
                        resource_type=TOPIC,
                        resource_name="inc-bad",
                        configs=[Message(name="retention.ms", config_operation=2, value="5")],
                    ),
                    Message(
                        resource_type=TOPIC,
                        resource_name="no-such",
                        configs=[Message(name="retention.ms", config_operation=0, value="5")],
                    ),
                ],
                validate_only=False,
            ),
        )
        codes = [r.error_code for r in answer.responses]
        assert codes == [ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        assert "append is not allowed" in answer.responses[0].error_message
