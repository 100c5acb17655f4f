"""ListOffsets over a real broker: every served version, special timestamps, lookups by
timestamp across several segments checked against the segment files, retention, and what
kafka-python and confluent-kafka make of it."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.list_offsets import LIST_OFFSETS
from protocol.messages.metadata import METADATA
from protocol.records import Record, build_batch, decode_records
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_topic, produce, stored
from tests.support.raw_client import RawClient

VERSIONS = range(1, 11)
EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -2, -1, -3, -4, -5
SEGMENT_BYTES = 1200
BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def small_segments(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running(
        tmp_path_factory.mktemp("lo") / "data",
        {"log.segment.bytes": str(SEGMENT_BYTES), "log.index.interval.bytes": "200"},
    ) as proc:
        yield proc


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def timed_batch(timestamps: list[int]) -> bytes:
    """Records carrying exactly ``timestamps`` (in any order): base timestamp + deltas."""
    base = min(timestamps)
    records = [Record(i, ts - base, b"k", b"value-%d" % ts, ()) for i, ts in enumerate(timestamps)]
    return build_batch(records, base_timestamp=base)


def fill(client: RawClient, topic: str, seed: int = 3, batches: int = 60) -> None:
    """Batches with jittery, mostly rising timestamps; records unordered inside a batch."""
    rng = random.Random(seed)
    now = BASE_TS
    for _ in range(batches):
        now += rng.randint(-20, 50)
        stamps = [now + rng.randint(-30, 30) for _ in range(rng.randint(1, 5))]
        assert produce(client, topic, timed_batch(stamps)).error_code == 0


def on_disk(data_dir: Path, topic: str) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record in the segment files, decoded."""
    out = []
    for header, data in stored(data_dir, topic):
        for r in decode_records(data, header):
            out.append(
                (header.base_offset + r.offset_delta, header.base_timestamp + r.timestamp_delta)
            )
    return out


def first_at_or_after(records: list[tuple[int, int]], target: int) -> tuple[int, int]:
    """(offset, timestamp) Kafka answers for a timestamp lookup; (-1, -1) if none."""
    return next(((o, ts) for o, ts in records if ts >= target), (-1, -1))


def list_offsets(
    client: RawClient,
    version: int,
    topic: str,
    timestamp: int,
    *,
    partition: int = 0,
    isolation_level: int = 0,
    current_leader_epoch: int = -1,
) -> Message:
    answer = client.request(
        LIST_OFFSETS,
        version,
        Message(
            replica_id=-1,
            isolation_level=isolation_level,
            timeout_ms=1000,
            topics=[
                Message(
                    name=topic,
                    partitions=[
                        Message(
                            partition_index=partition,
                            current_leader_epoch=current_leader_epoch,
                            timestamp=timestamp,
                        )
                    ],
                )
            ],
        ),
    )
    assert [t.name for t in answer.topics] == [topic]
    (part,) = answer.topics[0].partitions
    assert part.partition_index == partition
    return part  # type: ignore[no-any-return]


def test_every_version_answers_earliest_latest_max_and_by_timestamp(
    small_segments: BrokerProcess,
) -> None:
    topic = topic_name("lo-all")
    data = small_segments.data_dir
    with RawClient(small_segments.port) as client:
        create_topic(client, topic)
        fill(client, topic)
        records = on_disk(data, topic)
        logs = sorted((data / f"{topic}-0").glob("*.log"))
        assert len(logs) >= 4, "the records should span several segments"
        assert list((data / f"{topic}-0").glob("*.timeindex"))
        end = records[-1][0] + 1
        top = max(ts for _, ts in records)
        top_offset = next(o for o, ts in records if ts == top)
        stamps = sorted({ts for _, ts in records})
        targets = [0, stamps[0], *stamps[1::9], stamps[-1], stamps[-1] + 1]
        for version in VERSIONS:
            epoch = 0 if version >= 4 else -1  # the field exists from v4

            def check(
                timestamp: int, offset: int, ts: int, leader_epoch: int = epoch, v: int = version
            ) -> None:
                # read_committed (v2+) answers the same: no transactions, LSO = high watermark.
                for isolation in (0, 1) if v >= 2 else (0,):
                    got = list_offsets(client, v, topic, timestamp, isolation_level=isolation)
                    assert (got.error_code, got.offset, got.timestamp) == (0, offset, ts), (
                        v,
                        timestamp,
                    )
                    assert got.leader_epoch == leader_epoch

            check(EARLIEST, 0, -1)
            check(LATEST, end, -1)
            if version >= 7:
                check(MAX_TIMESTAMP, top_offset, top)
            if version >= 8:
                check(EARLIEST_LOCAL, 0, -1)
            if version >= 9:
                check(LATEST_TIERED, -1, -1, leader_epoch=-1)
            for target in targets:
                offset, ts = first_at_or_after(records, target)
                check(target, offset, ts, leader_epoch=epoch if offset >= 0 else -1)


