"""Request frames captured from real clients decode, and re-encode to the same bytes.

The frames under tests/data/golden/<client>/ were recorded on the wire by
``python -m tests.support.golden`` (a proxy in front of the broker); manifest.json names
the client libraries and, for Produce, the codec the producer was asked to use. A byte-exact
round trip proves our message descriptions match what each client really sends at the
version it picked: every field, its order, nullability and flexible encoding.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol import codec
from protocol.api_keys import ALL_APIS
from protocol.header import decode_request_header, encode_request_header, peek_header
from protocol.primitives import Reader
from protocol.records import CODEC_NAMES, crc_ok, decode_records, iter_batches
from protocol.schema import Message

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "golden"
MANIFEST: dict[str, Any] = json.loads((GOLDEN / "manifest.json").read_text())
CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka")
PRODUCE = 0
# What the broker minimally needs to serve an idempotent producer.
PRODUCER_APIS = {"ApiVersions", "Metadata", "InitProducerId", "Produce"}
FRAMES = sorted(GOLDEN.glob("*/*.bin"))


def frame_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def manifest_entry(path: Path) -> dict[str, Any]:
    entry: dict[str, Any] = MANIFEST["frames"][path.parent.name][path.name]
    return entry


def decode_frame(frame: bytes) -> tuple[Any, Message, int]:
    """(header, body, header version) of one request frame, reading it to the last byte."""
    api_key, version, _ = peek_header(frame)
    api = ALL_APIS[api_key]
    header_version = api.request_header_version(version)
    reader = Reader(frame)
    header = decode_request_header(reader, header_version)
    body = codec.decode(api.request, version, api.is_flexible(version), reader)
    return header, body, header_version


def test_every_client_has_golden_frames_for_an_idempotent_producer() -> None:
    for client in CLIENTS:
        apis = {entry["api"] for entry in MANIFEST["frames"][client].values()}
        assert apis >= PRODUCER_APIS, (client, apis)
        codecs = {e.get("codec") for e in MANIFEST["frames"][client].values()} - {None}
        assert codecs == set(CODEC_NAMES.values()), (client, codecs)
    listed = {f"{c}/{name}" for c, frames in MANIFEST["frames"].items() for name in frames}
    assert listed == {frame_id(p) for p in FRAMES}


@pytest.mark.parametrize("path", FRAMES, ids=frame_id)
def test_golden_frame_reencodes_to_identical_bytes(path: Path) -> None:
    frame = path.read_bytes()
    header, body, header_version = decode_frame(frame)
    entry = manifest_entry(path)
    api = ALL_APIS[header.api_key]
    assert (api.name, header.api_version) == (entry["api"], entry["version"])
    out = bytearray()
    encode_request_header(out, header, header_version)
    out += codec.encode_request(api, header.api_version, body)
    assert bytes(out) == frame


@pytest.mark.parametrize("path", [p for p in FRAMES if p.name.startswith("produce_")], ids=frame_id)
def test_golden_produce_frame_carries_idempotent_batches(path: Path) -> None:
    header, body, _ = decode_frame(path.read_bytes())
    assert header.api_key == PRODUCE
    assert body.acks == -1  # idempotence requires acks=all
    requested = manifest_entry(path)["codec"]
    batches = 0
    for topic in body.topic_data:
        for partition in topic.partition_data:
            data = bytes(partition.records)
            positions = list(iter_batches(data))
            # Produce v3+ carries exactly one batch per partition, and nothing after it.
            assert len(positions) == 1
            pos, batch = positions[0]
            assert pos == 0 and batch.size == len(data)
            assert batch.magic == 2
            assert crc_ok(data, batch)
            assert batch.base_offset == 0
            assert batch.producer_id >= 0 and batch.producer_epoch == 0
            assert batch.base_sequence >= 0
            records = decode_records(data, batch)
            assert len(records) == batch.records_count == batch.last_offset_delta + 1
            assert all(r.key is not None and r.value for r in records)
            codec_used = CODEC_NAMES[batch.compression]
            if (path.parent.name, requested) == ("confluent-kafka", "lz4"):
                # librdkafka enables LZ4 only when the broker advertises FindCoordinator
                # (its marker for Kafka >= 0.8.2); until then it sends these uncompressed.
                assert codec_used in ("lz4", "none")
            else:
                assert codec_used == requested
            batches += 1
    assert batches >= 1
