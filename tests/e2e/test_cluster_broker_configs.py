"""Each node of a simulated cluster answers for its own BROKER config resource, as each broker
of a Kafka 4.0 cluster does (ConfigHelper, ConfigAdminManager.validateResourceNameIsCurrentNodeId):
DescribeConfigs of "<its id>" shows its node.id and broker.rack, another id is INVALID_REQUEST;
IncrementalAlterConfigs of "<its id>" stores that node's dynamic configs. Clients send a BROKER
resource to the broker it names (librdkafka's 0101_fetch_from_follower reads broker.rack of
each replica that way)."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from minikafka import ThreadedBroker
from protocol.errors import ErrorCode
from storage.broker_config_store import BrokerConfigStore
from tests.e2e.test_admin_broker_configs import BROKER, DYNAMIC_BROKER, SET, describe, entries
from tests.e2e.test_admin_configs import incremental
from tests.e2e.test_cluster_failover import ports_of
from tests.support.raw_client import RawClient

STATIC = 4
RACKS = {1: "RACK1", 2: "RACK2", 3: "RACK3"}

pytestmark = pytest.mark.minikafka(racks=list(RACKS.values()))


def stored(data_dir: Path) -> dict[str, dict[str, str]]:
    store = BrokerConfigStore.open(data_dir)
    assert store.problems == []
    return {name: store.get(name) for name in ("", "1", "2", "3") if store.get(name)}


def test_each_node_describes_its_own_id_and_rack(kafka_cluster: ThreadedBroker) -> None:
    ports = ports_of(kafka_cluster)
    for node, port in ports.items():
        with RawClient(port) as client:
            own = entries(describe(client, BROKER, str(node)))
            other = describe(client, BROKER, str(node % 3 + 1))
        for name, value in (("node.id", str(node)), ("broker.rack", RACKS[node])):
            assert (own[name].value, own[name].config_source) == (value, STATIC), name
        assert own["broker.id"].value == str(node)
        assert (other.error_code, other.error_message) == (
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {node} or empty string, but received {node % 3 + 1}",
        )

    # A real client sends each BROKER resource to the node it names.
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    racks = {}
    for node in ports:
        futures = admin.describe_configs([ConfigResource(ResourceType.BROKER, str(node))])
        for future in futures.values():
            racks[node] = future.result(timeout=10)["broker.rack"].value
    assert racks == RACKS


def test_a_node_alters_and_stores_its_own_dynamic_configs(kafka_cluster: ThreadedBroker) -> None:
    ports = ports_of(kafka_cluster)
    with RawClient(ports[1]) as client:
        refused = incremental(client, "2", [("log.cleaner.threads", SET, "2")])
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Unexpected broker id, expected 1, but received 2",
    )
    assert stored(kafka_cluster.data_dir) == {}

    with RawClient(ports[2]) as client:
        done = incremental(client, "2", [("log.cleaner.threads", SET, "2")])
        assert (done.error_code, done.error_message) == (0, None)
        entry = entries(describe(client, BROKER, "2"))["log.cleaner.threads"]
    assert (entry.value, entry.config_source) == ("2", DYNAMIC_BROKER)

    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    resource = ConfigResource(
        ResourceType.BROKER,
        "3",
        incremental_configs=[
            ConfigEntry("log.cleaner.threads", "3", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=10)
    assert stored(kafka_cluster.data_dir) == {
        "2": {"log.cleaner.threads": "2"},
        "3": {"log.cleaner.threads": "3"},
    }
    with RawClient(ports[3]) as client:
        entry = entries(describe(client, BROKER, "3"))["log.cleaner.threads"]
    assert (entry.value, entry.config_source) == ("3", DYNAMIC_BROKER)
