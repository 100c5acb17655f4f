"""The Java client's transactional producer (tests/compat/java/TxnProduce.java) against a
real broker: kafka-clients 4.x uses transactions v2 because the broker finalizes
transaction.version 2 (Produce v12 with no AddPartitionsToTxn, TxnOffsetCommit v5 with no
AddOffsetsToTxn, EndTxn v5 and an epoch bump per transaction); 3.9.0 uses transactions v1.

Checked on the wire (the API versions the client sent, through a CaptureProxy) and on what
the broker stored: data batches and COMMIT/ABORT markers with their producer epochs and
sequences in the segment files, the aborted transaction in .txnindex, the group's committed
offset (OffsetFetch with require_stable) and a read_committed Fetch's view.

TxnAdmin.java makes kafka-transactions.sh's calls (TransactionsCommand: list, describe,
describe-producers, abort by start offset) through Java's Admin against a transaction left
hanging over raw sockets; the abort's marker, .txnindex entry and released LSO are checked.
"""

from __future__ import annotations

import json
import struct
import subprocess
from typing import Any

import pytest

from protocol.records import decode_records
from storage.txn_index import read_entries
from tests.compat.conftest import record_versions
from tests.compat.test_java_client import (
    KAFKA_CLIENTS_VERSIONS,
    JavaClient,
    built,
)
from tests.e2e.test_transactions_admin import describe
from tests.e2e.test_transactions_raw import TXN, lso_and_aborted, open_transaction
from tests.support.broker_process import BrokerProcess
from tests.support.capture_proxy import CapturedFrame, CaptureProxy
from tests.support.group_offsets import fetch_committed
from tests.support.produce import create_topic, stored
from tests.support.raw_client import RawClient

PRODUCE, OFFSET_FETCH_KEY, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = (
    0,
    9,
    24,
    25,
    26,
    28,
)
COMMIT, ABORT = 1, 0
WRITE_TXN_MARKERS = 27


def run_capturing(
    client: JavaClient, proxy: CaptureProxy, main: str, *args: str
) -> tuple[list[dict[str, Any]], list[CapturedFrame]]:
    """Run a compat program through the proxy; its JSON lines and every request it sent."""
    command = client.command(main, proxy.bootstrap, *args)
    done = subprocess.run(command, capture_output=True, text=True, timeout=100)
    frames = proxy.take()
    record_versions(f"Java kafka-clients {client.version}", frames)
    assert done.returncode == 0, f"{main} exited {done.returncode}:\n{done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines()], frames


def versions_sent(frames: list[CapturedFrame]) -> dict[int, set[int]]:
    seen: dict[int, set[int]] = {}
    for frame in frames:
        seen.setdefault(frame.api_key, set()).add(frame.api_version)
    return seen


