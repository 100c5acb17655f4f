"""Broker and group configs through the admin APIs, compared with what Kafka 4.0 answers.

DescribeConfigs of the BROKER resource is checked field by field against the answer a
one-node Kafka 4.0.0 gave (tests/data/kafka_4_0_broker_configs.json, from the kafka-oracle
recordings); dynamic broker configs set with IncrementalAlterConfigs / AlterConfigs are
checked in the DescribeConfigs answer and in the file the broker stores them in, across a
restart; refusals carry Kafka's error codes and messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.schema import Message
from storage.broker_config_store import BrokerConfigStore
from tests.e2e.test_admin_configs import alter, incremental
from tests.support.broker_process import BrokerProcess, running
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

TOPIC, BROKER, GROUP = 2, 4, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 2, 3, 4, 5

KAFKA = json.loads(
    (Path(__file__).parent.parent / "data" / "kafka_4_0_broker_configs.json").read_text()
)
# Deployment settings whose values differ from host to host (the oracle's replay masks them).
DEPLOYMENT = {
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "inter.broker.listener.name",
    "controller.listener.names",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    "log.dirs",
    "log.dir",
    "metadata.log.dir",
}
# The recording broker's settings that are not about where it ran.
RECORDED_SETTINGS = {k: v for k, v in KAFKA["static"].items() if k not in DEPLOYMENT}

pytestmark = KAFKA_PYTHON_SCHEMA_READS


def describe(client: RawClient, kind: int, name: str, version: int = 4, **kw: Any) -> Message:
    answer = client.request(
        DESCRIBE_CONFIGS,
        version,
        Message(
            resources=[
                Message(resource_type=kind, resource_name=name, configuration_keys=kw.get("keys"))
            ],
            include_synonyms=kw.get("synonyms", True),
            include_documentation=kw.get("documentation", False),
        ),
    )
    result: Message = answer.results[0]
    return result


def entries(result: Message) -> dict[str, Message]:
    assert result.error_code == 0, result
    return {c.name: c for c in result.configs}


def synonyms(entry: Message) -> list[list[Any]]:
    return [[s.name, s.value, s.source] for s in entry.synonyms]


def stored(data_dir: Path) -> dict[str, dict[str, str]]:
    store = BrokerConfigStore.open(data_dir)
    assert store.problems == []
    return {name: store.get(name) for name in ("", "1")}


@pytest.fixture(scope="module")
def kafka_like(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A broker started with the settings the recording Kafka had."""
    with running(
        tmp_path_factory.mktemp("kafka-like") / "data", overrides=RECORDED_SETTINGS
    ) as proc:
        yield proc


# -- DescribeConfigs of the broker: the same answer as Kafka 4.0 ---------------------------


def test_broker_describe_lists_every_kafka_broker_config_with_kafkas_fields(
    kafka_like: BrokerProcess,
) -> None:
    with RawClient(kafka_like.port) as client:
        ours = entries(describe(client, BROKER, "1"))
    expected = KAFKA["configs"]
    # Beyond Kafka's list: minikafka's own settings, when set (the test broker sets
    # log.level), as Kafka lists any config it was started with.
    assert sorted(set(ours) - {"log.level"}) == sorted(expected)
    # Where minikafka's own default differs from Kafka's, the default synonym says ours
    # (it is the value the broker acts on): group.initial.rebalance.delay.ms is 100 (not
    # 3000) and node.id has a default (Kafka requires it).
    deviations = {
        "group.initial.rebalance.delay.ms": [
            ["group.initial.rebalance.delay.ms", "0", 4],
            ["group.initial.rebalance.delay.ms", "100", 5],
        ],
        "node.id": [["node.id", "1", 4], ["node.id", "1", 5]],
    }
    different = []
    for name, kafka in expected.items():
        entry = ours[name]
        fields = {
            "read_only": entry.read_only,
            "is_sensitive": entry.is_sensitive,
            "config_type": entry.config_type,
        }
        if name not in DEPLOYMENT:
            fields |= {
                "value": entry.value,
                "config_source": entry.config_source,
                "synonyms": synonyms(entry),
            }
        want = {k: kafka[k] for k in fields}
        if name in deviations:
            want["synonyms"] = deviations[name]
        if fields != want:
            different.append((name, fields, want))
    assert different == []


