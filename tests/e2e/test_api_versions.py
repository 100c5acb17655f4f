"""ApiVersions as Kafka 4.0 sends it (KAFKA_NOTES §1), and InitProducerId."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.primitives import Reader
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import init_producer
from tests.support.raw_client import SOFTWARE, RawClient

EXPECTED = {
    0: (0, 12),
    1: (4, 17),
    2: (1, 10),
    3: (0, 13),
    8: (2, 9),
    9: (1, 9),
    10: (0, 6),
    11: (2, 9),
    12: (0, 4),
    13: (0, 5),
    14: (0, 5),
    15: (0, 6),
    16: (0, 5),
    18: (0, 4),
    19: (2, 7),
    20: (1, 6),
    21: (0, 2),
    22: (0, 5),
    23: (2, 4),
    24: (0, 5),
    25: (0, 4),
    26: (0, 4),
    28: (0, 4),
    32: (1, 4),
    33: (0, 2),
    34: (1, 2),
    35: (1, 4),
    37: (0, 3),
    42: (0, 2),
    43: (0, 2),
    44: (0, 1),
    45: (0, 0),
    46: (0, 0),
    47: (0, 0),
    48: (0, 1),
    49: (0, 1),
    50: (0, 0),
    51: (0, 0),
    55: (0, 2),
    60: (0, 2),
    61: (0, 0),
    68: (0, 1),  # KIP-848 consumer groups (issue 18)
    69: (0, 1),
    75: (0, 0),
}


@pytest.mark.parametrize("version", range(5))
def test_api_versions_lists_served_ranges_in_key_order(
    shared_broker: BrokerProcess, version: int
) -> None:
    with RawClient(shared_broker.port) as client:
        answer = client.request(API_VERSIONS, version, SOFTWARE)
    assert answer.error_code == 0
    got = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert got == EXPECTED
    assert [k.api_key for k in answer.api_keys] == sorted(got)


def test_api_versions_v3_tagged_section_matches_kafka(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        client.send(API_VERSIONS, 3, SOFTWARE)
        frame = client.read_frame()
    # Response header v0: correlation id only, even though v3 is flexible.
    reader = Reader(frame, 4)
    assert reader.int16() == 0
    count = reader.uvarint() - 1
    for _ in range(count):
        reader.int16(), reader.int16(), reader.int16()
        assert reader.uvarint() == 0  # no tagged fields per entry
    assert reader.int32() == 0  # throttle_time_ms
    tags = []
    for _ in range(reader.uvarint()):
        tag = reader.uvarint()
        reader.skip(reader.uvarint())
        tags.append(tag)
    # supported_features, finalized_features_epoch, finalized_features; no zk_migration_ready.
    assert tags == [0, 1, 2]
    assert reader.remaining == 0
    with RawClient(shared_broker.port) as client:
        answer = client.request(API_VERSIONS, 3, SOFTWARE)
    assert [(f.name, f.min_version, f.max_version) for f in answer.supported_features] == [
        ("metadata.version", 7, 25)
    ]
    assert [f.name for f in answer.finalized_features] == ["group.version", "metadata.version"]
    assert answer.finalized_features_epoch >= 0
    # group.version 0-1 (KIP-848) is listed as supported from v4 only, as Kafka 4.0.0 does.
    with RawClient(shared_broker.port) as client:
        answer = client.request(API_VERSIONS, 4, SOFTWARE)
    assert [(f.name, f.min_version, f.max_version) for f in answer.supported_features] == [
        ("group.version", 0, 1),
        ("metadata.version", 7, 25),
    ]
    assert {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}.get(68) == (0, 1)
    assert {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}.get(69) == (0, 1)


def test_init_producer_id_never_reuses_ids_across_restarts(tmp_path: Path) -> None:
    seen: list[int] = []
    for _ in range(2):
        broker = BrokerProcess(tmp_path / "d").start()
        try:
            with RawClient(broker.port) as client:
                for version in range(6):
                    answer = client.request(
                        INIT_PRODUCER_ID,
                        version,
                        Message(transactional_id=None, transaction_timeout_ms=1000),
                    )
                    assert (answer.error_code, answer.producer_epoch) == (0, 0)
                    seen.append(answer.producer_id)
        finally:
            broker.stop()
    assert len(set(seen)) == len(seen) == 12
    # A SIGKILLed broker does not hand out an id twice either.
    broker = BrokerProcess(tmp_path / "d").start()
    with RawClient(broker.port) as client:
        seen.append(init_producer(client))
    broker.kill()
    broker = BrokerProcess(tmp_path / "d").start()
    try:
        with RawClient(broker.port) as client:
            seen.append(init_producer(client))
    finally:
        broker.stop()
    assert len(set(seen)) == len(seen)
