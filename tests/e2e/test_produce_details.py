"""Produce answers and stored batches as Kafka 4.0 gives them, over a real socket.

Each behaviour is checked on the response fields and on what the segment files hold.
Kafka sources compared: KafkaApis.handleProduceRequest, ReplicaManager.appendToLocalLog,
UnifiedLog.append / analyzeAndValidateRecords, LogValidator, Partition.appendRecordsToLeader.
"""

from __future__ import annotations

import re
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.delete_records import DELETE_RECORDS
from protocol.messages.produce import PRODUCE
from protocol.records import (
    BatchHeader,
    Record,
    build_batch,
    compute_crc,
    decode_records,
    write_crc,
)
from protocol.schema import Message
from tests.e2e.test_admin_configs import create
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_topic, produce_request, stored
from tests.support.raw_client import RawClient

HOUR_MS = 3_600_000
ATTRIBUTES = 21
MAX_TIMESTAMP = 35
LOG_APPEND_TIME_BIT = 0x08


def now_ms() -> int:
    return int(time.time() * 1000)


def plain(count: int = 3, **kw: object) -> bytes:
    return batch(producer_id=-1, epoch=-1, base_sequence=-1, count=count, **kw)


def patched(data: bytes, fmt: str, offset: int, value: int, *, crc: bool = True) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    if crc:
        write_crc(out)
    return bytes(out)


def timed(timestamps: list[int], *, codec: int = 0, keys: bool = True) -> bytes:
    """A batch whose records carry exactly these timestamps."""
    base = timestamps[0]
    records = [
        Record(i, ts - base, b"k%d" % i if keys else None, b"v%d" % i, ())
        for i, ts in enumerate(timestamps)
    ]
    return build_batch(records, base_timestamp=base, codec=codec)


def send(client: RawClient, topic: str, data: bytes | None, *, version: int = 11) -> Message:
    answer = client.request(PRODUCE, version, produce_request(topic, data))
    assert len(answer.responses) == 1 and len(answer.responses[0].partition_responses) == 1
    part: Message = answer.responses[0].partition_responses[0]
    return part


def headers(broker: BrokerProcess, topic: str) -> list[BatchHeader]:
    return [h for h, _ in stored(broker.data_dir, topic)]


def delete_records_before(client: RawClient, topic: str, offset: int) -> None:
    answer = client.request(
        DELETE_RECORDS,
        2,
        Message(
            topics=[Message(name=topic, partitions=[Message(partition_index=0, offset=offset)])],
            timeout_ms=5000,
        ),
    )
    assert answer.topics[0].partitions[0].error_code == 0


