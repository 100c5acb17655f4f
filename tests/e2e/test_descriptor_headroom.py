"""Connections cannot take the file descriptors the log needs.

A broker whose RLIMIT_NOFILE is low is flooded with connections until it stops accepting;
a producer connected before the flood then makes the partition roll segment after segment.
Its produces succeed, or get a retriable error and succeed once connections are closed; the
partition never goes offline and every record is stored once, in order.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.api_versions import API_VERSIONS
from protocol.records import build_batch
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_topic, produce, stored_values
from tests.support.raw_client import SOFTWARE, RawClient

# Descriptors the broker may open beyond those it has once started.
SPARE = 64
# A batch of one 400-byte record, and segments that hold one such batch: every produce rolls.
VALUE_BYTES = 400
SEGMENT_BYTES = 600
# Long enough for an accepted connection's ApiVersions on a loaded machine.
ANSWER_TIMEOUT_S = 3.0


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(
        tmp_path / "data",
        {
            "log.segment.bytes": str(SEGMENT_BYTES),
            # No worker processes: their pipes would come and go with the load.
            "minikafka.validation.workers": "0",
        },
    ) as proc:
        yield proc


def answers(client: RawClient) -> bool:
    """Whether the broker serves this connection (it may sit unaccepted in the backlog)."""
    client.sock.settimeout(ANSWER_TIMEOUT_S)
    try:
        client.request(API_VERSIONS, 3, SOFTWARE)
    except TimeoutError:
        return False
    client.sock.settimeout(10)
    return True


def flood_until_refused(port: int) -> list[RawClient]:
    """Connections until one is not served; all of them (the last one unaccepted)."""
    flood: list[RawClient] = []
    while True:
        client = RawClient(port)
        flood.append(client)
        if not answers(client):
            return flood
        assert len(flood) <= 2 * SPARE, "the broker accepted more than it can hold"


def close_all(clients: list[RawClient]) -> None:
    for client in clients:
        client.close()


def test_connections_stop_before_the_log_runs_out_of_descriptors(broker: BrokerProcess) -> None:
    assert broker.proc is not None
    pid = broker.proc.pid
    producer = RawClient(broker.port)
    create_topic(producer, "fd")
    values = [f"{i:03d}".encode() * (VALUE_BYTES // 3) for i in range(12)]
    assert produce(producer, "fd", build_batch([(None, values[0])])).error_code == 0
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (open_descriptors(pid) + SPARE, hard))

    # Flooded, the broker stops accepting; the connections closed, it accepts again.
    flood = flood_until_refused(broker.port)
    broker.wait_for_log("stopped accepting connections: ")
    close_all(flood)
    with RawClient(broker.port) as late:
        assert answers(late)
    broker.wait_for_log("accepting connections again: ")

    flood = flood_until_refused(broker.port)
    results: list[int] = []
    try:
        for value in values[1:]:
            answer = produce(producer, "fd", build_batch([(None, value)]))
            while answer.error_code == ErrorCode.REQUEST_TIMED_OUT:
                # Retriable: nothing was written; retried once connections give some back.
                results.append(answer.error_code)
                assert flood, "refused with no connection left to close"
                close_all(flood[: len(flood) // 2 + 1])
                del flood[: len(flood) // 2 + 1]
                answer = produce(producer, "fd", build_batch([(None, value)]))
            results.append(answer.error_code)
    finally:
        close_all(flood)
    assert set(results) <= {ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT}, results
    assert results[-1] == ErrorCode.NONE
    producer.close()
    log = broker.log_text()
    assert "offline until a restart" not in log, log[-3000:]
    assert "KAFKA_STORAGE_ERROR" not in log
    data = broker.data_dir
    assert broker.stop() == 0
    # Every record once, in order; and the segments rolled as asked.
    assert stored_values(data, "fd") == values
    assert len([n for n in os.listdir(data / "fd-0") if n.endswith(".log")]) == len(values)
