"""The ingest workload of `make bench ARGS=--ingest` (bench/ingest.py) against a real broker.

A benchmark that posts a figure for records the broker refused or lost measures nothing:
these check what the workload stored and that its own response check catches a refusal.
"""

from __future__ import annotations

import pytest

from bench import ingest
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