@pytest.fixture
def client(shared_broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(shared_broker.port) as c:
        yield c


# --- error_message and log_start_offset on error answers (ReplicaManager.appendToLocalLog)


def test_errors_without_record_errors_have_no_error_message(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-no-message"
    assert create(client, topic, configs={"max.message.bytes": "300"}).error_code == 0
    bad_crc = patched(plain(), ">I", 17, 1, crc=False)
    magic_1 = patched(plain(), ">b", 16, 1)
    too_large = plain(count=30)
    base_offset = patched(plain(), ">q", 0, 5)
    for data, code in [
        (bad_crc, ErrorCode.CORRUPT_MESSAGE),
        (magic_1, ErrorCode.INVALID_RECORD),
        (too_large, ErrorCode.MESSAGE_TOO_LARGE),
        (base_offset, ErrorCode.INVALID_RECORD),
    ]:
        part = send(client, topic, data)
        assert (part.error_code, part.error_message, part.record_errors) == (code, None, [])
    assert headers(shared_broker, topic) == []


def test_error_answers_carry_log_start_offset_as_kafka_does(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-log-start"
    assert create(client, topic, configs={"max.message.bytes": "300"}).error_code == 0
    assert send(client, topic, plain(count=4)).error_code == 0
    delete_records_before(client, topic, 2)
    # Checks in UnifiedLog/LogValidator that end in ReplicaManager's catch-all answer the
    # partition's log start offset...
    assert send(client, topic, patched(plain(), ">q", 0, 5)).log_start_offset == 2
    assert send(client, topic, patched(plain(), ">i", 57, 7)).log_start_offset == 2
    # ...while the exceptions ReplicaManager lists (RecordTooLarge, CorruptRecord) and the
    # request-level checks of KafkaApis (ProduceRequest.validateRecords) answer -1.
    too_large = send(client, topic, plain(count=30))
    assert (too_large.error_code, too_large.log_start_offset) == (ErrorCode.MESSAGE_TOO_LARGE, -1)
    bad_crc = send(client, topic, patched(plain(), ">I", 17, 1, crc=False))
    assert (bad_crc.error_code, bad_crc.log_start_offset) == (ErrorCode.CORRUPT_MESSAGE, -1)
    magic_1 = send(client, topic, patched(plain(), ">b", 16, 1))
    assert (magic_1.error_code, magic_1.log_start_offset) == (ErrorCode.INVALID_RECORD, -1)
    assert [h.base_offset for h in headers(shared_broker, topic)] == [0]


def test_compacted_topic_record_error_texts_are_kafkas(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-compact"
    assert create(client, topic, configs={"cleanup.policy": "compact"}).error_code == 0
    part = send(client, topic, plain(count=2))
    message = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
    assert part.error_code == ErrorCode.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
        (0, message),
        (1, message),
    ]
    assert part.error_message == (
        "One or more records have been rejected due to 2 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=0, message='{message}'"
        f"), RecordError(batchIndex=1, message='{message}')]"
    )
    assert part.log_start_offset == 0
    assert headers(shared_broker, topic) == []


# --- timestamps (LogValidator.validateTimestamp, message.timestamp.*.max.ms) -------------


def test_timestamp_more_than_an_hour_ahead_is_invalid_timestamp_by_default(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-future"
    create_topic(client, topic)
    now = now_ms()
    part = send(client, topic, timed([now, now + 2 * HOUR_MS, now + 1]))
    assert part.error_code == ErrorCode.INVALID_TIMESTAMP
    assert part.error_message == "One or more records have been rejected due to invalid timestamp"
    assert [e.batch_index for e in part.record_errors] == [1]
    text = part.record_errors[0].batch_index_error_message
    match = re.fullmatch(
        rf"Timestamp {now + 2 * HOUR_MS} of message with offset 1 is out of range\. "
        r"The timestamp should be within \[(-?\d+), (\d+)\]",
        text,
    )
    assert match is not None, text
    assert int(match.group(2)) - int(match.group(1)) == HOUR_MS + 2**63 - 1
    assert part.log_start_offset == 0
    # Old timestamps are fine by default (message.timestamp.before.max.ms = Long.MAX_VALUE).
    assert send(client, topic, timed([1_000, now + HOUR_MS // 2])).error_code == 0
    assert [h.records_count for h in headers(shared_broker, topic)] == [2]


def test_topic_timestamp_bounds_are_enforced_on_every_record(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-bounds"
    configs = {
        "message.timestamp.before.max.ms": "60000",
        "message.timestamp.after.max.ms": "60000",
    }
    assert create(client, topic, configs=configs).error_code == 0
    now = now_ms()
    part = send(client, topic, timed([now - 10 * 60_000, now, now + 10 * 60_000], codec=1))
    assert part.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in part.record_errors] == [0, 2]
    # A record without a timestamp (-1) is not checked.
    assert send(client, topic, timed([-1, now])).error_code == 0
    assert [h.records_count for h in headers(shared_broker, topic)] == [2]


def test_broker_timestamp_bound_is_the_topic_default(tmp_path: Path) -> None:
    overrides = {"log.message.timestamp.before.max.ms": "60000"}
    broker = BrokerProcess(tmp_path / "data", overrides).start()
    try:
        with RawClient(broker.port) as c:
            create_topic(c, "pd-broker-bound")
            now = now_ms()
            part = send(c, "pd-broker-bound", timed([now - HOUR_MS]))
            assert part.error_code == ErrorCode.INVALID_TIMESTAMP
        assert headers(broker, "pd-broker-bound") == []
    finally:
        broker.stop()


@pytest.mark.parametrize("codec", [0, 3])
def test_max_timestamp_is_recomputed_from_the_records(
    shared_broker: BrokerProcess, client: RawClient, codec: int
) -> None:
    topic = f"pd-maxts-{codec}"
    create_topic(client, topic)
    now = now_ms()
    sent = timed([now - 50, now - 10, now - 30], codec=codec)
    wrong = patched(sent, ">q", MAX_TIMESTAMP, now - 50)
    assert send(client, topic, wrong).error_code == 0
    [(header, data)] = stored(shared_broker.data_dir, topic)
    assert header.max_timestamp == now - 10
    assert header.crc == compute_crc(data)


def test_log_append_time_bit_from_a_producer_is_cleared_on_a_create_time_topic(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-lat-bit"
    create_topic(client, topic)
    now = now_ms()
    sent = timed([now - 50, now - 10])
    with_bit = patched(sent, ">h", ATTRIBUTES, LOG_APPEND_TIME_BIT)
    part = send(client, topic, with_bit)
    assert (part.error_code, part.log_append_time_ms) == (0, -1)
    [(header, data)] = stored(shared_broker.data_dir, topic)
    # Kafka reads every record of a LogAppendTime batch as max_timestamp, then stores the
    # batch as CreateTime with that maximum (DefaultRecordBatch.setMaxTimestamp).
    assert header.attributes & LOG_APPEND_TIME_BIT == 0
    assert header.max_timestamp == now - 10
    assert header.crc == compute_crc(data)


def test_log_append_time_bit_without_a_timestamp_is_invalid_timestamp(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-lat-bit-none"
    create_topic(client, topic)
    data = patched(patched(plain(count=2), ">q", MAX_TIMESTAMP, -1), ">h", ATTRIBUTES, 0x08)
    part = send(client, topic, data)
    assert part.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in part.record_errors] == [0, 1]
    assert part.record_errors[0].batch_index_error_message.startswith(
        "Invalid timestamp type in message DefaultRecord(offset=0, timestamp=-1, key=0 bytes, "
    )
    assert headers(shared_broker, topic) == []


def test_log_append_time_bit_from_a_producer_is_refused_on_a_log_append_time_topic(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-lat-topic"
    configs = {"message.timestamp.type": "LogAppendTime"}
    assert create(client, topic, configs=configs).error_code == 0
    now = now_ms()
    with_bit = patched(timed([now, now + 1]), ">h", ATTRIBUTES, LOG_APPEND_TIME_BIT)
    part = send(client, topic, with_bit)
    assert part.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in part.record_errors] == [0, 1]
    assert headers(shared_broker, topic) == []


# --- sizes (UnifiedLog.append) --------------------------------------------------------------


def test_batch_larger_than_segment_bytes_is_record_batch_too_large(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-segment"
    assert create(client, topic, configs={"segment.bytes": "200"}).error_code == 0
    small = plain(count=1)
    assert len(small) <= 200
    assert send(client, topic, small).error_code == 0
    big = plain(count=20)
    assert len(big) > 200
    part = send(client, topic, big)
    assert (part.error_code, part.error_message, part.log_start_offset) == (
        ErrorCode.RECORD_LIST_TOO_LARGE,
        None,
        -1,
    )
    assert [h.records_count for h in headers(shared_broker, topic)] == [1]


# --- min.insync.replicas (Partition.appendRecordsToLeader, KAFKA-15583) ----------------------


def test_min_insync_replicas_above_the_replication_factor_does_not_fail_acks_all(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-min-isr"
    assert create(client, topic, configs={"min.insync.replicas": "2"}).error_code == 0
    part = send(client, topic, plain())
    assert (part.error_code, part.base_offset) == (0, 0)
    assert [h.records_count for h in headers(shared_broker, topic)] == [3]


# --- request shape (KafkaApis.handleProduceRequest) -----------------------------------------


def _twice(topic: str, first: bytes, second: bytes, *, split_topics: bool = False) -> Message:
    one = Message(index=0, records=first)
    two = Message(index=0, records=second)
    topics = (
        [Message(name=topic, partition_data=[one]), Message(name=topic, partition_data=[two])]
        if split_topics
        else [Message(name=topic, partition_data=[one, two])]
    )
    return Message(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=topics)


@pytest.mark.parametrize("split_topics", [False, True])
def test_same_partition_twice_appends_the_last_batch_once(
    shared_broker: BrokerProcess, client: RawClient, split_topics: bool
) -> None:
    topic = f"pd-twice-{int(split_topics)}"
    create_topic(client, topic)
    first, second = plain(count=1, tag="first"), plain(count=2, tag="second")
    answer = client.request(PRODUCE, 11, _twice(topic, first, second, split_topics=split_topics))
    assert [(t.name, [p.index for p in t.partition_responses]) for t in answer.responses] == [
        (topic, [0])
    ]
    part = answer.responses[0].partition_responses[0]
    assert (part.error_code, part.base_offset) == (0, 0)
    [(_, data)] = stored(shared_broker.data_dir, topic)
    assert data[61:] == second[61:]


@pytest.mark.parametrize("invalid_first", [True, False])
def test_same_partition_twice_with_one_invalid_batch_answers_the_error(
    shared_broker: BrokerProcess, client: RawClient, invalid_first: bool
) -> None:
    # Kafka keeps the valid batch in authorizedRequestInfo and appends it, but its merged
    # response map lets the request-level error win (responseStatus ++ invalidRequest...).
    topic = f"pd-twice-invalid-{int(invalid_first)}"
    create_topic(client, topic)
    valid, invalid = plain(count=2), patched(plain(), ">b", 16, 1)
    pair = (invalid, valid) if invalid_first else (valid, invalid)
    answer = client.request(PRODUCE, 11, _twice(topic, *pair))
    [part] = answer.responses[0].partition_responses
    assert (part.error_code, part.base_offset) == (ErrorCode.INVALID_RECORD, -1)
    assert [h.records_count for h in headers(shared_broker, topic)] == [2]


def test_invalid_acks_spares_request_level_errors(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    create_topic(client, "pd-acks")
    request = Message(
        transactional_id=None,
        acks=2,
        timeout_ms=30000,
        topic_data=[
            Message(name="pd-acks", partition_data=[Message(index=0, records=plain())]),
            Message(name="pd-acks-missing", partition_data=[Message(index=0, records=plain())]),
        ],
    )
    answer = client.request(PRODUCE, 11, request)
    codes = {t.name: t.partition_responses[0].error_code for t in answer.responses}
    assert codes == {
        "pd-acks": ErrorCode.INVALID_REQUIRED_ACKS,
        "pd-acks-missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert headers(shared_broker, "pd-acks") == []


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_closes_the_connection(
    shared_broker: BrokerProcess, client: RawClient, version: int
) -> None:
    topic = f"pd-v{version}"
    create_topic(client, topic)
    client.send(PRODUCE, version, produce_request(topic, plain()), expect_response=False)
    assert client.closed_by_peer()
    assert headers(shared_broker, topic) == []
    shared_broker.wait_for_log(rf"closing connection: Produce v{version} is not served")


# --- leniencies Kafka has (UnifiedLog.trimInvalidBytes, LogValidator offsets) ---------------


def test_bytes_after_the_batch_that_form_no_batch_are_trimmed(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-trailing"
    create_topic(client, topic)
    good = plain()
    part = send(client, topic, good + b"\x00" * 5)
    assert (part.error_code, part.base_offset) == (0, 0)
    # A partial second batch whose header is readable: its length and magic are checked.
    partial = good[:20]
    assert send(client, topic, good + partial).error_code == 0
    too_short = struct.pack(">qi", 0, 13)
    assert send(client, topic, good + too_short).error_code == ErrorCode.CORRUPT_MESSAGE
    # Only the batch is stored (bytes 16 on are the client's; offset and epoch are patched).
    assert [data[16:] for _, data in stored(shared_broker.data_dir, topic)] == [good[16:]] * 2


def _irregular(codec: int) -> bytes:
    now = now_ms()
    records = [Record(d, 0, b"k", b"v%d" % i, ()) for i, d in enumerate([0, 0, 2])]
    return build_batch(records, base_timestamp=now, codec=codec)


def test_uncompressed_batch_with_irregular_offset_deltas_is_stored_as_sent(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-deltas-plain"
    create_topic(client, topic)
    sent = _irregular(0)
    assert send(client, topic, sent).error_code == 0
    [(header, data)] = stored(shared_broker.data_dir, topic)
    assert data[61:] == sent[61:]
    assert [r.offset_delta for r in decode_records(data, header)] == [0, 0, 2]


def test_compressed_batch_with_irregular_offset_deltas_is_rebuilt_with_fresh_offsets(
    shared_broker: BrokerProcess, client: RawClient
) -> None:
    topic = "pd-deltas-gzip"
    create_topic(client, topic)
    assert send(client, topic, plain(count=1)).error_code == 0
    part = send(client, topic, _irregular(1))
    assert (part.error_code, part.base_offset) == (0, 1)
    [_, (header, data)] = stored(shared_broker.data_dir, topic)
    assert (header.base_offset, header.records_count, header.last_offset_delta) == (1, 3, 2)
    assert header.compression == 1 and header.crc == compute_crc(data)
    records = decode_records(data, header)
    assert [r.offset_delta for r in records] == [0, 1, 2]
    assert [r.value for r in records] == [b"v0", b"v1", b"v2"]