def test_broker_describe_without_synonyms_and_with_documentation(
    kafka_like: BrokerProcess,
) -> None:
    with RawClient(kafka_like.port) as client:
        plain = entries(describe(client, BROKER, "1", synonyms=False, documentation=True))
        old = entries(describe(client, BROKER, "1", version=1, synonyms=False))
    assert all(e.synonyms == [] for e in plain.values())
    assert all(e.documentation for e in plain.values())
    assert plain["message.max.bytes"].value == "1048588"
    assert old["log.cleaner.threads"].read_only is False


# -- dynamic broker configs ------------------------------------------------------------------


def test_incremental_alter_of_a_dynamic_broker_config_is_stored_described_and_kept(
    tmp_path: Path,
) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        resource = ConfigResource(
            ResourceType.BROKER,
            "1",
            incremental_configs=[
                ConfigEntry("log.cleaner.threads", "2", incremental_operation=AlterConfigOpType.SET)
            ],
        )
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=10)
        assert stored(data) == {"": {}, "1": {"log.cleaner.threads": "2"}}
        with RawClient(broker.port) as client:
            entry = entries(describe(client, BROKER, "1"))["log.cleaner.threads"]
        assert (entry.value, entry.config_source, entry.read_only) == ("2", DYNAMIC_BROKER, False)
        assert synonyms(entry) == [
            ["log.cleaner.threads", "2", DYNAMIC_BROKER],
            ["log.cleaner.threads", "1", DEFAULT],
        ]
    finally:
        broker.stop()
    broker = BrokerProcess(data).start()
    try:
        with RawClient(broker.port) as client:
            entry = entries(describe(client, BROKER, "1"))["log.cleaner.threads"]
            assert (entry.value, entry.config_source) == ("2", DYNAMIC_BROKER)
            deleted = incremental(client, "1", [("log.cleaner.threads", DELETE, None)])
            assert (deleted.error_code, deleted.error_message) == (0, None)
            entry = entries(describe(client, BROKER, "1"))["log.cleaner.threads"]
            assert (entry.value, entry.config_source) == ("1", DEFAULT)
        assert stored(data) == {"": {}, "1": {}}
    finally:
        broker.stop()


def test_cluster_default_broker_config_has_its_own_source(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        result = incremental(client, "", [("log.cleaner.backoff.ms", SET, "20000")])
        assert (result.error_code, result.error_message) == (0, None)
        defaults = entries(describe(client, BROKER, ""))
        assert list(defaults) == ["log.cleaner.backoff.ms"]
        assert synonyms(defaults["log.cleaner.backoff.ms"]) == [
            ["log.cleaner.backoff.ms", "20000", DYNAMIC_DEFAULT]
        ]
        # The node's own value beats the cluster default.
        incremental(client, "1", [("log.cleaner.backoff.ms", SET, "30000")])
        entry = entries(describe(client, BROKER, "1"))["log.cleaner.backoff.ms"]
        assert (entry.value, entry.config_source) == ("30000", DYNAMIC_BROKER)
        assert synonyms(entry) == [
            ["log.cleaner.backoff.ms", "30000", DYNAMIC_BROKER],
            ["log.cleaner.backoff.ms", "20000", DYNAMIC_DEFAULT],
            ["log.cleaner.backoff.ms", "15000", DEFAULT],
        ]
    assert stored(broker.data_dir) == {
        "": {"log.cleaner.backoff.ms": "20000"},
        "1": {"log.cleaner.backoff.ms": "30000"},
    }


def legacy_alter(client: RawClient, name: str, configs: dict[str, str]) -> Message:
    return alter(client, BROKER, name, dict(configs))


def test_legacy_alter_configs_replaces_the_dynamic_set_of_the_broker(
    broker: BrokerProcess,
) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        # kafka-python's legacy path re-sends the other dynamic keys itself.
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.BROKER, "1", {"log.cleaner.threads": "3"})],
            incremental=False,
        )
    finally:
        admin.close()
    assert stored(broker.data_dir) == {"": {}, "1": {"log.cleaner.threads": "3"}}
    with RawClient(broker.port) as client:
        assert legacy_alter(client, "1", {"num.io.threads": "4"}).error_code == 0
    assert stored(broker.data_dir) == {"": {}, "1": {"num.io.threads": "4"}}