def test_special_timestamps_before_their_version_are_unsupported(
    shared_broker: BrokerProcess,
) -> None:
    topic = topic_name("lo-unsup")
    with RawClient(shared_broker.port) as client:
        create_topic(client, topic)
        for version in VERSIONS:
            for timestamp, since in ((-3, 7), (-4, 8), (-5, 9), (-6, 11), (-100, 11)):
                got = list_offsets(client, version, topic, timestamp)
                expected = ErrorCode.NONE if version >= since else ErrorCode.UNSUPPORTED_VERSION
                assert got.error_code == expected, (version, timestamp)
        # The connection is still in use after all those errors.
        assert list_offsets(client, 10, topic, LATEST).error_code == 0


def test_empty_partition_answers(shared_broker: BrokerProcess) -> None:
    topic = topic_name("lo-empty")
    with RawClient(shared_broker.port) as client:
        create_topic(client, topic)
        for timestamp, expected in (
            (EARLIEST, (0, -1, 0)),
            (LATEST, (0, -1, 0)),
            (MAX_TIMESTAMP, (-1, -1, -1)),
            (EARLIEST_LOCAL, (0, -1, 0)),
            (12345, (-1, -1, -1)),
        ):
            got = list_offsets(client, 10, topic, timestamp)
            assert (got.offset, got.timestamp, got.leader_epoch) == expected, timestamp


