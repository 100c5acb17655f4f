"""Transactions on the partition side: open transactions, markers, the LSO and .txnindex.

Kafka's rules (TRANSACTIONS.md §4-§6, §8): ProducerAppendInfo.appendDataBatch /
appendEndTxnMarker, LogSegment.updateTxnIndex, ProducerStateManager.firstUnstableOffset.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from protocol.errors import ErrorCode
from protocol.records import build_batch, decode_records, iter_batches, parse_header
from storage.partition_log import AppendResult, PartitionLog
from storage.segment import file_name
from storage.txn_index import AbortedTxn, read_entries

PID = 7000


def open_log(path: Path, segment_bytes: int = 1 << 20) -> PartitionLog:
    return PartitionLog.open(path, "t", 0, segment_bytes=segment_bytes, index_interval_bytes=256)


def txn_produce(
    plog: PartitionLog,
    n: int = 1,
    *,
    pid: int = PID,
    epoch: int = 0,
    seq: int = 0,
    verified: bool = True,
    transactional: bool = True,
) -> AppendResult:
    batch = bytearray(
        build_batch(
            [(None, b"v%d" % i) for i in range(n)],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            transactional=transactional,
            base_timestamp=1_000,
        )
    )
    return plog.append(batch, parse_header(batch), 1_000, verified=verified)


def plain_produce(plog: PartitionLog, n: int = 1) -> AppendResult:
    batch = bytearray(build_batch([(None, b"p")] * n, base_timestamp=1_000))
    return plog.append(batch, parse_header(batch), 1_000)


def stored(path: Path) -> list[tuple[int, bool, bool, int, int]]:
    """(base offset, transactional, control, producer id, epoch) of every stored batch."""
    data = b"".join((path / n).read_bytes() for n in sorted(os.listdir(path)) if n.endswith(".log"))
    return [
        (h.base_offset, h.is_transactional, h.is_control, h.producer_id, h.producer_epoch)
        for _, h in iter_batches(data)
    ]


def test_transactional_batch_without_verification_or_open_txn_is_invalid_txn_state(
    tmp_path: Path,
) -> None:
    plog = open_log(tmp_path / "t-0")
    assert txn_produce(plog, verified=False).error == ErrorCode.INVALID_TXN_STATE
    assert plog.log_end_offset == 0
    assert txn_produce(plog).error == ErrorCode.NONE
    # The transaction is open now: later batches need no verification.
    assert txn_produce(plog, seq=1, verified=False).error == ErrorCode.NONE
    plog.close()


def test_first_transactional_batch_pins_the_last_stable_offset(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    plain_produce(plog, 2)
    assert plog.last_stable_offset == 2
    txn_produce(plog, 3)
    txn_produce(plog, 1, seq=3)
    plain_produce(plog)
    assert (plog.log_end_offset, plog.last_stable_offset) == (7, 2)
    entry = plog.producers.get(PID)
    assert entry is not None and entry.current_txn_first_offset == 2
    plog.close()


def test_non_transactional_batch_during_open_txn_is_invalid_txn_state(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    txn_produce(plog)
    result = txn_produce(plog, seq=1, transactional=False)
    assert result.error == ErrorCode.INVALID_TXN_STATE
    plog.close()


def test_commit_marker_is_a_control_batch_and_releases_the_lso(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    txn_produce(plog, 2)
    result = plog.append_marker(PID, 0, 5, commit=True, now_ms=2_000)
    assert (result.error, result.base_offset) == (ErrorCode.NONE, 2)
    assert plog.last_stable_offset == plog.log_end_offset == 3
    entry = plog.producers.get(PID)
    assert entry is not None
    assert (entry.current_txn_first_offset, entry.coordinator_epoch) == (-1, 5)
    plog.flush()
    assert stored(path) == [(0, True, False, PID, 0), (2, True, True, PID, 0)]
    data = (path / file_name(0, ".log")).read_bytes()
    _, marker = list(iter_batches(data))[1]
    assert marker.base_sequence == -1 and marker.records_count == 1
    (record,) = decode_records(data[marker_pos(data) :][: marker.size], marker)
    # EndTransactionMarker: key (version 0, type 1 = COMMIT), value (version 0, coord epoch).
    assert record.key == struct.pack(">hh", 0, 1)
    assert record.value == struct.pack(">hi", 0, 5)
    assert not (path / file_name(0, ".txnindex")).exists()
    plog.close()


def marker_pos(data: bytes) -> int:
    return next(p for p, h in iter_batches(data) if h.is_control)


def test_abort_marker_writes_kafkas_txnindex_entry(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    txn_produce(plog, 2)  # 0-1
    txn_produce(plog, 1, pid=PID + 1)  # 2, still open when PID aborts
    plog.append_marker(PID, 0, 0, commit=False, now_ms=2_000)  # 3
    assert plog.last_stable_offset == 2
    expected = AbortedTxn(PID, first_offset=0, last_offset=3, last_stable_offset=2)
    assert plog.aborted_transactions(0, plog.log_end_offset) == [expected]
    plog.flush()
    raw = (path / file_name(0, ".txnindex")).read_bytes()
    assert raw == struct.pack(">hqqqq", 0, PID, 0, 3, 2)
    assert read_entries(path / file_name(0, ".txnindex")) == [expected]
    plog.close()


def test_markers_from_an_older_producer_or_coordinator_epoch_are_refused(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    txn_produce(plog, epoch=3)
    stale = plog.append_marker(PID, 2, 0, commit=True, now_ms=2_000)
    assert stale.error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert plog.append_marker(PID, 3, 4, commit=False, now_ms=2_000).error == ErrorCode.NONE
    fenced = plog.append_marker(PID, 3, 3, commit=False, now_ms=2_000)
    assert fenced.error == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    # A marker with no open transaction (a resend) changes nothing but is stored.
    assert plog.append_marker(PID, 3, 4, commit=False, now_ms=2_000).error == ErrorCode.NONE
    assert plog.aborted_transactions(0, plog.log_end_offset) == [AbortedTxn(PID, 0, 1, 2)]
    plog.close()


def test_aborted_transactions_cover_those_ending_at_or_after_the_fetch_offset(
    tmp_path: Path,
) -> None:
    plog = open_log(tmp_path / "t-0")
    txn_produce(plog)  # 0
    plog.append_marker(PID, 0, 0, commit=False, now_ms=2_000)  # 1
    txn_produce(plog, seq=1)  # 2
    plog.append_marker(PID, 0, 0, commit=True, now_ms=2_000)  # 3
    txn_produce(plog, seq=2)  # 4
    plog.append_marker(PID, 0, 0, commit=False, now_ms=2_000)  # 5
    first, second = AbortedTxn(PID, 0, 1, 2), AbortedTxn(PID, 4, 5, 6)
    assert plog.aborted_transactions(0, 6) == [first, second]
    assert plog.aborted_transactions(1, 6) == [first, second]
    assert plog.aborted_transactions(2, 6) == [second]
    assert plog.aborted_transactions(2, 4) == []
    plog.close()


def test_open_txn_and_coordinator_epoch_survive_a_clean_restart(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    txn_produce(plog, epoch=1)
    plog.append_marker(PID, 1, 9, commit=True, now_ms=2_000)
    txn_produce(plog, epoch=1, seq=1)
    plog.close()
    plog = PartitionLog.open(path, "t", 0, mode="clean")
    assert plog.recovery.replayed_batches == 0  # from the snapshot alone
    entry = plog.producers.get(PID)
    assert entry is not None
    assert (entry.current_txn_first_offset, entry.coordinator_epoch) == (2, 9)
    assert plog.last_stable_offset == 2
    plog.close()


def test_crash_recovery_rebuilds_open_txns_lso_and_the_aborted_index(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path)
    txn_produce(plog)  # 0
    plog.append_marker(PID, 0, 2, commit=False, now_ms=2_000)  # 1
    txn_produce(plog, seq=1)  # 2: open at the crash
    plog.flush()
    plog.close_unclean()
    # The crash lost the index file (and no snapshot vouches for anything): all rebuilt.
    (path / file_name(0, ".txnindex")).unlink(missing_ok=True)
    for name in os.listdir(path):
        if name.endswith(".snapshot"):
            os.unlink(path / name)
    plog = open_log(path)
    assert plog.recovery.replayed_batches == 3
    assert plog.last_stable_offset == 2
    assert plog.aborted_transactions(0, 3) == [AbortedTxn(PID, 0, 1, 2)]
    entry = plog.producers.get(PID)
    assert entry is not None
    assert (entry.current_txn_first_offset, entry.coordinator_epoch) == (2, 2)
    assert read_entries(path / file_name(0, ".txnindex")) == [AbortedTxn(PID, 0, 1, 2)]
    plog.close()


def test_a_producer_with_an_open_txn_never_expires(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    txn_produce(plog)
    assert plog.expire_producers(now_ms=10**12, expiration_ms=1) == 0
    plog.append_marker(PID, 0, 0, commit=True, now_ms=2_000)
    assert plog.expire_producers(now_ms=10**12, expiration_ms=1) == 1
    plog.close()


def test_the_txnindex_goes_with_its_segment(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path, segment_bytes=300)
    txn_produce(plog)
    plog.append_marker(PID, 0, 0, commit=False, now_ms=2_000)
    plog.roll(3_000)
    plain_produce(plog)
    assert (path / file_name(0, ".txnindex")).exists()
    plog.delete_records_before(plog.log_end_offset)
    assert not (path / file_name(0, ".txnindex")).exists()
    assert plog.aborted_transactions(0, plog.log_end_offset) == []
    plog.close()