@pytest.mark.timeout(200)
@pytest.mark.parametrize("version", KAFKA_CLIENTS_VERSIONS, ids=lambda v: f"kafka-clients-{v}")
def test_java_transactional_producer_commits_aborts_and_sends_offsets(
    proxied_broker: tuple[BrokerProcess, CaptureProxy], version: str
) -> None:
    broker, proxy = proxied_broker
    client = built(version)
    with RawClient(broker.port) as c:
        create_topic(c, "jt-out")
        create_topic(c, "jt-in")
    lines, frames = run_capturing(
        client, proxy, "TxnProduce", "jt-out", "jt-in", "jt-group", "jt-txn"
    )
    acks = [(line["value"], line["offset"]) for line in lines if "value" in line]
    assert acks == [("c1-0", 0), ("c1-1", 1), ("c1-2", 2), ("a2-0", 4), ("a2-1", 5), ("c3-0", 7)]

    sent = versions_sent(frames)
    tv2 = version.startswith("4.")
    if tv2:
        # Transactions v2: implicit adds, EndTxn v5.
        assert sent[PRODUCE] == {12} and sent[END_TXN] == {5} and sent[TXN_OFFSET_COMMIT] == {5}
        assert ADD_PARTITIONS not in sent and ADD_OFFSETS not in sent
    else:
        assert max(sent[PRODUCE]) <= 11 and max(sent[END_TXN]) <= 4
        assert ADD_PARTITIONS in sent and ADD_OFFSETS in sent

    batches = stored(broker.data_dir, "jt-out", 0)
    data = [
        (
            h.base_offset,
            h.producer_epoch,
            h.base_sequence,
            [r.value for r in decode_records(raw, h)],
        )
        for h, raw in batches
        if not h.is_control
    ]
    found = []
    for h, raw in batches:
        if h.is_control:
            (record,) = decode_records(raw, h)
            assert record.key is not None
            found.append((h.base_offset, struct.unpack(">hh", record.key)[1], h.producer_epoch))
    assert [(offset, kind) for offset, kind, _ in found] == [(3, COMMIT), (6, ABORT), (8, COMMIT)]
    assert all(h.is_transactional for h, _ in batches)
    epochs = [epoch for _, _, epoch in found]
    first_epoch = data[0][1]
    if tv2:
        # Each transaction ends with a bumped epoch; the next starts at it, sequence 0.
        assert epochs == [first_epoch + 1, first_epoch + 2, first_epoch + 3]
        assert [(epoch, seq) for offset, epoch, seq, _ in data if offset in (4, 7)] == [
            (first_epoch + 1, 0),
            (first_epoch + 2, 0),
        ]
    else:
        assert epochs == [first_epoch] * 3
    (entry,) = read_entries(broker.data_dir / "jt-out-0" / f"{0:020d}.txnindex")
    assert (entry.first_offset, entry.last_offset) == (4, 6)

    with RawClient(broker.port) as c:
        assert fetch_committed(c, "jt-group", "jt-in") == (0, 5)
        # read_committed: everything is stable; the aborted transaction is announced.
        pid = batches[0][0].producer_id
        assert lso_and_aborted(c, "jt-out") == (9, 9, [(pid, 4)])


@pytest.mark.timeout(200)
@pytest.mark.parametrize("version", KAFKA_CLIENTS_VERSIONS, ids=lambda v: f"kafka-clients-{v}")
def test_java_admin_lists_describes_and_aborts_a_hanging_transaction(
    proxied_broker: tuple[BrokerProcess, CaptureProxy], version: str
) -> None:
    """kafka-transactions.sh's calls (Admin listTransactions, describeTransactions,
    describeProducers, abortTransaction) against a transaction left open over raw sockets."""
    broker, proxy = proxied_broker
    with RawClient(broker.port) as c:
        pid, epoch = open_transaction(c, "jt-hang")
        assert lso_and_aborted(c, "jt-hang") == (2, 0, [])
    lines, frames = run_capturing(built(version), proxy, "TxnAdmin", "jt-hang", TXN)
    assert {"listed": TXN, "state": "Ongoing"} in lines
    assert {
        "described": TXN,
        "state": "Ongoing",
        "producerId": pid,
        "epoch": epoch,
        "partitions": 1,
    } in lines
    assert {"producer": pid, "epoch": epoch, "startOffset": 0, "coordinatorEpoch": -1} in lines
    assert {"aborted": pid} in lines
    assert WRITE_TXN_MARKERS in versions_sent(frames)
    with RawClient(broker.port) as c:
        # The LSO is released and read_committed is told the transaction was aborted; the
        # coordinator still holds it (Kafka's abort leaves the coordinator alone).
        assert lso_and_aborted(c, "jt-hang") == (3, 3, [(pid, 0)])
        (state,) = describe(c, TXN)
        assert state.transaction_state == "Ongoing"
    (entry,) = read_entries(broker.data_dir / "jt-hang-0" / f"{0:020d}.txnindex")
    assert (entry.producer_id, entry.first_offset, entry.last_offset) == (pid, 0, 2)
