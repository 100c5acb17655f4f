"""__transaction_state as Kafka shows it: created at the first FindCoordinator for a
transactional id, listed as internal with transaction.state.log.num.partitions partitions,
compacted, holding Kafka's TransactionLogKey/Value records at the partition Kafka picks for
the id, a tombstone when the id expires; checked on the partition's segment files."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol import transaction_log_records as tl
from tests.support.broker_process import BrokerProcess, running
from tests.support.compaction import read_partition
from tests.support.internal_topics import java_partition
from tests.support.polling import until_sync

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")

TOPIC = "__transaction_state"
SETTINGS = {"transaction.state.log.num.partitions": "5"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running(tmp_path / "data", SETTINGS) as proc:
        yield proc


def transact(broker: BrokerProcess, txn_id: str) -> None:
    """One committed transaction over two partitions of 'ledger'."""
    admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    if "ledger" not in admin.list_topics(timeout=10).topics:
        admin.create_topics([confluent_admin.NewTopic("ledger", 2, 1)])["ledger"].result(10)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id}
    )
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce("ledger", value=b"x", partition=1)
    producer.produce("ledger", value=b"y", partition=0)
    producer.commit_transaction(15)


def states(data_dir: Path, txn_id: str) -> list[tuple[int, object]]:
    """(status, value) per stored record of ``txn_id``; status -1 for a tombstone."""
    out: list[tuple[int, object]] = []
    for r in read_partition(data_dir, TOPIC, java_partition(txn_id, 5)):
        assert r.key is not None and tl.decode_key(r.key).transactional_id == txn_id
        if r.value is None:
            out.append((-1, None))
        else:
            version, value = tl.decode_value(r.value)
            assert version == 1
            out.append((value.transaction_status, value))
    return out


def test_a_transaction_writes_kafkas_transaction_log_records(broker: BrokerProcess) -> None:
    admin = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    assert TOPIC not in admin.list_topics(timeout=10).topics
    transact(broker, "payments-tx")

    listed = admin.list_topics(timeout=10).topics
    assert TOPIC in listed and len(listed[TOPIC].partitions) == 5
    configs = admin.describe_configs(
        [confluent_admin.ConfigResource(confluent_admin.ResourceType.TOPIC, TOPIC)]
    )
    [entries] = [f.result(10) for f in configs.values()]
    assert entries["cleanup.policy"].value == "compact"

    stored = states(broker.data_dir, "payments-tx")
    # Empty (InitProducerId), Ongoing, PrepareCommit, CompleteCommit.
    assert [s for s, _ in stored] == [0, 1, 2, 4]
    empty, ongoing, prepare, complete = (v for _, v in stored)
    assert empty.transaction_partitions is None and empty.transaction_start_timestamp_ms == -1
    for value in (ongoing, prepare):
        [entry] = value.transaction_partitions
        assert (entry.topic, sorted(entry.partition_ids)) == ("ledger", [0, 1])
    assert complete.transaction_partitions == []
    assert len({v.producer_id for _, v in stored}) == 1
    assert complete.transaction_timeout_ms == 60000
    others = [p for p in range(5) if p != java_partition("payments-tx", 5)]
    assert all(read_partition(broker.data_dir, TOPIC, p) == [] for p in others)


def test_an_expired_transactional_id_leaves_a_tombstone(tmp_path: Path) -> None:
    settings = {
        **SETTINGS,
        "transactional.id.expiration.ms": "1000",
        "transaction.remove.expired.transaction.cleanup.interval.ms": "200",
    }
    with running(tmp_path / "data", settings) as proc:
        transact(proc, "short-lived")
        assert until_sync(lambda: states(proc.data_dir, "short-lived")[-1][0] == -1, 20)


def transacted(tmp_path: Path, txn_id: str) -> Path:
    """A data directory where ``txn_id`` committed one transaction (the broker stopped)."""
    data = tmp_path / "data"
    with running(data, SETTINGS) as first:
        transact(first, txn_id)
    return data


def test_a_data_directory_from_before_the_topic_is_written_into_it_at_start(
    tmp_path: Path,
) -> None:
    data = transacted(tmp_path, "legacy-tx")
    # As a data directory of the version before __transaction_state: the private log only.
    for path in data.glob(f"{TOPIC}-*"):
        shutil.rmtree(path)
    with running(data, SETTINGS):
        assert [s for s, _ in states(data, "legacy-tx")] == [4]


def test_without_the_transaction_log_the_ids_are_read_back_from_the_topic(
    tmp_path: Path,
) -> None:
    data = transacted(tmp_path, "remembered-tx")
    before = states(data, "remembered-tx")[-1][1]
    # The coordinator's own log gone: the next version loads from the topic alone.
    (data / "transaction-state.log").unlink()
    with running(data, SETTINGS) as second:
        assert "loaded 1 transactional id(s) from __transaction_state" in second.log_text()
        # The id keeps its producer id: InitProducerId bumps the epoch of the one it had.
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": second.bootstrap, "transactional.id": "remembered-tx"}
        )
        producer.init_transactions(15)
        after = states(data, "remembered-tx")[-1][1]
    assert after.producer_id == before.producer_id
    assert after.producer_epoch == before.producer_epoch + 1
    assert (data / "transaction-state.log").stat().st_size > 0
