"""Stock clients against a real broker process: produce, check what is STORED, consume back.

kafka-python, confluent-kafka (librdkafka) and aiokafka each run an idempotent producer
(acks=all) with every codec: 10,000 keyed records over 3 partitions, sent to explicit
partitions, with 0-2 headers each (empty and null values, repeated keys, UTF-8 keys), some
null values, and explicit, non-monotonic CreateTime timestamps.

The produce test reads the segment files, so it holds whatever the clients believed: every
record stored exactly once, in per-partition send order, with the key, value, headers and
timestamp that were sent; offsets and sequences contiguous from 0; one producer id with epoch
0; the requested codec.

The round-trip test then reads the same topic with the same client library (assign + seek to
offset 0: Fetch only, no group, no commits) and must get every record exactly once, in order,
offsets contiguous from 0, with the key, value, headers and timestamp that were sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from protocol.messages.api_versions import API_VERSIONS
from protocol.records import CODEC_NAMES, crc_ok, decode_records
from tests.support.broker_process import BrokerProcess
from tests.support.produce import create_topic, stored
from tests.support.raw_client import SOFTWARE, RawClient
from tests.support.real_clients import (
    CONSUMERS,
    CREATE_TIME,
    KAFKA_PYTHON_SCHEMA_READS,
    NULL_HEADER_VALUES,
    PRODUCERS,
    Got,
    Headers,
    Sent,
    make_records,
)

N_RECORDS = 10_000
PARTITIONS = 3
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {name: codec for codec, name in CODEC_NAMES.items()}
FIND_COORDINATOR = 10
CONSUME_DEADLINE_S = 30.0

# kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text, deprecated
# since Python 3.11; pytest runs with warnings as errors.
pytestmark = KAFKA_PYTHON_SCHEMA_READS

# What a record looks like once the offset is set aside: compared field by field.
Content = tuple[bytes | None, bytes | None, Headers, int]


def content(r: Sent) -> Content:
    return (r.key, r.value, r.headers, r.timestamp)


def sent_to(records: Sequence[Sent], partition: int) -> list[Sent]:
    """The records sent to ``partition``, in send order."""
    return [r for r in records if r.partition == partition]


def first_difference(got: Sequence[object], want: Sequence[object]) -> str:
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            return f"at position {i}: got {g!r}, sent {w!r}"
    return f"got {len(got)} records, sent {len(want)}"


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the module; auto-created topics get 3 partitions."""
    proc = BrokerProcess(
        tmp_path_factory.mktemp("clients") / "data", {"num.partitions": str(PARTITIONS)}
    ).start()
    try:
        yield proc
    finally:
        proc.stop()


@dataclass(frozen=True)
class Produced:
    topic: str
    records: list[Sent]
    error: BaseException | None = None


@pytest.fixture(scope="module")
def produced(broker3: BrokerProcess) -> Callable[[str, str], Produced]:
    """Produce once per (client, codec) and share the topic between the tests that need it.

    The round-trip test reads the topic the produce test wrote, without producing twice; run
    alone (``-k``), it produces first. A failed produce is remembered, so a later test fails
    with that cause instead of appending a second copy of the records.
    """
    # An hour in the past: see record_timestamp.
    base_ms = int(time.time() * 1000) - 3_600_000
    cache: dict[tuple[str, str], Produced] = {}

    def get(client: str, codec: str) -> Produced:
        done = cache.get((client, codec))
        if done is None:
            topic = f"produce-{client}-{codec}"
            records = make_records(
                N_RECORDS, PARTITIONS, base_ms, null_header_values=NULL_HEADER_VALUES[client]
            )
            create(broker3, topic)
            try:
                PRODUCERS[client](broker3.bootstrap, topic, codec, records)
            except BaseException as exc:
                cache[(client, codec)] = Produced(topic, records, exc)
                raise
            done = cache[(client, codec)] = Produced(topic, records)
        if done.error is not None:
            pytest.fail(f"producing to {done.topic} failed: {done.error!r}")
        return done

    return get


def create(broker: BrokerProcess, topic: str) -> None:
    with RawClient(broker.port) as client:
        meta = create_topic(client, topic)
    assert len(meta.topics[0].partitions) == PARTITIONS


def advertised_keys(broker: BrokerProcess) -> set[int]:
    with RawClient(broker.port) as client:
        answer = client.request(API_VERSIONS, 3, SOFTWARE)
    return {k.api_key for k in answer.api_keys}


