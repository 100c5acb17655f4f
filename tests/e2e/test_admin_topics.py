"""DeleteTopics, CreatePartitions and DeleteRecords from three clients, checked on disk and
on what Produce and Fetch do afterwards."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.messages.create_partitions import CREATE_PARTITIONS
from protocol.messages.delete_records import DELETE_RECORDS
from protocol.messages.delete_topics import DELETE_TOPICS
from protocol.records import build_batch
from protocol.schema import Message
from tests.e2e.test_admin_configs import create
from tests.support.broker_process import BrokerProcess
from tests.support.produce import fetch_partition, produce, stored
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS


def fetch_error(client: RawClient, topic: str, offset: int, partition: int = 0) -> int:
    error: int = fetch_partition(client, topic, offset, partition).error_code
    return error


def live_partition_dirs(data: Path, topic: str) -> list[str]:
    """The topic's partition directories still in use: a deleted one is renamed
    ``*-delete`` and waits file.delete.delay.ms before it goes (tests/e2e/test_deleted_files)."""
    return [p.name for p in data.glob(f"{topic}-*") if not p.name.endswith("-delete")]


def fill(client: RawClient, topic: str, batches: int, partition: int = 0) -> None:
    for i in range(batches):
        data = build_batch([(b"k%d" % i, b"v" * 50), (b"k", b"v")])
        assert produce(client, topic, data, partition=partition).error_code == 0


def delete_records(client: RawClient, topic: str, offset: int, version: int = 2) -> Message:
    answer = client.request(
        DELETE_RECORDS,
        version,
        Message(
            topics=[Message(name=topic, partitions=[Message(partition_index=0, offset=offset)])],
            timeout_ms=1000,
        ),
    )
    result: Message = answer.topics[0].partitions[0]
    return result


# -- DeleteTopics --------------------------------------------------------------------------


def test_kafka_python_deletes_topics_and_their_data(shared_broker: BrokerProcess) -> None:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        admin.create_topics({"kp-gone": {"num_partitions": 2, "configs": {"retention.ms": "9"}}})
        with RawClient(shared_broker.port) as client:
            fill(client, "kp-gone", 2)
        assert (shared_broker.data_dir / "kp-gone-1").is_dir()
        admin.delete_topics(["kp-gone"])
    finally:
        admin.close()
    assert live_partition_dirs(shared_broker.data_dir, "kp-gone") == []
    with RawClient(shared_broker.port) as client:
        refused = produce(client, "kp-gone", build_batch([(b"k", b"v")]))
        assert refused.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # Re-created under the same name: empty, new id, default configs.
        assert create(client, "kp-gone").error_code == 0
        assert produce(client, "kp-gone", build_batch([(b"k", b"v")])).base_offset == 0


def test_confluent_deletes_topics(shared_broker: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    admin.create_topics([NewTopic("cf-gone", 1, 1)])["cf-gone"].result(10)
    admin.delete_topics(["cf-gone"])["cf-gone"].result(10)
    assert live_partition_dirs(shared_broker.data_dir, "cf-gone") == []
    with pytest.raises(Exception, match="UNKNOWN_TOPIC_OR_PART"):
        admin.delete_topics(["cf-gone"])["cf-gone"].result(10)


@pytest.mark.parametrize("version", range(1, 7))
def test_delete_topics_every_version(shared_broker: BrokerProcess, version: int) -> None:
    name = f"del-v{version}"
    with RawClient(shared_broker.port) as client:
        created = create(client, name)
        body = (
            Message(topics=[Message(name=name), Message(name="nope-x")], timeout_ms=1000)
            if version >= 6
            else Message(topic_names=[name, "nope-x"], timeout_ms=1000)
        )
        answer = client.request(DELETE_TOPICS, version, body)
        codes = [(r.name, r.error_code) for r in answer.responses]
        assert codes == [(name, 0), ("nope-x", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        if version >= 6:
            assert answer.responses[0].topic_id == created.topic_id
    assert not (shared_broker.data_dir / f"{name}-0").exists()


def test_delete_topics_by_id(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        created = create(client, "by-id")
        answer = client.request(
            DELETE_TOPICS,
            6,
            Message(
                topics=[
                    Message(name=None, topic_id=created.topic_id),
                    Message(name=None, topic_id=b"\x01" * 16),
                    Message(name="both", topic_id=b"\x02" * 16),
                ],
                timeout_ms=1000,
            ),
        )
    got = [(r.name, r.error_code) for r in answer.responses]
    assert got == [
        ("by-id", 0),
        (None, ErrorCode.UNKNOWN_TOPIC_ID),
        ("both", ErrorCode.INVALID_REQUEST),
    ]
    assert not (shared_broker.data_dir / "by-id-0").exists()


def test_interrupted_deletion_is_finished_at_start_up(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    with RawClient(broker.port) as client:
        create(client, "half")
        fill(client, "half", 1)
    broker.stop()
    # As if the broker died right after renaming the directory.
    (data / "half-0").rename(data / "half-0.0123abcd-delete")
    broker = BrokerProcess(data).start()
    try:
        assert not list(data.glob("half-0*"))
        with RawClient(broker.port) as client:
            refused = produce(client, "half", build_batch([(b"k", b"v")]))
            assert refused.error_code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)
    finally:
        broker.stop()


# -- CreatePartitions ----------------------------------------------------------------------


def test_aiokafka_adds_partitions_that_take_records(shared_broker: BrokerProcess) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics(
                [NewTopic("aio-grow", 1, 1, topic_configs={"max.message.bytes": "400"})]
            )
            await admin.create_partitions({"aio-grow": NewPartitions(total_count=3)})
        finally:
            await admin.close()

    asyncio.run(run())
    assert (shared_broker.data_dir / "aio-grow-2").is_dir()
    with RawClient(shared_broker.port) as client:
        assert produce(client, "aio-grow", build_batch([(b"k", b"v")]), partition=2).error_code == 0
        # The new partition has the topic's configs.
        big = build_batch([(b"k", b"v" * 500)])
        assert (
            produce(client, "aio-grow", big, partition=2).error_code == ErrorCode.MESSAGE_TOO_LARGE
        )
    assert len(stored(shared_broker.data_dir, "aio-grow", 2)) == 1


def test_kafka_python_create_partitions(shared_broker: BrokerProcess) -> None:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        admin.create_topics({"kp-grow": {"num_partitions": 1}})
        admin.create_partitions({"kp-grow": 4})
    finally:
        admin.close()
    assert (shared_broker.data_dir / "kp-grow-3").is_dir()


@pytest.mark.parametrize("version", range(4))
def test_create_partitions_bad_input(shared_broker: BrokerProcess, version: int) -> None:
    name = f"grow-bad-v{version}"

    def grow(count: int, assignments: Any = None, validate_only: bool = False) -> Message:
        answer = client.request(
            CREATE_PARTITIONS,
            version,
            Message(
                topics=[Message(name=name, count=count, assignments=assignments)],
                timeout_ms=1000,
                validate_only=validate_only,
            ),
        )
        result: Message = answer.results[0]
        return result

    with RawClient(shared_broker.port) as client:
        create(client, name, 2)
        shrink = grow(1)
        assert shrink.error_code == ErrorCode.INVALID_PARTITIONS
        assert shrink.error_message == (
            f"The topic {name} currently has 2 partition(s); 1 would not be an increase."
        )
        same = grow(2)
        assert (same.error_code, same.error_message) == (
            ErrorCode.INVALID_PARTITIONS,
            "Topic already has 2 partition(s).",
        )
        wrong = grow(3, [Message(broker_ids=[7])])
        assert wrong.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert grow(3, validate_only=True).error_code == 0
        assert not (shared_broker.data_dir / f"{name}-2").exists()
        assert grow(3, [Message(broker_ids=[1])]).error_code == 0
    assert (shared_broker.data_dir / f"{name}-2").exists()


# -- DeleteRecords -------------------------------------------------------------------------


def test_kafka_python_delete_records_moves_the_log_start(shared_broker: BrokerProcess) -> None:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    with RawClient(shared_broker.port) as client:
        create(client, "kp-trim")
        fill(client, "kp-trim", 5)  # offsets 0..9
    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        result = admin.delete_records({TopicPartition("kp-trim", 0): 4})
    finally:
        admin.close()
    assert result
    with RawClient(shared_broker.port) as client:
        assert fetch_error(client, "kp-trim", 3) == ErrorCode.OFFSET_OUT_OF_RANGE
        assert fetch_error(client, "kp-trim", 4) == 0
        assert fetch_error(client, "kp-trim", 9) == 0


def test_aiokafka_delete_records(shared_broker: BrokerProcess) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
    from aiokafka.structs import TopicPartition

    with RawClient(shared_broker.port) as client:
        create(client, "aio-trim")
        fill(client, "aio-trim", 3)

    async def run() -> Any:
        admin = AIOKafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
        await admin.start()
        try:
            return await admin.delete_records(
                {TopicPartition("aio-trim", 0): RecordsToDelete(before_offset=6)}
            )
        finally:
            await admin.close()

    low = asyncio.run(run())
    assert list(low.values()) == [6]
    with RawClient(shared_broker.port) as client:
        assert fetch_error(client, "aio-trim", 5) == ErrorCode.OFFSET_OUT_OF_RANGE


@pytest.mark.parametrize("version", range(3))
def test_delete_records_every_version_and_bad_offsets(
    shared_broker: BrokerProcess, version: int
) -> None:
    name = f"trim-v{version}"
    with RawClient(shared_broker.port) as client:
        create(client, name)
        fill(client, name, 2)  # offsets 0..3
        beyond = delete_records(client, name, 5, version)
        assert (beyond.error_code, beyond.low_watermark) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
        assert delete_records(client, name, -2, version).error_code == (
            ErrorCode.OFFSET_OUT_OF_RANGE
        )
        assert delete_records(client, name, 2, version).low_watermark == 2
        # Lower than the start: nothing changes.
        assert delete_records(client, name, 1, version).low_watermark == 2
        # -1 = the high watermark.
        assert delete_records(client, name, -1, version).low_watermark == 4
        assert fetch_error(client, name, 3) == ErrorCode.OFFSET_OUT_OF_RANGE
        assert fetch_error(client, name, 4) == 0
        missing = delete_records(client, "no-such-topic", 0, version)
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_records_on_a_compact_only_topic_is_a_policy_violation(
    shared_broker: BrokerProcess,
) -> None:
    with RawClient(shared_broker.port) as client:
        create(client, "trim-compact", configs={"cleanup.policy": "compact"})
        fill(client, "trim-compact", 1)
        result = delete_records(client, "trim-compact", 1)
    assert result.error_code == ErrorCode.POLICY_VIOLATION


def test_deleted_records_stay_deleted_after_restart_and_whole_segments_go(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        with RawClient(broker.port) as client:
            # 150-byte segments: each 129-byte batch gets its own segment.
            create(client, "trim-restart", configs={"segment.bytes": "150"})
            fill(client, "trim-restart", 4)  # offsets 0..7, four segments
            assert len(list((data / "trim-restart-0").glob("*.log"))) == 4
            assert delete_records(client, "trim-restart", 5).low_watermark == 5
            # Segments [0,2) and [2,4) are wholly below 5; [4,6) holds it.
            assert len(list((data / "trim-restart-0").glob("*.log"))) == 2
    finally:
        broker.kill()
    broker = BrokerProcess(data).start()
    try:
        with RawClient(broker.port) as client:
            assert fetch_error(client, "trim-restart", 4) == ErrorCode.OFFSET_OUT_OF_RANGE
            assert fetch_error(client, "trim-restart", 5) == 0
    finally:
        broker.stop()
