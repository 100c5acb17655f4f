"""Transaction admin APIs over raw sockets, checked field by field and on the segment files:
DescribeTransactions, ListTransactions (v0-1, duration filter), DescribeProducers' open
transaction and coordinator epoch, WriteTxnMarkers v1 (what `kafka-transactions.sh abort`
sends for a hanging transaction), and `minikafka dump` naming markers and open transactions.
"""

from __future__ import annotations

import io
import struct

from broker.tools import dump
from protocol.errors import ErrorCode
from protocol.messages.describe_producers import DESCRIBE_PRODUCERS
from protocol.messages.describe_transactions import DESCRIBE_TRANSACTIONS
from protocol.messages.list_transactions import LIST_TRANSACTIONS
from protocol.messages.write_txn_markers import WRITE_TXN_MARKERS
from protocol.records import decode_records
from protocol.schema import Message
from storage.txn_index import read_entries
from tests.e2e.test_transactions_raw import (
    TXN,
    add_partition,
    end,
    init,
    init_ids,
    lso_and_aborted,
    open_transaction,
    txn_produce,
)
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_topic, stored
from tests.support.raw_client import RawClient


def describe_producers(client: RawClient, topic: str, partitions: list[int]) -> Message:
    answer = client.request(
        DESCRIBE_PRODUCERS,
        0,
        Message(topics=[Message(name=topic, partition_indexes=partitions)]),
    )
    result: Message = answer.topics[0]
    return result


def describe(client: RawClient, *ids: str) -> list[Message]:
    answer = client.request(DESCRIBE_TRANSACTIONS, 0, Message(transactional_ids=list(ids)))
    states: list[Message] = answer.transaction_states
    return states


def list_txns(
    client: RawClient,
    version: int = 1,
    states: tuple[str, ...] = (),
    pids: tuple[int, ...] = (),
    duration: int = -1,
) -> Message:
    return client.request(
        LIST_TRANSACTIONS,
        version,
        Message(
            state_filters=list(states), producer_id_filters=list(pids), duration_filter=duration
        ),
    )


def write_marker(
    client: RawClient, pid: int, epoch: int, commit: bool, topic: str, partitions: list[int]
) -> list[tuple[int, str, int, int]]:
    answer = client.request(
        WRITE_TXN_MARKERS,
        1,
        Message(
            markers=[
                Message(
                    producer_id=pid,
                    producer_epoch=epoch,
                    transaction_result=commit,
                    topics=[Message(name=topic, partition_indexes=partitions)],
                    coordinator_epoch=0,
                )
            ]
        ),
    )
    return [
        (m.producer_id, t.name, p.partition_index, p.error_code)
        for m in answer.markers
        for t in m.topics
        for p in t.partitions
    ]


