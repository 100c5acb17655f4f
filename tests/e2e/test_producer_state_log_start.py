"""Producer state outlives the records it describes (issue 11 items 2 and 7).

Since KAFKA-7190 (Kafka 2.4) moving the log start offset (DeleteRecords, retention) forgets
no producer: ProducerStateManager.onLogStartOffsetIncremented removes none, only
removeExpiredProducers (producer.id.expiration.ms) does. A retry of a deleted batch is still
a duplicate answered with its original offset, and a sequence gap is still refused. Beyond
Kafka, the state also survives an unclean restart. Every check reads what the broker stored:
segment files, snapshot files, and DescribeProducers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.delete_records import DELETE_RECORDS
from protocol.messages.describe_producers import DESCRIBE_PRODUCERS
from protocol.schema import Message
from storage.snapshot import list_snapshots, read_snapshot
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_topic, init_producer, produce, stored
from tests.support.raw_client import RawClient

OUT_OF_ORDER = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
SMALL_SEGMENTS = {
    "log.segment.bytes": "300",
    "log.retention.bytes": "600",
    "log.retention.check.interval.ms": "50",
}


def start(data: Path, **overrides: str) -> BrokerProcess:
    return BrokerProcess(data, {"listeners": "PLAINTEXT://127.0.0.1:0", **overrides}).start()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = start(tmp_path_factory.mktemp("pstate") / "data")
    try:
        yield proc
    finally:
        proc.stop()


def delete_records(client: RawClient, topic: str, offset: int) -> int:
    answer = client.request(
        DELETE_RECORDS,
        2,
        Message(
            topics=[Message(name=topic, partitions=[Message(partition_index=0, offset=offset)])],
            timeout_ms=1000,
        ),
    )
    part = answer.topics[0].partitions[0]
    assert part.error_code == 0, part
    low: int = part.low_watermark
    return low


def described(client: RawClient, topic: str) -> dict[int, Message]:
    """DescribeProducers v0 of partition 0: producer id -> its state."""
    answer = client.request(
        DESCRIBE_PRODUCERS, 0, Message(topics=[Message(name=topic, partition_indexes=[0])])
    )
    part = answer.topics[0].partitions[0]
    assert part.error_code == 0
    return {p.producer_id: p for p in part.active_producers}


def stored_bases(data: Path, topic: str) -> list[int]:
    return [h.base_offset for h, _ in stored(data, topic)]


def two_batches_then_delete_all(client: RawClient, topic: str) -> int:
    """Sequences 0-1 at offset 0 and 2-3 at offset 2, then DeleteRecords to the end (4)."""
    create_topic(client, topic)
    pid = init_producer(client)
    assert produce(client, topic, batch(pid, 0, 0)).base_offset == 0
    assert produce(client, topic, batch(pid, 0, 2)).base_offset == 2
    assert delete_records(client, topic, -1) == 4
    return pid


def test_delete_records_keeps_producer_state_so_a_retry_is_a_duplicate(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as client:
        pid = two_batches_then_delete_all(client, "dr-dup")
        answer = produce(client, "dr-dup", batch(pid, 0, 2))
        assert (answer.error_code, answer.base_offset, answer.log_start_offset) == (0, 2, 4)
        state = described(client, "dr-dup")[pid]
    assert (state.producer_epoch, state.last_sequence) == (0, 3)
    assert stored_bases(broker.data_dir, "dr-dup") == [0, 2]  # nothing written at offset 4


def test_delete_records_keeps_producer_state_so_a_gap_is_out_of_order(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as client:
        pid = two_batches_then_delete_all(client, "dr-gap")
        assert produce(client, "dr-gap", batch(pid, 0, 6)).error_code == OUT_OF_ORDER
        assert described(client, "dr-gap")[pid].last_sequence == 3
        assert stored_bases(broker.data_dir, "dr-gap") == [0, 2]
        # The next sequence in order is still accepted where the log ends.
        assert produce(client, "dr-gap", batch(pid, 0, 4)).base_offset == 4
    assert stored_bases(broker.data_dir, "dr-gap") == [0, 2, 4]


def wait_for_log_start_above(data: Path, topic: str, offset: int) -> None:
    deadline = time.monotonic() + 10
    while stored_bases(data, topic)[0] <= offset:
        assert time.monotonic() < deadline, "retention never ran"
        time.sleep(0.05)


def test_retention_keeps_the_state_of_producers_whose_segments_it_deleted(data: Path) -> None:
    broker = start(data, **SMALL_SEGMENTS)
    try:
        with RawClient(broker.port) as client:
            create_topic(client, "ret")
            old = init_producer(client)
            assert produce(client, "ret", batch(old, 0, 0, count=3)).base_offset == 0
            new = init_producer(client)
            for i in range(12):
                assert produce(client, "ret", batch(new, 0, i * 3, count=3)).error_code == 0
            wait_for_log_start_above(data, "ret", 2)
            log_start = stored_bases(data, "ret")[0]
            end = stored_bases(data, "ret")[-1] + 3
            # The old producer's only batch is gone from disk; its retry is still a duplicate.
            answer = produce(client, "ret", batch(old, 0, 0, count=3))
            assert (answer.error_code, answer.base_offset) == (0, 0)
            assert answer.log_start_offset == log_start > 0
            assert produce(client, "ret", batch(old, 0, 500, count=3)).error_code == OUT_OF_ORDER
            assert described(client, "ret")[old].last_sequence == 2
        assert stored_bases(data, "ret")[-1] + 3 == end  # neither was written
    finally:
        broker.stop()
    assert sum(p.stat().st_size for p in (data / "ret-0").glob("*.log")) < 2000


def move_log_start_past_producer(
    client: RawClient, data: Path, how: str, topic: str
) -> tuple[int, bytes]:
    """A producer's batches at 0-1 and 2-3, then the log start moves past both.

    Returns the producer id and its second batch.
    """
    create_topic(client, topic)
    pid = init_producer(client)
    second = batch(pid, 0, 2)
    assert produce(client, topic, batch(pid, 0, 0)).base_offset == 0
    assert produce(client, topic, second).base_offset == 2
    if how == "delete_records":
        assert delete_records(client, topic, -1) == 4
    else:
        other = init_producer(client)
        for i in range(12):
            assert produce(client, topic, batch(other, 0, i * 3, count=3)).error_code == 0
        wait_for_log_start_above(data, topic, 3)
    return pid, second


@pytest.mark.parametrize("how", ["delete_records", "retention"])
def test_sigkill_after_the_log_start_passed_a_producer_keeps_its_state(
    data: Path, how: str
) -> None:
    overrides = SMALL_SEGMENTS if how == "retention" else {}
    broker = start(data, **overrides)
    try:
        with RawClient(broker.port) as client:
            pid, second = move_log_start_past_producer(client, data, how, "kill")
            end = stored_bases(data, "kill")[-1]
    finally:
        broker.kill()
    # What the killed broker left on disk already knows the producer.
    part = data / "kill-0"
    newest = read_snapshot(part, list_snapshots(part)[-1])
    (entry,) = [e for e in newest.producers if e.producer_id == pid]
    assert (entry.last_seq, entry.last_offset) == (3, 3)

    broker = start(data, **overrides)
    try:
        with RawClient(broker.port) as client:
            answer = produce(client, "kill", second)
            assert (answer.error_code, answer.base_offset) == (0, 2)
            assert produce(client, "kill", batch(pid, 0, 9)).error_code == OUT_OF_ORDER
            assert described(client, "kill")[pid].last_sequence == 3
    finally:
        broker.stop()
    assert stored_bases(data, "kill")[-1] == end  # the retry was not stored again


def test_producers_already_expired_are_dropped_at_start_up(data: Path) -> None:
    """Kafka's loadFromSnapshot skips producers isProducerExpired says are gone; the clock
    is each producer's last batch max timestamp (ProducerStateEntry.lastTimestamp)."""
    expiration = 60_000
    broker = start(data, **{"producer.id.expiration.ms": str(expiration)})
    try:
        with RawClient(broker.port) as client:
            create_topic(client, "exp")
            stale, fresh = init_producer(client), init_producer(client)
            long_ago = int(time.time() * 1000) - 2 * expiration
            assert (
                produce(client, "exp", batch(stale, 0, 0, base_timestamp=long_ago)).error_code == 0
            )
            assert produce(client, "exp", batch(fresh, 0, 0)).error_code == 0
            # The periodic check (every 10 minutes by default) has not run yet.
            assert set(described(client, "exp")) == {stale, fresh}
    finally:
        broker.kill()
    broker = start(data, **{"producer.id.expiration.ms": str(expiration)})
    try:
        with RawClient(broker.port) as client:
            assert set(described(client, "exp")) == {fresh}
            # Unknown again: any sequence is accepted (KIP-360).
            assert produce(client, "exp", batch(stale, 0, 40)).base_offset == 4
    finally:
        broker.stop()
    assert [h.producer_id for h, _ in stored(data, "exp")] == [stale, fresh, stale]


def test_restart_with_a_producer_at_epoch_minus_one_loads_its_snapshot(data: Path) -> None:
    """Produce accepts a producer id with epoch -1 (no range check, as Kafka); the snapshot
    holding it must load, not be set aside as corrupt on every start."""
    broker = start(data)
    try:
        with RawClient(broker.port) as client:
            create_topic(client, "neg")
            pid = init_producer(client)
            first = batch(pid, -1, 0)
            assert produce(client, "neg", first).base_offset == 0
            assert produce(client, "neg", batch(pid, -1, 2)).base_offset == 2
    finally:
        assert broker.stop() == 0
    part = data / "neg-0"
    (entry,) = read_snapshot(part, list_snapshots(part)[-1]).producers
    assert (entry.producer_id, entry.epoch, entry.last_seq) == (pid, -1, 3)
    broker = start(data)
    try:
        with RawClient(broker.port) as client:
            assert produce(client, "neg", first).base_offset == 0
            state = described(client, "neg")[pid]
            assert (state.producer_epoch, state.last_sequence) == (-1, 3)
    finally:
        assert broker.stop() == 0
    assert "unusable" not in broker.log_text()
    assert not list(part.glob("*.corrupt"))
    assert stored_bases(data, "neg") == [0, 2]
