"""Metadata: single node, per-listener advertised address, auto-creation, stable ids."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.metadata import METADATA
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient


def metadata(
    client: RawClient, names: list[str] | None, version: int = 12, **kw: object
) -> Message:
    topics = None if names is None else [Message(name=n) for n in names]
    return client.request(METADATA, version, Message(topics=topics, **kw))


def test_auto_creation_honours_request_flag_and_config(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "d", {"num.partitions": "3"}).start()
    try:
        with RawClient(broker.port) as client:
            refused = metadata(client, ["lazy"], allow_auto_topic_creation=False)
            assert refused.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert not (tmp_path / "d" / "lazy-0").exists()
            # As Kafka 4.0 (kafka-oracle/raw_metadata_variants #7): the creating request is
            # answered UNKNOWN_TOPIC_OR_PARTITION, no partitions, zero id; the next one has it.
            creating = metadata(client, ["eager"], allow_auto_topic_creation=True).topics[0]
            assert creating.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert creating.partitions == [] and creating.topic_id == b"\x00" * 16
            assert (tmp_path / "d" / "eager-0").is_dir()
            created = metadata(client, ["eager"], allow_auto_topic_creation=True)
            topic = created.topics[0]
            assert topic.error_code == 0
            assert [p.partition_index for p in topic.partitions] == [0, 1, 2]
            assert all(p.leader_id == 1 and p.replica_nodes == [1] for p in topic.partitions)
            assert sorted(p.name for p in (tmp_path / "d").glob("eager-*")) == [
                "eager-0",
                "eager-1",
                "eager-2",
            ]
    finally:
        broker.stop()


def test_auto_creation_disabled_by_config(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "d", {"auto.create.topics.enable": "false"}).start()
    try:
        with RawClient(broker.port, client_id="waiting-producer") as client:
            # A producer retries its Metadata until the topic exists.
            for _ in range(20):
                answer = metadata(client, ["nope"], allow_auto_topic_creation=True)
                assert answer.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert not (tmp_path / "d" / "nope-0").exists()
        hint = (
            "INFO [broker.handlers.metadata] Metadata for unknown topic 'nope' from client "
            "waiting-producer: auto.create.topics.enable=false"
        )
        broker.wait_for_log(re.escape(hint))
        # Once a minute per client and topic, not per request.
        assert broker.log_text().count("Metadata for unknown topic") == 1
    finally:
        broker.stop()


def test_invalid_topic_names_get_invalid_topic_exception(shared_broker: BrokerProcess) -> None:
    bad = ["", ".", "..", "a" * 250, "has space", "sl/ash"]
    with RawClient(shared_broker.port) as client:
        answer = metadata(client, bad)
        assert [t.error_code for t in answer.topics] == [ErrorCode.INVALID_TOPIC_EXCEPTION] * len(
            bad
        )
    assert not any(p.name.startswith(("has", "sl")) for p in shared_broker.data_dir.iterdir())


def test_every_version_answers_all_topics(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        metadata(client, ["listed"])
        for version in range(0, 14):
            # v0 asks for all topics with an empty list, v1+ with null.
            names = [] if version == 0 else None
            kw = {"allow_auto_topic_creation": True} if version >= 4 else {}
            answer = metadata(client, names, version, **kw)
            assert "listed" in [t.name for t in answer.topics], version
            assert answer.brokers[0].port == shared_broker.port


def test_cluster_id_and_topic_ids_survive_restart(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "d").start()
    with RawClient(broker.port) as client:
        metadata(client, ["keep"])  # creates it
        before = metadata(client, ["keep"])
    broker.stop()
    broker = BrokerProcess(tmp_path / "d").start()
    try:
        with RawClient(broker.port) as client:
            after = metadata(client, ["keep"])
            # v12 can look a topic up by id alone.
            by_id = client.request(
                METADATA,
                12,
                Message(topics=[Message(topic_id=before.topics[0].topic_id, name=None)]),
            )
    finally:
        broker.stop()
    assert after.cluster_id == before.cluster_id and re.fullmatch(r"[\w-]{22}", after.cluster_id)
    assert after.topics[0].topic_id == before.topics[0].topic_id != b"\x00" * 16
    assert by_id.topics[0].name == "keep"


def test_each_listener_advertises_its_own_address(tmp_path: Path) -> None:
    broker = BrokerProcess(
        tmp_path / "d",
        {
            "listeners": "INSIDE://127.0.0.1:0,OUTSIDE://127.0.0.1:0",
            "advertised.listeners": "INSIDE://kafka.internal:29092,OUTSIDE://localhost:9092",
            "listener.security.protocol.map": "INSIDE:PLAINTEXT,OUTSIDE:PLAINTEXT",
        },
    ).start()
    try:
        line = broker.wait_for_log("minikafka started")
        ports = [int(p) for p in re.findall(r"\w+://127\.0\.0\.1:(\d+)", line)]
        assert len(ports) == 2
        answers = []
        for port in ports:
            with RawClient(port) as client:
                b = metadata(client, None).brokers[0]
                answers.append((b.host, b.port))
        assert answers == [("kafka.internal", 29092), ("localhost", 9092)]
    finally:
        broker.stop()


def test_authorized_operations_when_asked_as_kafka_without_authorizer(
    shared_broker: BrokerProcess,
) -> None:
    # kafka-oracle/raw_metadata_variants #5 and admin_describe_cluster_logdirs #22: every
    # operation of the resource type, on error entries too.
    with RawClient(shared_broker.port) as client:
        metadata(client, ["ops-t"])
        answer = metadata(
            client,
            ["ops-t", "ops-missing", "bad name"],
            version=8,
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=True,
            include_topic_authorized_operations=True,
        )
        plain = metadata(client, ["ops-t"], version=8)
    topic_ops = {3, 4, 5, 6, 7, 8, 10, 11}
    assert {b for b in range(32) if answer.cluster_authorized_operations >> b & 1} == {
        5,
        7,
        8,
        9,
        10,
        11,
        12,
    }
    for topic in answer.topics:
        assert {b for b in range(32) if topic.topic_authorized_operations >> b & 1} == topic_ops
    assert [t.error_code for t in answer.topics] == [0, 3, 17]
    assert plain.cluster_authorized_operations == -(2**31)
    assert plain.topics[0].topic_authorized_operations == -(2**31)


def test_a_topic_asked_for_twice_gets_one_entry(shared_broker: BrokerProcess) -> None:
    # Kafka collects the requested names into a set (kafka-oracle/raw_metadata_variants #9).
    with RawClient(shared_broker.port) as client:
        metadata(client, ["twice"])
        answer = metadata(client, ["twice", "twice"])
        by_id = client.request(
            METADATA,
            12,
            Message(
                topics=[Message(topic_id=answer.topics[0].topic_id, name=None)] * 2,
            ),
        )
    assert [t.name for t in answer.topics] == ["twice"]
    assert [t.name for t in by_id.topics] == ["twice"]


@pytest.mark.parametrize("version", [10, 11])
@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (Message(name=None, topic_id=b"\x01" * 16), "Topic name can not be null"),
        (Message(name="named", topic_id=b"\x01" * 16), "Topic IDs are not supported in requests"),
    ],
    ids=["null-name", "topic-id"],
)
def test_topic_ids_before_v12_close_the_connection_as_kafka(
    shared_broker: BrokerProcess, version: int, entry: Message, reason: str
) -> None:
    # v10-11 carry the fields but Kafka refuses them (InvalidRequestException); answering
    # would need a null name where v10-11 responses have none. Found by tests/fuzz.
    with RawClient(shared_broker.port) as client:
        client.send(METADATA, version, Message(topics=[entry], allow_auto_topic_creation=False))
        assert client.closed_by_peer()
    shared_broker.wait_for_log(f"closing connection: {reason} for version {version}")
    assert "Traceback" not in shared_broker.log_text()
    with RawClient(shared_broker.port) as client:
        assert metadata(client, []).topics == []


def test_invalid_topic_names_in_metadata_log_one_debug_line_per_client_per_minute(
    tmp_path: Path,
) -> None:
    # Kafka answers INVALID_TOPIC_EXCEPTION without a log line of its own (KafkaApis
    # getTopicMetadata); a regex-subscribing client sends thousands a minute, so we log at
    # DEBUG and at most once a minute per client.
    broker = BrokerProcess(tmp_path / "data", {"log.level": "DEBUG"}).start()
    try:
        for client_id in ("regex-a", "regex-b"):
            with RawClient(broker.port, client_id=client_id) as client:
                for _ in range(30):
                    answer = client.request(
                        METADATA, 9, Message(topics=[Message(name="bad name!")])
                    )
                    assert answer.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        with RawClient(broker.port, client_id="marker") as client:
            client.request(METADATA, 9, Message(topics=[Message(name="marker-topic")]))
        broker.wait_for_log("auto-created topic 'marker-topic'")
    finally:
        broker.stop()
    lines = [line for line in broker.lines if "invalid topic name 'bad name!'" in line]
    assert len(lines) == 2, lines
    assert all(" DEBUG " in line for line in lines), lines
    assert "regex-a" in lines[0] and "regex-b" in lines[1]
