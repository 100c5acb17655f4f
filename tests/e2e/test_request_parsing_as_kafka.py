"""Requests are parsed exactly as leniently as Kafka parses them, and no more.

Kafka's AbstractRequest.parseRequest reads the fields it knows and never checks that the
body was consumed; librdkafka (confluent-kafka 2.16) depends on that: its all-topics
Metadata v13 carries 3 bytes after the body. Truncated or undecodable fields still close
the connection, as in Kafka.
"""

from __future__ import annotations

import struct

import pytest

from protocol.errors import ErrorCode
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.metadata import METADATA
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import create_topic
from tests.support.raw_client import SOFTWARE, RawClient


def _with_tail(frame: bytes, tail: bytes) -> bytes:
    body = frame[4:] + tail
    return struct.pack(">i", len(body)) + body


def test_trailing_bytes_after_metadata_body_are_ignored(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create_topic(client, "lenient-t")
        # librdkafka's all-topics Metadata v13: topics null, then 3 more bytes.
        frame = client.encode(
            METADATA, 13, Message(topics=None, allow_auto_topic_creation=True), correlation_id=41
        )
        client.send_raw(_with_tail(frame, b"\x00\x00\x00"))
        client.pending.append((41, METADATA, 13))
        correlation_id, answer = client.receive()
        assert correlation_id == 41
        assert answer.error_code == 0
        listed = {t.name: len(t.partitions) for t in answer.topics}
        assert listed["lenient-t"] == 1
        # The connection is still open and in order.
        assert client.request(API_VERSIONS, 3, SOFTWARE).error_code == 0
    assert "closing connection" not in shared_broker.log_text()


@pytest.mark.parametrize("tail", [b"\x00", b"\xff" * 64], ids=["one-byte", "64-bytes"])
def test_trailing_bytes_after_api_versions_body_are_ignored(
    shared_broker: BrokerProcess, tail: bytes
) -> None:
    with RawClient(shared_broker.port) as client:
        frame = client.encode(API_VERSIONS, 3, SOFTWARE, correlation_id=9)
        client.send_raw(_with_tail(frame, tail))
        client.pending.append((9, API_VERSIONS, 3))
        _, answer = client.receive()
        assert answer.error_code == 0 and answer.api_keys


def test_truncated_body_still_closes_the_connection(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        frame = client.encode(METADATA, 12, Message(topics=[Message(name="x")]), correlation_id=3)
        cut = frame[4:-3]
        client.send_raw(struct.pack(">i", len(cut)) + cut)
        assert client.closed_by_peer()


def test_unknown_api_versions_version_lists_only_api_versions(
    shared_broker: BrokerProcess,
) -> None:
    # Recorded from Kafka 4.0.0 (kafka-oracle/raw_api_versions_unsupported #4): a v0 body,
    # UNSUPPORTED_VERSION and one entry, ApiVersions 0-4.
    with RawClient(shared_broker.port) as client:
        frame = client.encode(API_VERSIONS, 3, SOFTWARE, correlation_id=4)
        frame = frame[:6] + struct.pack(">h", 5) + frame[8:]
        client.send_raw(frame)
        assert client.read_frame() == bytes.fromhex("00000004002300000001001200000004")


def test_unknown_api_versions_version_without_header_tags_closes(
    shared_broker: BrokerProcess,
) -> None:
    # raw_api_versions_unsupported #6: v5 with a v1 header (no tag buffer) and no body.
    with RawClient(shared_broker.port) as client:
        body = struct.pack(">hhih", API_VERSIONS.key, 5, 1, 3) + b"raw"
        client.send_raw(struct.pack(">i", len(body)) + body)
        assert client.closed_by_peer()


@pytest.mark.parametrize(
    ("name", "version"),
    [("bad name!", "1.0"), ("ok", "1.0 beta"), ("", "1.0"), ("ok", ""), ("-x", "1"), ("x.", "1")],
)
def test_api_versions_v3_refuses_invalid_client_software(
    shared_broker: BrokerProcess, name: str, version: str
) -> None:
    # KIP-511, ApiVersionsRequest.isValid; recorded: kafka-oracle/raw_api_versions_client_software.
    with RawClient(shared_broker.port) as client:
        client.send(
            API_VERSIONS,
            3,
            Message(client_software_name=name, client_software_version=version),
        )
        frame = client.read_frame()
    assert frame[4:] == bytes.fromhex("002a010000000000")


@pytest.mark.parametrize(
    ("name", "version"), [("ok-client", "2.0.1-SNAPSHOT"), ("a", "1"), ("librdkafka", "2.16.0")]
)
def test_api_versions_v3_accepts_valid_client_software(
    shared_broker: BrokerProcess, name: str, version: str
) -> None:
    with RawClient(shared_broker.port) as client:
        answer = client.request(
            API_VERSIONS, 3, Message(client_software_name=name, client_software_version=version)
        )
    assert answer.error_code == ErrorCode.NONE and answer.api_keys


def test_null_client_id_is_served(shared_broker: BrokerProcess) -> None:
    # raw_api_versions_client_software #5: a null client id in the header is fine.
    with RawClient(shared_broker.port) as client:
        raw = bytes.fromhex("0012000300000001ffff00036f6b04312e3000")
        client.send_raw(struct.pack(">i", len(raw)) + raw)
        client.pending.append((1, API_VERSIONS, 3))
        _, answer = client.receive()
    assert answer.error_code == 0
