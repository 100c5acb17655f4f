"""Produce's batch checks in validation worker processes (issue 19), over real sockets.

Every broker here runs with one worker, started before the broker says it started
(``minikafka.validation.workers.eager``), and sends every batch of one record or more to
it (``minikafka.validation.worker.min.records=1``), so nothing is checked in the broker
process while the worker lives. Besides the tests below, the exactly-once flows (seed
scenarios, lost ACKs, SIGKILL restarts and a crash under load), the bad-batch table and the
pipelined ingest workload are imported from their modules and run again in this
configuration: the answers and what is stored must not change.
"""

from __future__ import annotations

import os
import re
import signal
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol import codec
from protocol.errors import ErrorCode
from protocol.header import decode_response_header
from protocol.messages.produce import PRODUCE
from protocol.primitives import Reader
from protocol.records import HEADER_SIZE, build_batch, write_crc
from tests.e2e.test_bad_input import test_bad_batch_is_refused_and_nothing_stored
from tests.e2e.test_durability import (
    data,
    test_crash_under_load_keeps_every_acknowledged_record_exactly_once,
    test_restart_keeps_all_five_cached_batches,
    test_sigkill_restart_recovers,
)
from tests.e2e.test_idempotence_raw import (
    client,
    test_epoch_rules_over_the_wire,
    test_lost_acks_resend_is_deduplicated_with_original_offsets,
    test_lost_batch_in_the_middle_gets_out_of_order_then_resent_in_order,
    test_six_in_flight_oldest_resent_is_refused_not_stored_twice,
    test_success_five_batches_get_contiguous_offsets,
)
from tests.e2e.test_ingest_workload import test_ingest_run_stores_every_record_once_in_sequence
from tests.support.broker_process import OVERRIDES_ENV, BrokerProcess, running
from tests.support.produce import (
    cut_into_body,
    produce,
    produce_request,
    producing_to,
    stored,
)
from tests.support.raw_client import ConnectionClosed

__all__ = [
    "client",
    "data",
    "test_bad_batch_is_refused_and_nothing_stored",
    "test_crash_under_load_keeps_every_acknowledged_record_exactly_once",
    "test_epoch_rules_over_the_wire",
    "test_ingest_run_stores_every_record_once_in_sequence",
    "test_lost_acks_resend_is_deduplicated_with_original_offsets",
    "test_lost_batch_in_the_middle_gets_out_of_order_then_resent_in_order",
    "test_restart_keeps_all_five_cached_batches",
    "test_sigkill_restart_recovers",
    "test_six_in_flight_oldest_resent_is_refused_not_stored_twice",
    "test_success_five_batches_get_contiguous_offsets",
]

WORKERS_ON = {
    "minikafka.validation.workers": "1",
    "minikafka.validation.worker.min.records": "1",
    "minikafka.validation.workers.eager": "true",
}
READY = r"validation worker (\d+) \(pid (\d+)\) ready"
WALKED = r"validation: (\d+) records walked in worker processes, (\d+) in the broker"


@pytest.fixture(autouse=True)
def _workers_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # Brokers the imported tests start themselves read this too (BrokerProcess).
    monkeypatch.setenv(OVERRIDES_ENV, ";".join(f"{k}={v}" for k, v in WORKERS_ON.items()))


@pytest.fixture
def broker(tmp_path: Path, _workers_on: None) -> Iterator[BrokerProcess]:
    with running(tmp_path / "data") as proc:
        yield proc


@pytest.fixture
def shared_broker(broker: BrokerProcess) -> BrokerProcess:
    return broker


def worker_pids(broker: BrokerProcess) -> list[int]:
    return [int(m.group(2)) for m in re.finditer(READY, broker.log_text())]


def big_batch(producer_id: int, base_sequence: int, count: int) -> bytes:
    records = [(None, f"v-{base_sequence + i}".encode()) for i in range(count)]
    return build_batch(
        records, producer_id=producer_id, producer_epoch=0, base_sequence=base_sequence
    )


def test_worker_is_ready_before_the_broker_serves_and_does_the_record_walk(
    broker: BrokerProcess,
) -> None:
    (pid,) = worker_pids(broker)
    text = broker.log_text()
    ready = re.search(READY, text)
    assert ready is not None and ready.start() < text.index("minikafka started")
    with producing_to(broker.port, "walk") as (client, producer):
        sequence = 0
        for _ in range(4):
            answer = produce(client, "walk", big_batch(producer, sequence, 20_000))
            assert (answer.error_code, answer.base_offset) == (0, sequence)
            sequence += 20_000
    assert broker.stop() == 0
    # The workers report each record their walk covered; the broker counts its own walks
    # (loop and threads): all 80,000 were walked in the worker, none in the broker.
    walked = re.search(WALKED, broker.log_text())
    assert walked is not None and walked.groups() == ("80000", "0")
    assert worker_pids(broker) == [pid]  # the same worker throughout
    assert [h.records_count for h, _ in stored(broker.data_dir, "walk")] == [20_000] * 4


