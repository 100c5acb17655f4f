"""The ingest workload of `make bench ARGS=--ingest` (bench/ingest.py) against a real broker.

A benchmark that posts a figure for records the broker refused or lost measures nothing:
these check what the workload stored and that its own response check catches a refusal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import floor, ingest
from protocol.records import iter_batches
from tests.support.broker_process import BrokerProcess
from tests.support.produce import stored


@pytest.mark.e2e
def test_ingest_run_stores_every_record_once_in_sequence(broker: BrokerProcess) -> None:
    ingest.create_topic(broker.port, "ingest")
    frames, batch_bytes = ingest.build_requests(broker.port, "ingest", 12)
    elapsed, responses = ingest.send_pipelined(broker.port, frames, in_flight=5)
    ingest.check_responses(responses, 1)
    assert elapsed > 0
    batches = stored(broker.data_dir, "ingest")
    assert [h.base_offset for h, _ in batches] == [i * 64 for i in range(12)]
    assert [h.base_sequence for h, _ in batches] == [i * 64 for i in range(12)]
    assert len({h.producer_id for h, _ in batches}) == 1
    assert sum(len(raw) for _, raw in batches) == batch_bytes


@pytest.mark.e2e
def test_ingest_check_refuses_a_run_the_broker_answered_with_errors(
    broker: BrokerProcess,
) -> None:
    # Produce never creates a topic: every request answers UNKNOWN_TOPIC_OR_PARTITION.
    frames, _ = ingest.build_requests(broker.port, "never-created", 3)
    _, responses = ingest.send_pipelined(broker.port, frames, in_flight=5)
    with pytest.raises(AssertionError, match="request 0 answered error 3"):
        ingest.check_responses(responses, 1)
    assert stored(broker.data_dir, "never-created") == []


@pytest.mark.e2e
def test_the_floor_server_answers_what_the_ingest_check_accepts_and_writes_every_frame(
    tmp_path: Path,
) -> None:
    # bench.floor's figure is only a floor if its server does the same I/O for the same
    # client: every frame written, every request answered in order (measure runs
    # ingest.check_responses on each run's answers).
    figures, frame_bytes = floor.measure(runs=2, requests=40, log_dir=tmp_path)
    assert len(figures) == 2 and all(mb_s > 0 and client > 0 for mb_s, _, client in figures)
    # One file, appended to as a segment is: the second run's frames follow the first's
    # (rewriting cached pages would cost the floor far less than the broker's appends).
    assert (tmp_path / "log").stat().st_size == 2 * frame_bytes


@pytest.mark.e2e
def test_the_checking_floor_server_checks_every_batch_and_writes_the_batches(
    tmp_path: Path,
) -> None:
    # bench.floor --check is the ceiling of a broker that checks batches as Kafka does: it
    # must run the broker's checks on every batch and write the batches the checks return.
    figures, _ = floor.measure(runs=2, requests=40, log_dir=tmp_path, check=True)
    assert len(figures) == 2 and all(mb_s > 0 for mb_s, _, _ in figures)
    log = (tmp_path / "log").read_bytes()
    headers = [header for _, header in iter_batches(log)]
    assert len(headers) == 2 * 40
    assert all(h.records_count == ingest.RECORDS_PER_BATCH for h in headers)
    assert sum(h.size for h in headers) == len(log)  # batches only, no request framing
