"""Fetch: long-poll wake-up, max_bytes rules, offsets out of range, unknown topics."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.fetch import FETCH
from protocol.records import build_batch, iter_batches
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_topic, fetch_request, produce, stored
from tests.support.raw_client import RawClient


def only_partition(answer: Message) -> Message:
    part: Message = answer.responses[0].partitions[0]
    return part


@pytest.fixture
def filled(shared_broker: BrokerProcess) -> Iterator[str]:
    """A topic holding three batches of 3 records (offsets 0-8)."""
    name = f"fetch-{time.monotonic_ns()}"
    with RawClient(shared_broker.port) as client:
        create_topic(client, name)
        for _ in range(3):
            assert produce(client, name, batch(-1, -1, -1, count=3)).error_code == 0
    yield name


@pytest.mark.parametrize("version", [4, 7, 11, 12])
def test_fetch_returns_stored_bytes_unchanged(
    shared_broker: BrokerProcess, filled: str, version: int
) -> None:
    with RawClient(shared_broker.port) as client:
        part = only_partition(client.request(FETCH, version, fetch_request(filled, 3)))
    assert part.error_code == 0
    assert (part.high_watermark, part.last_stable_offset) == (9, 9)
    assert part.log_start_offset == (0 if version >= 5 else -1)  # a v5+ field
    on_disk = b"".join(raw for _, raw in stored(shared_broker.data_dir, filled))
    # Offset 3 is the start of the second batch: the answer is the disk bytes from there.
    assert bytes(part.records) == on_disk[len(on_disk) // 3 :]


def test_v13_plus_uses_topic_ids(shared_broker: BrokerProcess, filled: str) -> None:
    with RawClient(shared_broker.port) as client:
        meta = create_topic(client, filled)
        topic_id = meta.topics[0].topic_id
        answer = client.request(FETCH, 17, fetch_request("", 0, topic_id=topic_id))
        assert only_partition(answer).error_code == 0
        assert answer.responses[0].topic_id == topic_id
        unknown = client.request(FETCH, 17, fetch_request("", 0, topic_id=b"\x01" * 16))
        assert only_partition(unknown).error_code == ErrorCode.UNKNOWN_TOPIC_ID
        # The connection keeps working after an error.
        assert (
            only_partition(
                client.request(FETCH, 17, fetch_request("", 0, topic_id=topic_id))
            ).error_code
            == 0
        )


def test_first_batch_is_returned_whole_even_above_max_bytes(
    shared_broker: BrokerProcess, filled: str
) -> None:
    with RawClient(shared_broker.port) as client:
        part = only_partition(
            client.request(
                FETCH, 12, fetch_request(filled, 0, max_bytes=10, partition_max_bytes=10)
            )
        )
    batches = list(iter_batches(bytes(part.records)))
    assert [h.base_offset for _, h in batches] == [0]


def test_bad_offsets_and_sizes_get_error_codes_and_connection_survives(
    shared_broker: BrokerProcess, filled: str
) -> None:
    with RawClient(shared_broker.port) as client:
        beyond = only_partition(client.request(FETCH, 12, fetch_request(filled, 10)))
        assert beyond.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        below = only_partition(client.request(FETCH, 12, fetch_request(filled, -5)))
        assert below.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        negative = only_partition(
            client.request(FETCH, 12, fetch_request(filled, 0, partition_max_bytes=-1))
        )
        assert negative.error_code == ErrorCode.INVALID_FETCH_SIZE
        unknown = only_partition(client.request(FETCH, 12, fetch_request("no-such-topic", 0)))
        assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # At the log end: no error, no data, immediately (min_bytes 0).
        at_end = only_partition(client.request(FETCH, 12, fetch_request(filled, 9, min_bytes=0)))
        assert (at_end.error_code, bytes(at_end.records)) == (0, b"")
        assert only_partition(client.request(FETCH, 12, fetch_request(filled, 0))).error_code == 0


def test_long_poll_wakes_at_once_on_produce_and_other_connections_are_served(
    shared_broker: BrokerProcess,
) -> None:
    name = f"poll-{time.monotonic_ns()}"
    with RawClient(shared_broker.port) as waiter, RawClient(shared_broker.port) as other:
        create_topic(waiter, name)
        # max_wait far beyond the client's 10 s socket timeout: an answer at all is a wake-up.
        waiter.send(FETCH, 12, fetch_request(name, 0, max_wait_ms=300_000))
        answered: list[Message] = []

        def wait_for_answer() -> None:
            answered.append(waiter.receive()[1])

        reader = threading.Thread(target=wait_for_answer)
        reader.start()
        # While the first connection waits, a second one is served (Metadata + Produce).
        create_topic(other, name)
        assert not answered
        assert produce(other, name, batch(-1, -1, -1, count=1)).error_code == 0
        reader.join(10)
        assert answered, "the produce did not wake the long poll"
        assert only_partition(answered[0]).high_watermark == 1


def test_long_poll_min_bytes_accumulates_over_partitions_woken_one_at_a_time(
    tmp_path: Path,
) -> None:
    """Parked per partition, a fetch still counts the bytes of ALL its partitions against
    min_bytes (DelayedFetch.tryComplete): the first append is not enough, the second is."""
    broker = BrokerProcess(tmp_path / "data", {"num.partitions": "2"}).start()
    try:
        with RawClient(broker.port) as waiter, RawClient(broker.port) as other:
            create_topic(other, "acc")
            first, second = build_batch([(None, b"a" * 100)]), build_batch([(None, b"b" * 100)])
            # max_wait far beyond the 10 s allowed for the answer: it comes from the append.
            request = fetch_request("acc", 0, max_wait_ms=300_000, min_bytes=len(first) + 1)
            request.topics[0].partitions.append(
                Message(partition=1, fetch_offset=0, partition_max_bytes=1_000_000)
            )
            waiter.send(FETCH, 12, request)
            assert produce(other, "acc", first, partition=0).error_code == 0
            # The waiter's connection is still parked: nothing to read yet.
            waiter.sock.settimeout(0.3)
            with pytest.raises(TimeoutError):
                waiter.sock.recv(1, socket.MSG_PEEK)
            assert produce(other, "acc", second, partition=1).error_code == 0
            waiter.sock.settimeout(10)
            answer = waiter.receive()[1]
        got = {p.partition_index: bytes(p.records) for p in answer.responses[0].partitions}
        assert got == {
            0: stored(broker.data_dir, "acc", 0)[0][1],
            1: stored(broker.data_dir, "acc", 1)[0][1],
        }
    finally:
        broker.stop()


def test_long_poll_returns_empty_after_max_wait(shared_broker: BrokerProcess) -> None:
    name = f"idle-{time.monotonic_ns()}"
    with RawClient(shared_broker.port) as client:
        create_topic(client, name)
        started = time.perf_counter()
        part = only_partition(client.request(FETCH, 12, fetch_request(name, 0, max_wait_ms=300)))
        waited = time.perf_counter() - started
    assert (part.error_code, bytes(part.records)) == (0, b"")
    assert waited >= 0.29


def test_large_fetch_is_sent_from_the_file_byte_for_byte(shared_broker: BrokerProcess) -> None:
    """Above the sendfile threshold the records go out with sendfile; same bytes as on disk,
    cut at partition_max_bytes (possibly inside a batch, as Kafka's LogSegment.read)."""
    name = f"big-{time.monotonic_ns()}"
    payload = bytes(range(256)) * 40  # 10 KiB, incompressible enough
    with RawClient(shared_broker.port) as client:
        create_topic(client, name)
        for i in range(30):
            data = build_batch([(str(i).encode(), payload)] * 10)
            assert produce(client, name, data).error_code == 0
        on_disk = b"".join(raw for _, raw in stored(shared_broker.data_dir, name))
        assert len(on_disk) > 2 * 1024 * 1024
        whole = only_partition(
            client.request(FETCH, 12, fetch_request(name, 0, partition_max_bytes=10_000_000))
        )
        assert bytes(whole.records) == on_disk
        cut = only_partition(
            client.request(FETCH, 12, fetch_request(name, 0, partition_max_bytes=1_000_000))
        )
        assert bytes(cut.records) == on_disk[:1_000_000]
        # The connection is still in step after sendfile: a small request works.
        assert only_partition(client.request(FETCH, 12, fetch_request(name, 0))).error_code == 0


def test_uvloop_option_serves_produce_and_large_fetch(tmp_path: Path) -> None:
    """uvloop is optional (minikafka.event.loop=uvloop); it has no sendfile, so large fetches
    fall back to copying and must still return the stored bytes."""
    pytest.importorskip("uvloop")
    broker = BrokerProcess(tmp_path / "d", {"minikafka.event.loop": "uvloop"}).start()
    try:
        with RawClient(broker.port) as client:
            create_topic(client, "uv")
            for i in range(20):
                data = build_batch([(str(i).encode(), bytes(range(256)) * 40)] * 10)
                assert produce(client, "uv", data).error_code == 0
            part = only_partition(
                client.request(FETCH, 12, fetch_request("uv", 0, partition_max_bytes=10_000_000))
            )
        assert bytes(part.records) == b"".join(raw for _, raw in stored(broker.data_dir, "uv"))
    finally:
        assert broker.stop() == 0
