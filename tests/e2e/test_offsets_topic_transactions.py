"""Transactional offset commits in ``__consumer_offsets`` as Kafka writes them: a
TxnOffsetCommit's offsets appended at once as a transactional batch of the producer (its id
and epoch), the transaction's COMMIT/ABORT marker written to the group's partition at
EndTxn, and a restart applying only committed ones. Checked on the segment files and
through a real transactional client (confluent-kafka's send_offsets_to_transaction)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.tools.dump import iter_partition_batches
from protocol import coordinator_records as cr
from protocol.errors import ErrorCode
from protocol.messages.add_offsets_to_txn import ADD_OFFSETS_TO_TXN
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.records import decode_records, parse_end_txn_marker
from protocol.schema import Message
from tests.e2e.test_transactions_raw import TXN, end, init_ids, txn_commit_offset
from tests.support.broker_process import BrokerProcess, running
from tests.support.group_offsets import committed_topic, fetch_committed
from tests.support.internal_topics import java_partition
from tests.support.produce import create_topic
from tests.support.raw_client import RawClient
from tests.support.stored_groups import stored_groups

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")

OFFSETS = "__consumer_offsets"
PARTITIONS = 5
SETTINGS = {"offsets.topic.num.partitions": str(PARTITIONS)}
SOURCE = "txn-source"


def create_source(broker: BrokerProcess) -> None:
    admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([confluent_admin.NewTopic(SOURCE, 1, 1)])[SOURCE].result(10)


def offsets_in_transaction(
    broker: BrokerProcess, txn_id: str, group: str, offset: int, *, commit: bool
) -> int:
    """One transaction that carries ``group``'s offset of SOURCE-0; the producer id."""
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id}
    )
    producer.init_transactions(15)
    producer.begin_transaction()
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        producer.send_offsets_to_transaction(
            [confluent_kafka.TopicPartition(SOURCE, 0, offset)],
            consumer.consumer_group_metadata(),
            15,
        )
    finally:
        consumer.close()
    if commit:
        producer.commit_transaction(15)
    else:
        producer.abort_transaction(15)
    return -1


