"""Transactions v2 (KIP-890 part 2) over raw sockets, as Java 4.x drives them: Produce v12
adds its partition to the transaction, TxnOffsetCommit v5 adds the group's offsets
partition, EndTxn v5 bumps the epoch at every end (TransactionCoordinator.endTransaction's
TV2 table) and answers the new producer id and epoch; ApiVersions finalizes
transaction.version 2. Checked on the answers and on the stored markers.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.end_txn import END_TXN
from protocol.schema import Message
from tests.e2e.test_transactions_admin import describe
from tests.e2e.test_transactions_clients import markers
from tests.e2e.test_transactions_raw import (
    TXN,
    init_ids,
    lso_and_aborted,
    txn_commit_offset,
    txn_produce,
)
from tests.support.broker_process import BrokerProcess
from tests.support.group_offsets import fetch_committed
from tests.support.produce import batch, create_topic
from tests.support.raw_client import SOFTWARE, RawClient


def end_v5(client: RawClient, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    answer = client.request(
        END_TXN,
        5,
        Message(transactional_id=TXN, producer_id=pid, producer_epoch=epoch, committed=commit),
    )
    return answer.error_code, answer.producer_id, answer.producer_epoch


def test_produce_v12_adds_the_partition_and_end_txn_v5_bumps_the_epoch(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "tv2-p")
        pid, epoch = init_ids(c, version=5)
        # Produce v11 still only verifies: the partition is not in the transaction.
        data = batch(pid, epoch, 0, transactional=True)
        assert txn_produce(c, "tv2-p", data, version=11) == ErrorCode.TRANSACTION_ABORTABLE
        assert txn_produce(c, "tv2-p", data, version=12) == ErrorCode.NONE
        (state,) = describe(c, TXN)
        assert state.transaction_state == "Ongoing"
        assert [(t.topic, list(t.partitions)) for t in state.topics] == [("tv2-p", [0])]
        assert lso_and_aborted(c, "tv2-p") == (2, 0, [])
        assert end_v5(c, pid, epoch, commit=True) == (0, pid, epoch + 1)
        assert lso_and_aborted(c, "tv2-p") == (3, 3, [])
        # The old epoch is fenced on the partition; the new one starts at sequence 0.
        old = batch(pid, epoch, 2, transactional=True)
        assert txn_produce(c, "tv2-p", old, version=12) == ErrorCode.INVALID_PRODUCER_EPOCH
        fresh = batch(pid, epoch + 1, 0, transactional=True)
        assert txn_produce(c, "tv2-p", fresh, version=12) == ErrorCode.NONE
        assert end_v5(c, pid, epoch + 1, commit=False) == (0, pid, epoch + 2)
        assert lso_and_aborted(c, "tv2-p") == (6, 6, [(pid, 3)])
    # Markers carry the bumped epoch (TransactionMetadata.prepareAbortOrCommit).
    assert markers(broker.data_dir, "tv2-p") == [(2, 1, epoch + 1), (5, 0, epoch + 2)]


def test_end_txn_v5_follows_kafkas_retry_and_state_table(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "tv2-e")
        pid, e = init_ids(c, version=5)
        # Empty: commit -> INVALID_TXN_STATE; abort -> an epoch bump without markers.
        assert end_v5(c, pid, e, commit=True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
        assert end_v5(c, pid, e, commit=False) == (0, pid, e + 1)
        # CompleteAbort: the same abort again (epoch + 1 = stored) is a retry -> NONE.
        assert end_v5(c, pid, e, commit=False) == (0, pid, e + 1)
        assert end_v5(c, pid, e, commit=True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
        assert end_v5(c, pid, e - 1, commit=False) == (ErrorCode.PRODUCER_FENCED, -1, -1)
        assert end_v5(c, pid + 1, e + 1, commit=False) == (
            ErrorCode.INVALID_PRODUCER_ID_MAPPING,
            -1,
            -1,
        )
        e += 1
        assert txn_produce(c, "tv2-e", batch(pid, e, 0, transactional=True), version=12) == 0
        assert end_v5(c, pid, e, commit=True) == (0, pid, e + 1)
        # CompleteCommit: a commit retry -> NONE; an abort retry -> INVALID_TXN_STATE; a commit
        # at the current epoch -> INVALID_TXN_STATE; an abort at the current epoch -> bump.
        assert end_v5(c, pid, e, commit=True) == (0, pid, e + 1)
        assert end_v5(c, pid, e, commit=False) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
        assert end_v5(c, pid, e + 1, commit=True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
        assert end_v5(c, pid, e + 1, commit=False) == (0, pid, e + 2)
        (state,) = describe(c, TXN)
        assert (state.transaction_state, state.producer_epoch) == ("CompleteAbort", e + 2)
    # Only the transaction with data wrote a marker.
    assert [kind for _, kind, _ in markers(broker.data_dir, "tv2-e")] == [1]


def test_txn_offset_commit_v5_adds_the_offsets_partition(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "tv2-o")
        pid, epoch = init_ids(c, version=5)

        def commit_offset(version: int, offset: int) -> int:
            return txn_commit_offset(c, "tv2-group", "tv2-o", (pid, epoch), offset, version)

        def fetch_offset() -> tuple[int, int]:
            return fetch_committed(c, "tv2-group", "tv2-o")

        # v4 only verifies (AddOffsetsToTxn missing); v5 adds the group's partition itself.
        assert commit_offset(4, 7) == ErrorCode.INVALID_TXN_STATE
        assert commit_offset(5, 7) == ErrorCode.NONE
        (state,) = describe(c, TXN)
        assert state.transaction_state == "Ongoing"
        assert [t.topic for t in state.topics] == ["__consumer_offsets"]
        assert fetch_offset() == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        assert end_v5(c, pid, epoch, commit=True) == (0, pid, epoch + 1)
        assert fetch_offset() == (0, 7)


def test_api_versions_finalizes_transaction_version_2(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        for version in (3, 4):
            answer = c.request(API_VERSIONS, version, SOFTWARE)
            ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
            assert ranges[0][1] == 12 and ranges[26] == (0, 5) and ranges[28] == (0, 5)
            finalized = {
                f.name: (f.min_version_level, f.max_version_level)
                for f in answer.finalized_features
            }
            assert finalized["transaction.version"] == (2, 2)