def expected_codec(broker: BrokerProcess, client: str, codec: str) -> str:
    # librdkafka enables LZ4 only when the broker advertises FindCoordinator (its proxy for
    # "Kafka >= 0.8.2", rdkafka_feature.c); without it, it sends lz4 batches uncompressed.
    lz4_disabled = client == "confluent-kafka" and codec == "lz4"
    if lz4_disabled and FIND_COORDINATOR not in advertised_keys(broker):
        return "none"
    return codec


# --- checks ----------------------------------------------------------------------------------


def check_stored(
    data_dir: Path, topic: str, records: Sequence[Sent], codec: str, *, librdkafka: bool
) -> None:
    """Every record once, as sent, in send order per partition; contiguous offsets/sequences."""
    producer_ids: set[int] = set()
    codecs: list[int] = []
    for partition in range(PARTITIONS):
        next_offset = 0
        next_sequence = 0
        contents: list[Content] = []
        for header, data in stored(data_dir, topic, partition):
            where = f"{topic}-{partition} batch at {header.base_offset}"
            assert header.base_offset == next_offset, where
            assert crc_ok(data, header), where
            assert header.magic == 2, where
            assert header.producer_id >= 0 and header.producer_epoch == 0, (where, header)
            assert header.base_sequence == next_sequence, (where, header)
            assert not header.is_transactional and not header.is_control, where
            # A CreateTime topic keeps the client's timestamps: only LogAppendTime topics get
            # max_timestamp rewritten by the broker.
            assert not header.log_append_time, where
            batch = decode_records(data, header)
            assert [r.offset_delta for r in batch] == list(range(header.records_count)), where
            timestamps = [header.base_timestamp + r.timestamp_delta for r in batch]
            assert header.max_timestamp == max(timestamps), where
            contents += [
                (r.key, r.value, tuple(r.headers), ts)
                for r, ts in zip(batch, timestamps, strict=True)
            ]
            producer_ids.add(header.producer_id)
            codecs.append(header.compression)
            next_offset = header.next_offset
            next_sequence = header.last_sequence + 1
        want = [content(r) for r in sent_to(records, partition)]
        assert contents == want, f"{topic}-{partition} stored " + first_difference(contents, want)
    assert len(producer_ids) == 1, producer_ids
    wanted = CODEC_IDS[codec]
    if librdkafka:
        # librdkafka falls back to an uncompressed batch when compression would not shrink
        # it; with these payloads that should be rare, never the rule.
        assert set(codecs) <= {wanted, 0}, codecs
        assert codecs.count(wanted) * 2 > len(codecs), codecs
    else:
        assert set(codecs) == {wanted}, codecs


def check_consumed(topic: str, got: Sequence[Got], records: Sequence[Sent]) -> None:
    """Per partition: offsets 0, 1, 2, ... each exactly once, carrying what was sent there."""
    for partition in range(PARTITIONS):
        where = f"{topic}-{partition}"
        read = [g for g in got if g.partition == partition]
        want = sent_to(records, partition)
        offsets = [g.offset for g in read]
        assert offsets == list(range(len(want))), f"{where} offsets read: " + first_difference(
            offsets, list(range(len(want)))
        )
        assert {g.timestamp_type for g in read} == {CREATE_TIME}, where
        contents = [(g.key, g.value, g.headers, g.timestamp) for g in read]
        wanted = [content(r) for r in want]
        assert contents == wanted, f"{where} read " + first_difference(contents, wanted)
    assert len(got) == len(records)


# --- tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", list(PRODUCERS))
def test_idempotent_producer_stores_every_record_once_in_order(
    broker3: BrokerProcess, produced: Callable[[str, str], Produced], client: str, codec: str
) -> None:
    done = produced(client, codec)
    check_stored(
        broker3.data_dir,
        done.topic,
        done.records,
        expected_codec(broker3, client, codec),
        librdkafka=client == "confluent-kafka",
    )


# zstd among them: Fetch must hand zstd batches only to clients fetching with v10+, and all
# three fetch with v11 or later.
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", list(CONSUMERS))
def test_consumer_reads_back_every_record_once_in_order_as_sent(
    broker3: BrokerProcess, produced: Callable[[str, str], Produced], client: str, codec: str
) -> None:
    done = produced(client, codec)
    got = CONSUMERS[client](
        broker3.bootstrap, done.topic, PARTITIONS, N_RECORDS, CONSUME_DEADLINE_S
    )
    check_consumed(done.topic, got, done.records)
