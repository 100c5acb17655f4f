"""Which requests leave the event loop for a worker thread (issue 19, after issue 13).

A thread hop costs more than decoding and validating an ordinary Produce request (one
partition, 64 x 1 KiB records), so those stay on the loop; what can hold the loop for
long (many array elements, many records, many headers, compressed data) still goes to a
worker. The e2e tests in test_heavy_requests.py check the worker path end to end.
"""

from __future__ import annotations

import random
import time

import pytest

from bench.stall import describe_configs_frame
from broker.core.dispatch import decode_on_loop
from broker.handlers.produce import _check_on_loop, _for_worker_process, _heavy
from broker.produce.validation_pool import ValidationPool
from protocol import codec, uniform_records
from protocol.compression import GZIP
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.messages.produce import PRODUCE
from protocol.primitives import DecodeError, Reader
from protocol.records import Record, build_batch
from storage.batch_checks import BatchJob
from storage.record_rules import TopicRules
from tests.support.produce import produce_request

POOL = ValidationPool(0)  # none: only its count of records walked in the broker
RULES = TopicRules(
    topic_partition="t-0",
    compact=False,
    log_append_time=False,
    timestamp_before_max_ms=2**62,
    timestamp_after_max_ms=2**62,
)


def _work(records: bytes) -> BatchJob:
    now_ms = int(time.time() * 1000)
    return BatchJob(records, 1_048_588, True, "records", RULES, now_ms)


def _idempotent(
    records: list[Record] | list[tuple[bytes | None, bytes | None]], **kw: int
) -> bytes:
    return build_batch(records, producer_id=7, producer_epoch=0, base_sequence=0, **kw)


def test_a_produce_of_64_one_kib_records_is_validated_on_the_loop() -> None:
    jobs = [_work(_idempotent([(None, b"x" * 1024)] * 64))]
    assert not _heavy(jobs)
    before = POOL.walked_here
    entries = _check_on_loop(POOL, jobs)
    assert entries is not None and entries[0].checked.ok and entries[0].batch is not None
    assert POOL.walked_here - before == 64


def test_a_batch_of_thousands_of_tiny_records_of_varied_shapes_is_validated_on_a_worker() -> None:
    # About 10 KiB, but a Python step per record: thousands of them hold the loop for ms.
    records = [(None, b"x" * (i % 7)) for i in range(2000)]
    jobs = [_work(_idempotent(records))]
    assert not _heavy(jobs)  # the header cannot tell; the walk's budget stops it
    assert _check_on_loop(POOL, jobs) is None
    assert _check_on_loop(POOL, jobs) is None


def test_thousands_of_tiny_records_of_one_shape_are_validated_on_the_loop() -> None:
    # Read by a compiled pattern (protocol.uniform_records) once the shape is known: the
    # first batch of a shape still goes to a worker.
    uniform_records._patterns.clear()
    uniform_records._last_shape[0] = None
    jobs = [_work(_idempotent([(None, b"x")] * 2000))]
    assert not _heavy(jobs)
    assert _check_on_loop(POOL, jobs) is None
    entries = _check_on_loop(POOL, jobs)
    assert entries is not None and entries[0].checked.ok and entries[0].batch is not None
    assert entries[0].checked.scan is not None and entries[0].checked.scan.uniform


def test_a_batch_of_more_records_than_the_pattern_may_read_on_the_loop_goes_to_a_worker() -> None:
    assert _heavy([_work(_idempotent([(None, b"x")] * 5000))])


def test_a_compressed_batch_is_validated_on_a_worker() -> None:
    payload = random.Random(19).randbytes(1024)  # incompressible: the batch stays > 1 KiB
    assert _heavy([_work(_idempotent([(None, payload)] * 4, codec=GZIP))])


def test_requests_of_a_mebibyte_or_more_are_validated_on_a_worker() -> None:
    # CRC and copies of the bytes cost time per byte, even with few records.
    assert _heavy([_work(_idempotent([(None, b"x" * (1 << 20))]))])


def test_a_batch_whose_records_carry_many_headers_falls_back_to_a_worker() -> None:
    headers = tuple((f"h{i}", b"") for i in range(5000))
    jobs = [_work(_idempotent([Record(0, 0, None, b"v", headers)]))]
    assert not _heavy(jobs)  # one record: only the walk itself finds the headers
    assert _check_on_loop(POOL, jobs) is None


def _frame_body(frame: bytes) -> memoryview:
    return memoryview(frame)[4:]


def test_a_large_produce_request_of_one_partition_decodes_on_the_loop() -> None:
    data = _idempotent([(None, b"x" * 1024)] * 64)
    body = codec.encode_request(PRODUCE, 9, produce_request("t", data))
    decoded = decode_on_loop(PRODUCE, 9, True, memoryview(bytes(body)))
    assert decoded is not None
    request, reader = decoded
    assert reader.remaining == 0
    assert bytes(request.topic_data[0].partition_data[0].records) == data


def test_a_large_request_of_many_elements_is_left_for_a_worker() -> None:
    frame = describe_configs_frame(20_000)
    # Skip the request header (v2): api key, version, correlation id, client id, no tags.
    body = _frame_body(frame)[2 + 2 + 4 + 2 + 5 + 1 :]
    assert decode_on_loop(DESCRIBE_CONFIGS, 4, True, body) is None


def test_unknown_tagged_fields_count_against_the_element_budget() -> None:
    # An ApiVersions v3 body: two empty compact strings, then 50 unknown empty tags.
    tags = b"".join(bytes([tag, 0]) for tag in range(10, 60))
    body = b"\x01\x01" + bytes([50]) + tags

    codec.decode(API_VERSIONS.request, 3, True, Reader(body, max_elements=50))
    with pytest.raises(DecodeError, match="array elements"):
        codec.decode(API_VERSIONS.request, 3, True, Reader(body, max_elements=49))


def test_a_produce_of_64_records_stays_in_the_broker_process_by_default() -> None:
    # Measured (issue 19, bench/results/ingest-workers.md): below a few hundred records the
    # trip to a worker process costs the loop about as much as the walk it saves.
    jobs = [_work(_idempotent([(None, b"x" * 1024)] * 64))]
    assert not _for_worker_process(jobs, 256)
    assert _for_worker_process([_work(_idempotent([(None, b"x")] * 256))], 256)


def test_compressed_and_mebibyte_requests_always_go_to_a_worker_process() -> None:
    payload = random.Random(19).randbytes(1024)
    assert _for_worker_process([_work(_idempotent([(None, payload)] * 2, codec=GZIP))], 10**6)
    assert _for_worker_process([_work(_idempotent([(None, b"x" * (1 << 20))]))], 10**6)
