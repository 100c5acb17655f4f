"""Group configs (GROUP resources, type 32) as Kafka 4.0 takes them: IncrementalAlterConfigs
and AlterConfigs through confluent-kafka's AdminClient and a raw socket, DescribeConfigs,
the file the broker stores them in (across a restart), Kafka's refusals, and KIP-848
consumer groups acting on consumer.session.timeout.ms / consumer.heartbeat.interval.ms.

librdkafka's 0081_admin sets consumer.session.timeout.ms=50000 on a group and deletes it
again; before this, minikafka answered INVALID_REQUEST "Unknown resource type 32".
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from protocol.errors import ErrorCode
from storage.group_config_store import GroupConfigStore
from tests.e2e.test_admin_configs import alter
from tests.e2e.test_admin_configs import incremental as resource_incremental
from tests.e2e.test_consumer_groups_raw import create, heartbeat, join
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

GROUP = 32
SET, DELETE, APPEND = 0, 1, 2
SESSION, HEARTBEAT = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"


def incremental(
    client: RawClient,
    group: str,
    ops: list[tuple[str, int, str | None]],
    validate_only: bool = False,
) -> tuple[int, str | None]:
    result = resource_incremental(client, group, ops, GROUP, validate_only)
    return result.error_code, result.error_message


def alter_group(admin: AdminClient, group: str, entries: list[ConfigEntry]) -> None:
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def describe_group(admin: AdminClient, group: str) -> dict[str, ConfigEntry]:
    futures = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)])
    (future,) = futures.values()
    described: dict[str, ConfigEntry] = future.result(timeout=30)
    return described


def test_group_configs_set_with_the_admin_client_are_stored_described_and_kept(
    tmp_path: Path,
) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        alter_group(
            admin,
            "configured",
            [
                ConfigEntry(SESSION, "50000", incremental_operation=AlterConfigOpType.SET),
                ConfigEntry(HEARTBEAT, "6000", incremental_operation=AlterConfigOpType.SET),
            ],
        )
        described = describe_group(admin, "configured")
        assert (described[SESSION].value, described[SESSION].source) == (
            "50000",
            ConfigSource.GROUP_CONFIG.value,
        )
        assert (described[HEARTBEAT].value, described[HEARTBEAT].source) == (
            "6000",
            ConfigSource.GROUP_CONFIG.value,
        )
        other = describe_group(admin, "not-configured")[SESSION]
        assert (other.value, other.source) == ("45000", ConfigSource.DEFAULT_CONFIG.value)
        broker.stop()
        stored = GroupConfigStore.open(broker.data_dir)
        assert stored.problem is None
        assert stored.all() == {"configured": {SESSION: "50000", HEARTBEAT: "6000"}}

        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        assert describe_group(admin, "configured")[SESSION].value == "50000"
        # DELETE returns the config to the broker's default (0081_admin's second step).
        alter_group(
            admin,
            "configured",
            [ConfigEntry(SESSION, None, incremental_operation=AlterConfigOpType.DELETE)],
        )
        back = describe_group(admin, "configured")[SESSION]
        assert (back.value, back.source) == ("45000", ConfigSource.DEFAULT_CONFIG.value)
        broker.stop()
        assert GroupConfigStore.open(broker.data_dir).all() == {"configured": {HEARTBEAT: "6000"}}
    finally:
        if broker.is_running():
            broker.stop()


def test_group_config_refusals_are_kafkas(shared_broker: BrokerProcess) -> None:
    invalid_config = ErrorCode.INVALID_CONFIG
    refusals: list[tuple[tuple[str, int, str], str]] = [
        (("consumer.rebalance.ms", SET, "1"), "Unknown group config name: consumer.rebalance.ms"),
        (
            (SESSION, SET, "abc"),
            "Invalid value abc for configuration consumer.session.timeout.ms: "
            "Not a number of type INT",
        ),
        (
            (SESSION, SET, "0"),
            "Invalid value 0 for configuration consumer.session.timeout.ms: "
            "Value must be at least 1",
        ),
        (
            (SESSION, SET, "44999"),
            "consumer.session.timeout.ms must be greater than or equal to "
            "group.consumer.min.session.timeout.ms",
        ),
        (
            (HEARTBEAT, SET, "15001"),
            "consumer.heartbeat.interval.ms must be less than or equal to "
            "group.consumer.max.heartbeat.interval.ms",
        ),
    ]
    with RawClient(shared_broker.port) as client:
        for op, message in refusals:
            assert incremental(client, "g", [op]) == (invalid_config, message), op
        assert incremental(client, "g", [("share.auto.offset.reset", SET, "newest")])[0] == (
            invalid_config
        )
        assert incremental(client, "g", [(SESSION, APPEND, "1")]) == (
            invalid_config,
            "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.",
        )
        assert incremental(client, "", [(SESSION, SET, "50000")]) == (
            ErrorCode.INVALID_REQUEST,
            "Default group resources are not allowed.",
        )
        # validate_only checks and stores nothing.
        assert incremental(client, "g", [(SESSION, SET, "50000")], validate_only=True) == (0, None)
        assert incremental(client, "g", [("share.auto.offset.reset", SET, "by_duration:PT1H")]) == (
            0,
            None,
        )
        # The legacy AlterConfigs replaces the group's whole set.
        assert alter(client, GROUP, "g", {HEARTBEAT: "7000"}).error_code == 0
    shared_broker.stop()
    try:
        assert GroupConfigStore.open(shared_broker.data_dir).all() == {"g": {HEARTBEAT: "7000"}}
    finally:
        shared_broker.start()


def test_consumer_groups_act_on_their_own_session_timeout_and_heartbeat_interval(
    tmp_path: Path,
) -> None:
    broker = BrokerProcess(
        tmp_path / "data",
        {
            # Bounds low enough for a quick session (Kafka's are 45 s and 5 s).
            "group.consumer.min.session.timeout.ms": "1000",
            "group.consumer.min.heartbeat.interval.ms": "100",
        },
    ).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        alter_group(
            admin,
            "short",
            [
                ConfigEntry(SESSION, "1500", incremental_operation=AlterConfigOpType.SET),
                ConfigEntry(HEARTBEAT, "200", incremental_operation=AlterConfigOpType.SET),
            ],
        )
        with RawClient(broker.port) as client:
            create(client, "cg-own", 2)
            joined = join(client, "short", "m1", ["cg-own"])
            assert (joined.error_code, joined.heartbeat_interval_ms) == (0, 200)
            other = join(client, "default", "m1", ["cg-own"])
            assert (other.error_code, other.heartbeat_interval_ms) == (0, 5000)
            # m1 of "short" goes silent: fenced after 1.5 s, not the broker's 45 s.
            assert broker.wait_for_log("group short: member m1 fenced: the member session expired")
            again = heartbeat(client, "short", "m1", joined.member_epoch)
            assert again.error_code == ErrorCode.UNKNOWN_MEMBER_ID
            # The group without configs keeps its member.
            still = heartbeat(client, "default", "m1", other.member_epoch)
            assert still.error_code == 0
    finally:
        broker.stop()