def test_describe_producers_shows_the_open_transaction_and_coordinator_epoch(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as c:
        pid, epoch = open_transaction(c, "adm-p")
        assert txn_produce(c, "adm-p", batch(pid, epoch, 2, transactional=True)) == 0
        (part,) = describe_producers(c, "adm-p", [0]).partitions
        (producer,) = part.active_producers
        assert (producer.producer_id, producer.producer_epoch, producer.last_sequence) == (
            pid,
            epoch,
            3,
        )
        # Open since offset 0; no marker yet, so no coordinator epoch.
        assert (producer.current_txn_start_offset, producer.coordinator_epoch) == (0, -1)
        assert end(c, pid, epoch, commit=True) == ErrorCode.NONE
        (producer,) = describe_producers(c, "adm-p", [0]).partitions[0].active_producers
        assert (producer.current_txn_start_offset, producer.coordinator_epoch) == (-1, 0)


def test_describe_transactions_reports_state_partitions_and_per_id_errors(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "adm-d")
        pid, epoch = init_ids(c)
        (empty,) = describe(c, TXN)
        assert (empty.error_code, empty.transaction_state, empty.transaction_start_time_ms) == (
            0,
            "Empty",
            -1,
        )
        assert add_partition(c, pid, epoch, "adm-d") == ErrorCode.NONE
        ongoing, unknown, blank = describe(c, TXN, "no-such-id", "")
        assert ongoing.error_code == 0 and ongoing.transactional_id == TXN
        assert ongoing.transaction_state == "Ongoing"
        assert (ongoing.producer_id, ongoing.producer_epoch) == (pid, epoch)
        assert ongoing.transaction_timeout_ms == 60000
        assert ongoing.transaction_start_time_ms > 0
        assert [(t.topic, list(t.partitions)) for t in ongoing.topics] == [("adm-d", [0])]
        assert (unknown.transactional_id, unknown.error_code) == (
            "no-such-id",
            ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
        )
        assert blank.error_code == ErrorCode.INVALID_REQUEST
        assert end(c, pid, epoch, commit=False) == ErrorCode.NONE
        (done,) = describe(c, TXN)
        assert (done.transaction_state, done.topics) == ("CompleteAbort", [])
        assert done.transaction_start_time_ms == ongoing.transaction_start_time_ms


def test_list_transactions_filters_by_state_producer_id_and_duration(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "adm-l")
        pid, epoch = init_ids(c)
        assert add_partition(c, pid, epoch, "adm-l") == ErrorCode.NONE
        everything = list_txns(c, version=0)
        assert everything.error_code == 0 and everything.unknown_state_filters == []
        assert [
            (s.transactional_id, s.producer_id, s.transaction_state)
            for s in everything.transaction_states
        ] == [(TXN, pid, "Ongoing")]
        assert len(list_txns(c, states=("Ongoing",)).transaction_states) == 1
        assert list_txns(c, states=("Empty",)).transaction_states == []
        assert list_txns(c, pids=(pid + 1,)).transaction_states == []
        odd = list_txns(c, states=("Ongoing", "Sleeping"))
        assert odd.unknown_state_filters == ["Sleeping"]
        assert len(odd.transaction_states) == 1
        # KIP-994: only transactions running longer than the filter.
        assert list_txns(c, duration=3_600_000).transaction_states == []
        assert len(list_txns(c, duration=0).transaction_states) == 1


def test_write_txn_markers_aborts_a_hanging_transaction(broker: BrokerProcess) -> None:
    """What `kafka-transactions.sh abort --start-offset` does: DescribeProducers, then
    WriteTxnMarkers with the producer's id and epoch; the coordinator's state is untouched."""
    with RawClient(broker.port) as c:
        create_topic(c, "adm-w")
        init(c)
        pid, epoch = init_ids(c)  # epoch 1, so epoch 0 is an older one
        assert epoch == 1
        assert add_partition(c, pid, epoch, "adm-w") == ErrorCode.NONE
        assert txn_produce(c, "adm-w", batch(pid, epoch, 0, transactional=True)) == 0
        assert lso_and_aborted(c, "adm-w") == (2, 0, [])
        (producer,) = describe_producers(c, "adm-w", [0]).partitions[0].active_producers
        assert producer.current_txn_start_offset == 0
        # An older epoch is refused by the partition's producer state.
        assert write_marker(c, pid, epoch - 1, False, "adm-w", [0]) == [
            (pid, "adm-w", 0, ErrorCode.INVALID_PRODUCER_EPOCH)
        ]
        assert write_marker(c, pid, epoch, False, "adm-w", [0, 7]) == [
            (pid, "adm-w", 0, ErrorCode.NONE),
            (pid, "adm-w", 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        assert write_marker(c, pid, epoch, False, "nope", [0]) == [
            (pid, "nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        ]
        # The LSO is released and the aborted transaction is answered to read_committed.
        assert lso_and_aborted(c, "adm-w") == (3, 3, [(pid, 0)])
        (producer,) = describe_producers(c, "adm-w", [0]).partitions[0].active_producers
        assert (producer.current_txn_start_offset, producer.coordinator_epoch) == (-1, 0)
        (state,) = describe(c, TXN)
        assert state.transaction_state == "Ongoing"  # the coordinator was not involved
    (data, _), (marker, raw) = stored(broker.data_dir, "adm-w")
    assert data.is_transactional and marker.is_control
    (record,) = decode_records(raw, marker)
    assert record.key is not None and struct.unpack(">hh", record.key) == (0, 0)  # ABORT
    (entry,) = read_entries(broker.data_dir / "adm-w-0" / f"{0:020d}.txnindex")
    assert (entry.producer_id, entry.first_offset, entry.last_offset) == (pid, 0, 2)


def test_dump_names_markers_and_open_transactions(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        pid, epoch = open_transaction(c, "adm-dump")
        assert end(c, pid, epoch, commit=True) == ErrorCode.NONE
        assert add_partition(c, pid, epoch, "adm-dump") == ErrorCode.NONE
        assert txn_produce(c, "adm-dump", batch(pid, epoch, 2, transactional=True)) == 0
    out = io.StringIO()
    assert dump.dump_partition(broker.data_dir / "adm-dump-0", records=False, out=out)
    text = out.getvalue()
    assert f"COMMIT pid {pid} epoch {epoch} coordinator epoch 0" in text
    assert f"open transactions: pid {pid} since offset 3" in text