def test_bad_input_gets_error_codes_and_the_connection_keeps_working(
    shared_broker: BrokerProcess,
) -> None:
    topic = topic_name("lo-bad")
    with RawClient(shared_broker.port) as client:
        create_topic(client, topic)
        assert produce(client, topic, timed_batch([BASE_TS])).error_code == 0
        for version in (1, 5, 10):
            got = list_offsets(client, version, topic_name("lo-nope"), LATEST)
            assert (got.error_code, got.offset) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
            got = list_offsets(client, version, topic, LATEST, partition=7)
            assert got.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # ListOffsets never creates topics (Metadata does, when asked).
        meta = client.request(METADATA, 12, Message(topics=None, allow_auto_topic_creation=False))
        assert not any(t.name.startswith("lo-nope") for t in meta.topics)
        # current_leader_epoch: -1 not given, 0 current, above unknown, below fenced.
        for current, error in (
            (-1, ErrorCode.NONE),
            (0, ErrorCode.NONE),
            (1, ErrorCode.UNKNOWN_LEADER_EPOCH),
            (-2, ErrorCode.FENCED_LEADER_EPOCH),
        ):
            got = list_offsets(client, 4, topic, LATEST, current_leader_epoch=current)
            assert got.error_code == error, current
        # A partition named twice: INVALID_REQUEST, one answer for it; others are served.
        answer = client.request(
            LIST_OFFSETS,
            7,
            Message(
                replica_id=-1,
                topics=[
                    Message(
                        name=topic,
                        partitions=[Message(partition_index=0, timestamp=LATEST)] * 2
                        + [Message(partition_index=3, timestamp=LATEST)],
                    ),
                    Message(name=topic, partitions=[Message(partition_index=0, timestamp=0)]),
                ],
            ),
        )
        assert [(p.partition_index, p.error_code) for t in answer.topics for p in t.partitions] == [
            (0, ErrorCode.INVALID_REQUEST),
            (3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        got = list_offsets(client, 10, topic, LATEST)
        assert (got.error_code, got.offset) == (0, 1)


def test_earliest_and_lookups_follow_retention(tmp_path: Path) -> None:
    broker = BrokerProcess(
        tmp_path / "data",
        {
            "log.segment.bytes": "400",
            "log.retention.bytes": "1200",
            "log.retention.ms": "-1",
            "log.retention.check.interval.ms": "50",
        },
    ).start()
    topic = "lo-ret"
    data = broker.data_dir
    try:
        with RawClient(broker.port) as client:
            create_topic(client, topic)
            for i in range(30):
                assert produce(client, topic, timed_batch([BASE_TS + 10 * i])).error_code == 0
            deadline = time.monotonic() + 10
            while on_disk(data, topic)[0][0] == 0:
                assert time.monotonic() < deadline, "retention never ran"
                time.sleep(0.05)
            # Stable once retention has nothing more to delete: exact agreement with the disk.
            deadline = time.monotonic() + 10
            while True:
                records = on_disk(data, topic)
                got = list_offsets(client, 10, topic, EARLIEST)
                if got.offset == records[0][0] == on_disk(data, topic)[0][0]:
                    break
                assert time.monotonic() < deadline
                time.sleep(0.05)
            by_time = list_offsets(client, 10, topic, 0)
            assert (by_time.offset, by_time.timestamp) == records[0]
            deleted = records[0][0] - 1
            # A timestamp whose records are gone answers the first record still there.
            assert list_offsets(client, 10, topic, BASE_TS + 10 * deleted).offset == records[0][0]
    finally:
        broker.stop()
    assert not (data / f"{topic}-0" / f"{0:020d}.timeindex").exists()


# kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text, deprecated
# since Python 3.11; pytest runs with warnings as errors.
@pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")
def test_kafka_python_offsets_agree_with_the_segment_files(
    small_segments: BrokerProcess,
) -> None:
    from kafka import KafkaConsumer, TopicPartition

    topic = topic_name("lo-kp")
    with RawClient(small_segments.port) as client:
        create_topic(client, topic)
        fill(client, topic, seed=5)
    records = on_disk(small_segments.data_dir, topic)
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=small_segments.bootstrap, group_id=None)
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: records[-1][0] + 1}
        stamps = sorted({ts for _, ts in records})
        for target in [stamps[0] - 5, *stamps[::11], stamps[-1]]:
            found = consumer.offsets_for_times({tp: target})[tp]
            assert found is not None
            assert (found.offset, found.timestamp) == first_at_or_after(records, target)
            assert found.leader_epoch == 0
        assert consumer.offsets_for_times({tp: stamps[-1] + 1}) == {tp: None}
    finally:
        consumer.close()


def test_confluent_offsets_agree_with_the_segment_files(small_segments: BrokerProcess) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic = topic_name("lo-ck")
    with RawClient(small_segments.port) as client:
        create_topic(client, topic)
        fill(client, topic, seed=9)
    records = on_disk(small_segments.data_dir, topic)
    consumer = Consumer({"bootstrap.servers": small_segments.bootstrap, "group.id": "lo-ck"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert (low, high) == (0, records[-1][0] + 1)
        stamps = sorted({ts for _, ts in records})
        for target in [stamps[0] - 5, *stamps[::11], stamps[-1], stamps[-1] + 1]:
            (found,) = consumer.offsets_for_times([TopicPartition(topic, 0, target)], timeout=10)
            assert found.error is None
            expected, _ = first_at_or_after(records, target)
            # librdkafka reports "no such record" as OFFSET_END (-1).
            assert found.offset == expected, target
    finally:
        consumer.close()


def test_confluent_consumer_with_earliest_reset_reads_everything(
    small_segments: BrokerProcess,
) -> None:
    from confluent_kafka import Consumer

    topic = topic_name("lo-reset")
    with RawClient(small_segments.port) as client:
        create_topic(client, topic)
        fill(client, topic, seed=13, batches=40)
    records = on_disk(small_segments.data_dir, topic)
    consumer = Consumer(
        {
            "bootstrap.servers": small_segments.bootstrap,
            "group.id": topic_name("g"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    got: list[tuple[int, int]] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(got) < len(records) and time.monotonic() < deadline:
            for msg in consumer.consume(100, 0.5):
                assert msg.error() is None, msg.error()
                got.append((msg.offset(), msg.timestamp()[1]))
    finally:
        consumer.close()
    assert got == records