@pytest.mark.parametrize(
    ("name", "ops", "message"),
    [
        ("1", [("log.dirs", SET, "/x")], "Cannot update these configs dynamically: Set(log.dirs)"),
        (
            "1",
            [("ssl.keystore.type", SET, "PKCS12")],
            "These security configs can be dynamically updated only per-listener using the "
            "listener prefix: Set(ssl.keystore.type)",
        ),
        (
            "",
            [("listeners", SET, "PLAINTEXT://:9093")],
            "Cannot update these configs at default cluster level, broker id must be "
            "specified: Set(listeners)",
        ),
        (
            "1",
            [("log.cleaner.threads", SET, "two")],
            "Invalid value two for configuration log.cleaner.threads: Not a number of type INT",
        ),
        (
            "1",
            [("log.cleaner.threads", APPEND, "2")],
            "Config value append is not allowed for config key: log.cleaner.threads",
        ),
        ("7", [("log.cleaner.threads", SET, "2")], "Unexpected broker id, expected 1, but "),
        ("1", [("log.cleaner.threads", SET, None)], "Null value not supported for : "),
    ],
)
def test_broker_configs_kafka_refuses_are_refused_with_its_message(
    shared_broker: BrokerProcess, name: str, ops: list[tuple[str, int, str | None]], message: str
) -> None:
    with RawClient(shared_broker.port) as client:
        result = incremental(client, name, ops)
    assert result.error_code == ErrorCode.INVALID_REQUEST
    assert result.error_message.startswith(message)
    assert stored(shared_broker.data_dir) == {"": {}, "1": {}}


def test_legacy_alter_of_a_static_broker_config_is_refused(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        result = legacy_alter(client, "1", {"node.id": "2"})
    assert result.error_code == ErrorCode.INVALID_REQUEST
    assert result.error_message == "Cannot update these configs dynamically: Set(node.id)"


# -- topic: SUBTRACT down to an empty list ---------------------------------------------------


def test_subtract_that_empties_cleanup_policy_is_accepted_and_described_empty(
    shared_broker: BrokerProcess,
) -> None:
    from tests.e2e.test_admin_configs import create

    with RawClient(shared_broker.port) as client:
        assert create(client, "empty-policy").error_code == 0
        result = incremental(
            client, "empty-policy", [("cleanup.policy", SUBTRACT, "delete")], TOPIC
        )
        assert (result.error_code, result.error_message) == (0, None)
        entry = entries(describe(client, TOPIC, "empty-policy"))["cleanup.policy"]
    assert (entry.value, entry.config_source) == ("", 1)


# -- groups ------------------------------------------------------------------------------------


def test_group_configs_are_described_as_kafka_4_0(shared_broker: BrokerProcess) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.GROUP, "any-group")])
    finally:
        admin.close()
    assert described is not None
    with RawClient(shared_broker.port) as client:
        group = entries(describe(client, GROUP, "any-group"))
        empty = describe(client, GROUP, "")
    assert {
        n: (e.value, e.config_source, e.read_only, e.config_type) for n, e in group.items()
    } == {
        "consumer.session.timeout.ms": ("45000", DEFAULT, False, 3),
        "consumer.heartbeat.interval.ms": ("5000", DEFAULT, False, 3),
        "share.session.timeout.ms": ("45000", DEFAULT, False, 3),
        "share.heartbeat.interval.ms": ("5000", DEFAULT, False, 3),
        "share.record.lock.duration.ms": ("30000", DEFAULT, False, 3),
        "share.auto.offset.reset": ("latest", DEFAULT, False, 2),
    }
    # Kafka 4.0's ConfigHelper lists the value itself as the DEFAULT_CONFIG synonym.
    assert synonyms(group["consumer.session.timeout.ms"]) == [
        ["consumer.session.timeout.ms", "45000", DEFAULT]
    ]
    assert (empty.error_code, empty.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Group name must not be empty",
    )
