"""Bad input gets Kafka's error code or a closed connection; the broker keeps serving others
and stores nothing from it."""

from __future__ import annotations

import struct

import pytest

from protocol.errors import ErrorCode
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.records import write_crc
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_topic, produce, produce_request, stored
from tests.support.raw_client import SOFTWARE, RawClient


def still_serving(broker: BrokerProcess) -> None:
    with RawClient(broker.port, client_id="bystander") as other:
        answer = other.request(API_VERSIONS, 3, SOFTWARE)
        assert answer.error_code == 0


@pytest.mark.parametrize(
    "length", [-1, 0, 200 * 1024 * 1024], ids=["negative", "zero", "oversized"]
)
def test_bad_frame_length_closes_connection(broker: BrokerProcess, length: int) -> None:
    with RawClient(broker.port) as client:
        client.send_raw(struct.pack(">i", length) + b"\x00" * 8)
        assert client.closed_by_peer()
    still_serving(broker)
    broker.wait_for_log("frame length")


def test_truncated_frame_is_dropped_and_others_served(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        client.send_raw(struct.pack(">i", 100) + b"\x00\x03\x00\x0c" + b"\x00" * 6)
    broker.wait_for_log("partial frame")
    still_serving(broker)


def test_garbage_after_valid_header_closes_connection(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        frame = client.encode(METADATA, 12, Message(topics=None), correlation_id=7)
        garbage = frame[:-1] + b"\xff\xff\xff\xff\xff\xff\x01\x02"
        client.send_raw(struct.pack(">i", len(garbage) - 4) + garbage[4:])
        assert client.closed_by_peer()
    broker.wait_for_log("malformed Metadata")
    still_serving(broker)


def test_unknown_api_key_closes_connection(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        body = struct.pack(">hhih", 999, 0, 1, 0)
        client.send_raw(struct.pack(">i", len(body)) + body)
        assert client.closed_by_peer()
    broker.wait_for_log("unknown api key 999")
    still_serving(broker)


def test_unsupported_version_closes_connection(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        body = struct.pack(">hhih", PRODUCE.key, 13, 1, 0)
        client.send_raw(struct.pack(">i", len(body)) + body + b"\x00")
        assert client.closed_by_peer()
    still_serving(broker)


def test_unknown_api_versions_version_gets_v0_body_with_unsupported_version(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as client:
        # A future client asks with v9 (header v2); the answer is a v0 body, header v0.
        frame = client.encode(API_VERSIONS, 4, SOFTWARE, correlation_id=5)
        frame = frame[:6] + struct.pack(">h", 9) + frame[8:]
        client.send_raw(frame)
        client.pending.append((5, API_VERSIONS, 0))
        _, answer = client.receive()
        assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION
        keys = [k.api_key for k in answer.api_keys]
        assert keys == sorted(keys) and API_VERSIONS.key in keys


def corrupt(data: bytes, offset: int, value: bytes, fix_crc: bool = True) -> bytes:
    out = bytearray(data)
    out[offset : offset + len(value)] = value
    if fix_crc:
        write_crc(out)
    return bytes(out)


GOOD = batch(producer_id=-1, epoch=-1, base_sequence=-1, count=3)

BAD_BATCHES = {
    "bad_crc": (corrupt(GOOD, 17, b"\x00\x00\x00\x01", fix_crc=False), ErrorCode.CORRUPT_MESSAGE),
    "base_offset_not_zero": (corrupt(GOOD, 0, struct.pack(">q", 5)), ErrorCode.INVALID_RECORD),
    "records_count_mismatch": (corrupt(GOOD, 57, struct.pack(">i", 7)), ErrorCode.INVALID_RECORD),
    "last_offset_delta_mismatch": (
        corrupt(GOOD, 23, struct.pack(">i", 0)),
        ErrorCode.INVALID_RECORD,
    ),
    "control_batch": (corrupt(GOOD, 21, struct.pack(">h", 0x20)), ErrorCode.INVALID_RECORD),
    # A self-consistent batch shorter than the 61-byte header: Kafka's ensureValid says corrupt.
    "shorter_than_header": (
        struct.pack(">qi", 0, 40) + GOOD[12:52],
        ErrorCode.CORRUPT_MESSAGE,
    ),
    # A batch cut short: Kafka's batch iterator finds no whole batch, so "not exactly one
    # record batch" -> INVALID_RECORD.
    "truncated": (GOOD[:40], ErrorCode.INVALID_RECORD),
}


@pytest.mark.parametrize("case", sorted(BAD_BATCHES))
def test_bad_batch_is_refused_and_nothing_stored(shared_broker: BrokerProcess, case: str) -> None:
    data, expected = BAD_BATCHES[case]
    topic = f"bad-{case}".replace("_", "-")
    with RawClient(shared_broker.port) as client:
        create_topic(client, topic)
        answer = produce(client, topic, data)
        assert answer.error_code == expected
        assert answer.base_offset == -1
        # The same connection keeps working: a good batch is accepted at offset 0.
        assert produce(client, topic, GOOD).base_offset == 0
    assert [h.base_offset for h, _ in stored(shared_broker.data_dir, topic)] == [0]


def test_acks_2_is_invalid_required_acks(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create_topic(client, "acks2")
        answer = produce(client, "acks2", GOOD, acks=2)
        assert answer.error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert stored(shared_broker.data_dir, "acks2") == []


def test_produce_v2_is_advertised_but_closes_the_connection(shared_broker: BrokerProcess) -> None:
    # Kafka 4.0.0 (kafka-oracle/raw_produce_old_versions): no answer, connection closed.
    with RawClient(shared_broker.port) as client:
        create_topic(client, "oldproduce")
        client.send(PRODUCE, 2, produce_request("oldproduce", GOOD), expect_response=False)
        assert client.closed_by_peer()
    assert stored(shared_broker.data_dir, "oldproduce") == []


def test_zstd_needs_produce_v7(shared_broker: BrokerProcess) -> None:
    zstd = batch(producer_id=-1, epoch=-1, base_sequence=-1, count=3, codec=4)
    with RawClient(shared_broker.port) as client:
        create_topic(client, "zstd-old")
        assert produce(client, "zstd-old", zstd, version=6).error_code == (
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        )
        assert produce(client, "zstd-old", zstd, version=7).error_code == 0
    assert len(stored(shared_broker.data_dir, "zstd-old")) == 1


def test_acks_0_failure_closes_connection(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        client.send(
            PRODUCE, 9, produce_request("no-such-topic", GOOD, acks=0), expect_response=False
        )
        assert client.closed_by_peer()