def test_corrupt_batch_checked_in_a_worker_gets_kafkas_error_and_nothing_is_stored(
    broker: BrokerProcess,
) -> None:
    with producing_to(broker.port, "bad") as (client, producer):
        good = big_batch(producer, 0, 500)
        bad_crc = bytearray(good)
        bad_crc[HEADER_SIZE + 100] ^= 0xFF  # a record byte: the CRC no longer matches
        answer = produce(client, "bad", bytes(bad_crc))
        assert (answer.error_code, answer.base_offset) == (ErrorCode.CORRUPT_MESSAGE, -1)
        malformed = bytearray(good)
        # The first record's length (a zigzag varint) now claims far more than is there;
        # the CRC is recomputed, so only the record walk can find it.
        malformed[HEADER_SIZE] = 0x7E
        write_crc(malformed)
        answer = produce(client, "bad", bytes(malformed))
        assert answer.error_code == ErrorCode.INVALID_RECORD
        count_lie = bytearray(good)
        struct.pack_into(">i", count_lie, 57, 501)
        struct.pack_into(">i", count_lie, 23, 500)
        write_crc(count_lie)
        assert produce(client, "bad", bytes(count_lie)).error_code == ErrorCode.INVALID_RECORD
        # Nothing of those reached the log or the producer state: sequence 0 is next.
        assert (produce(client, "bad", good).error_code, 0) == (0, 0)
    assert [h.base_sequence for h, _ in stored(broker.data_dir, "bad")] == [0]
    broker.wait_for_log("rejected batch for bad-0: CORRUPT_MESSAGE")
    broker.wait_for_log("rejected batch for bad-0: INVALID_RECORD")


def test_killed_worker_is_replaced_and_no_request_is_lost_or_doubled(
    broker: BrokerProcess,
) -> None:
    (first,) = worker_pids(broker)
    with producing_to(broker.port, "kill") as (client, producer):
        assert produce(client, "kill", big_batch(producer, 0, 300)).error_code == 0
        os.kill(first, signal.SIGKILL)
        # Checked again in the broker while the worker is replaced: answered, never hung.
        sequence = 300
        for _ in range(3):
            answer = produce(client, "kill", big_batch(producer, sequence, 300))
            assert (answer.error_code, answer.base_offset) == (0, sequence)
            sequence += 300
        broker.wait_for_log(r"validation worker 2 \(pid \d+\) ready")
        answer = produce(client, "kill", big_batch(producer, sequence, 300))
        assert (answer.error_code, answer.base_offset) == (0, sequence)
    (_, second) = worker_pids(broker)
    assert second != first
    batches = stored(broker.data_dir, "kill")
    assert [h.base_sequence for h, _ in batches] == [i * 300 for i in range(5)]
    assert [h.base_offset for h, _ in batches] == [i * 300 for i in range(5)]


def test_pipelined_produce_appends_and_answers_in_order_and_a_bad_request_stops_the_rest(
    broker: BrokerProcess,
) -> None:
    """Six Produce requests sent at once on one connection, the fourth unreadable: Kafka
    answers the first three in order, then closes; the last two never take effect."""
    with producing_to(broker.port, "pipe") as (client, producer):
        frames = [
            client.encode(
                PRODUCE, 9, produce_request("pipe", big_batch(producer, i * 300, 300)), 100 + i
            )
            for i in range(6)
        ]
        frames[3] = cut_into_body(frames[3])
        client.send_raw(b"".join(frames))
        answers = []
        with pytest.raises(ConnectionClosed):
            while True:
                frame = client.read_frame()
                reader = Reader(frame)
                correlation_id = decode_response_header(reader, PRODUCE.response_header_version(9))
                body = codec.decode(PRODUCE.response, 9, True, reader)
                part = body.responses[0].partition_responses[0]
                answers.append((correlation_id, part.error_code, part.base_offset))
    assert answers == [(100, 0, 0), (101, 0, 300), (102, 0, 600)]
    batches = stored(broker.data_dir, "pipe")
    assert [h.base_sequence for h, _ in batches] == [0, 300, 600]
    broker.wait_for_log("malformed Produce v9 request")


def test_workers_exit_with_the_broker(broker: BrokerProcess) -> None:
    (pid,) = worker_pids(broker)
    broker.kill()  # SIGKILL: no shutdown code runs in the broker
    deadline_ok = _wait_gone(pid)
    assert deadline_ok, f"worker {pid} outlived its broker"


def _wait_gone(pid: int, timeout: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":  # exited; its parent (the test runner's init) reaps it
            return True
        time.sleep(0.01)
    return False
