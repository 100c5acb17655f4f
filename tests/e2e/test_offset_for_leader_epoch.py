"""OffsetForLeaderEpoch over raw sockets: the single leader epoch 0 ends at the log end."""

from __future__ import annotations

import uuid

import pytest

from protocol.errors import ErrorCode
from protocol.messages.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import create_topic, produce
from tests.support.raw_client import RawClient

VERSIONS = range(2, 5)


def ask(
    client: RawClient,
    version: int,
    topic: str,
    leader_epoch: int,
    *,
    partition: int = 0,
    current_leader_epoch: int = -1,
) -> tuple[int, int, int]:
    """(error_code, leader_epoch, end_offset) for one partition."""
    answer = client.request(
        OFFSET_FOR_LEADER_EPOCH,
        version,
        Message(
            replica_id=-1,
            topics=[
                Message(
                    topic=topic,
                    partitions=[
                        Message(
                            partition=partition,
                            current_leader_epoch=current_leader_epoch,
                            leader_epoch=leader_epoch,
                        )
                    ],
                )
            ],
        ),
    )
    assert [t.topic for t in answer.topics] == [topic]
    (part,) = answer.topics[0].partitions
    assert part.partition == partition
    return part.error_code, part.leader_epoch, part.end_offset


@pytest.fixture
def topic(shared_broker: BrokerProcess) -> str:
    name = f"ofle-{uuid.uuid4().hex[:8]}"
    with RawClient(shared_broker.port) as client:
        create_topic(client, name)
        for i in range(3):
            assert produce(client, name, build_batch([(None, b"x%d" % i)] * 2)).error_code == 0
    return name


@pytest.mark.parametrize("version", VERSIONS)
def test_current_epoch_ends_at_the_log_end(
    shared_broker: BrokerProcess, topic: str, version: int
) -> None:
    with RawClient(shared_broker.port) as client:
        assert ask(client, version, topic, 0) == (0, 0, 6)
        assert ask(client, version, topic, 0, current_leader_epoch=0) == (0, 0, 6)
        # Unknown epochs (above the current one) and UNDEFINED (-1): no answer, no error.
        assert ask(client, version, topic, 1) == (0, -1, -1)
        assert ask(client, version, topic, 7) == (0, -1, -1)
        assert ask(client, version, topic, -1) == (0, -1, -1)
        # Below every known epoch: the requested epoch and the start of the first known one.
        assert ask(client, version, topic, -3) == (0, -3, 0)


def test_the_end_offset_follows_appends(shared_broker: BrokerProcess, topic: str) -> None:
    with RawClient(shared_broker.port) as client:
        assert ask(client, 4, topic, 0) == (0, 0, 6)
        assert produce(client, topic, build_batch([(None, b"y")])).error_code == 0
        assert ask(client, 4, topic, 0) == (0, 0, 7)


@pytest.mark.parametrize("version", VERSIONS)
def test_current_leader_epoch_is_checked(
    shared_broker: BrokerProcess, topic: str, version: int
) -> None:
    with RawClient(shared_broker.port) as client:
        assert ask(client, version, topic, 0, current_leader_epoch=1) == (
            ErrorCode.UNKNOWN_LEADER_EPOCH,
            -1,
            -1,
        )
        assert ask(client, version, topic, 0, current_leader_epoch=-2) == (
            ErrorCode.FENCED_LEADER_EPOCH,
            -1,
            -1,
        )
        assert ask(client, version, topic, 0) == (0, 0, 6)


def test_unknown_topic_or_partition_and_the_connection_keeps_working(
    shared_broker: BrokerProcess, topic: str
) -> None:
    unknown = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    with RawClient(shared_broker.port) as client:
        for version in VERSIONS:
            assert ask(client, version, f"ofle-nope-{uuid.uuid4().hex[:6]}", 0) == unknown
            assert ask(client, version, topic, 0, partition=9) == unknown
            assert ask(client, version, topic, 0, partition=-1) == unknown
        # Several topics and partitions in one request: answered each, in request order.
        answer = client.request(
            OFFSET_FOR_LEADER_EPOCH,
            4,
            Message(
                replica_id=-1,
                topics=[
                    Message(
                        topic=topic,
                        partitions=[
                            Message(partition=0, leader_epoch=0),
                            Message(partition=1, leader_epoch=0),
                        ],
                    ),
                    Message(
                        topic="ofle-missing", partitions=[Message(partition=0, leader_epoch=0)]
                    ),
                ],
            ),
        )
        assert [
            (t.topic, p.partition, p.error_code, p.end_offset)
            for t in answer.topics
            for p in t.partitions
        ] == [
            (topic, 0, 0, 6),
            (topic, 1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
            ("ofle-missing", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ]
        assert ask(client, 3, topic, 0) == (0, 0, 6)