def committed(broker: BrokerProcess, group: str) -> int:
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        [tp] = consumer.committed([confluent_kafka.TopicPartition(SOURCE, 0)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


def batches(data_dir: Path, group: str) -> list[tuple[object, list[tuple[int, object, object]]]]:
    """(header, [(kind, key, value)] or the marker) of each batch in the group's partition."""
    out: list[tuple[object, list[tuple[int, object, object]]]] = []
    path = data_dir / f"{OFFSETS}-{java_partition(group, PARTITIONS)}"
    for header, data in iter_partition_batches(path):
        if header.is_control:
            out.append((header, [(-1, parse_end_txn_marker(data, header), None)]))
            continue
        rows = []
        for r in decode_records(data, header):
            assert r.key is not None
            kind, key = cr.decode_key(r.key)
            rows.append((kind, key, None if r.value is None else cr.decode_value(kind, r.value)))
        out.append((header, rows))
    return out


def test_committed_offsets_are_a_transactional_batch_and_a_commit_marker(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running(data, SETTINGS) as broker:
        create_source(broker)
        offsets_in_transaction(broker, "txn-c", "txn-group-c", 7, commit=True)
        assert committed(broker, "txn-group-c") == 7
        stored = batches(data, "txn-group-c")
    transactional = [
        (h, rows)
        for h, rows in stored
        if h.is_transactional and not h.is_control  # type: ignore[attr-defined]
    ]
    [(header, rows)] = transactional
    assert header.producer_id >= 0 and header.producer_epoch >= 0  # type: ignore[attr-defined]
    [(kind, key, value)] = rows
    assert kind == cr.OFFSET_COMMIT and (key.group, key.topic, key.partition) == (  # type: ignore[attr-defined]
        "txn-group-c",
        SOURCE,
        0,
    )
    assert value[1].offset == 7  # type: ignore[index]
    # The COMMIT marker of the same producer follows it in that partition.
    at = stored.index((header, rows))
    markers = [
        (h, rows[0][1])
        for h, rows in stored[at + 1 :]
        if h.is_control  # type: ignore[attr-defined]
    ]
    assert markers, stored
    marker_header, marker = markers[0]
    assert marker_header.producer_id == header.producer_id  # type: ignore[attr-defined]
    assert marker.commit  # type: ignore[attr-defined]
    # No plain (non-transactional) record of that offset: the marker commits it.
    plain = [
        r
        for h, rows in stored
        if not h.is_transactional  # type: ignore[attr-defined]
        for r in rows
        if r[0] == cr.OFFSET_COMMIT
    ]
    assert plain == []


def test_after_a_restart_committed_offsets_show_and_aborted_ones_do_not(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running(data, SETTINGS) as broker:
        create_source(broker)
        offsets_in_transaction(broker, "txn-r", "kept-group", 11, commit=True)
        offsets_in_transaction(broker, "txn-r", "kept-group", 15, commit=False)
        offsets_in_transaction(broker, "txn-a", "aborted-group", 4, commit=False)
        assert committed(broker, "kept-group") == 11
        assert committed(broker, "aborted-group") == -1001
        broker.kill()
        broker.start()
        assert committed(broker, "kept-group") == 11
        assert committed(broker, "aborted-group") == -1001
    # The aborted one is on disk, resolved by its ABORT marker.
    aborted = batches(data, "aborted-group")
    assert any(
        h.is_transactional and not h.is_control
        for h, _ in aborted  # type: ignore[attr-defined]
    )
    assert [m[0][1].commit for h, m in aborted if h.is_control] == [False]  # type: ignore[attr-defined]
    state = stored_groups(data)
    assert state.offsets("kept-group")[(SOURCE, 0)].offset == 11
    assert (SOURCE, 0) not in state.offsets("aborted-group")


def plain_commit(client: RawClient, group: str, topic: str, offset: int) -> int:
    answer = client.request(
        OFFSET_COMMIT,
        8,
        Message(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            retention_time_ms=-1,
            topics=[committed_topic(topic, {0: offset})],
        ),
    )
    code: int = answer.topics[0].partitions[0].error_code
    return code


def test_a_plain_commit_after_the_transactional_one_wins_at_the_commit(
    tmp_path: Path,
) -> None:
    """Kafka keeps the later record of a partition when transactional and plain commits mix
    (OffsetMetadataManager.replayEndTransactionMarker): live and after a restart."""
    data = tmp_path / "data"
    with running(data, SETTINGS) as broker:
        with RawClient(broker.port) as c:
            create_topic(c, "mixed-src")
            create_topic(c, "other-src")
            pid, epoch = init_ids(c)
            added = c.request(
                ADD_OFFSETS_TO_TXN,
                3,
                Message(
                    transactional_id=TXN, producer_id=pid, producer_epoch=epoch, group_id="mixg"
                ),
            )
            assert added.error_code == 0
            assert txn_commit_offset(c, "mixg", "mixed-src", (pid, epoch), 5) == 0
            assert txn_commit_offset(c, "mixg", "other-src", (pid, epoch), 6) == 0
            assert plain_commit(c, "mixg", "mixed-src", 9) == 0
            assert end(c, pid, epoch, commit=True) == ErrorCode.NONE
            assert fetch_committed(c, "mixg", "mixed-src") == (0, 9)
            assert fetch_committed(c, "mixg", "other-src") == (0, 6)
        broker.kill()
        broker.start()
        with RawClient(broker.port) as c:
            assert fetch_committed(c, "mixg", "mixed-src") == (0, 9)
            assert fetch_committed(c, "mixg", "other-src") == (0, 6)
    state = stored_groups(data)
    assert state.offsets("mixg")[("mixed-src", 0)].offset == 9
    assert state.offsets("mixg")[("other-src", 0)].offset == 6
