"""What the log cleaner knows of transactions while it walks a log (Kafka's
CleanedTransactionMetadata): which batches belong to aborted transactions (removed), and
when a COMMIT or ABORT marker may go (once no batch of its transaction is left).

``aborted`` are the log's aborted transactions (from the ``.txnindex`` files) of the range
walked; each is "ongoing" from its first offset until its marker. ``cleaned_index`` collects
the entries the cleaned segment's ``.txnindex`` keeps: those whose marker stays because a
batch of the transaction was still met.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from protocol.records import CONTROL_ABORT, CONTROL_COMMIT, BatchHeader, decode_records

from .txn_index import AbortedTxn


@dataclass(slots=True)
class _Aborted:
    txn: AbortedTxn
    last_observed_batch_offset: int | None = None


class CleanedTxns:
    def __init__(self) -> None:
        self._committed: set[int] = set()
        self._aborted: dict[int, _Aborted] = {}
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # min-heap by first offset
        self._seq = 0
        # Entries for the .txnindex of the segment being written (None: building the map).
        self.cleaned_index: list[AbortedTxn] | None = None

    def add_aborted(self, txns: list[AbortedTxn]) -> None:
        for txn in txns:
            self._seq += 1
            heapq.heappush(self._pending, (txn.first_offset, self._seq, txn))

    def _consume_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            txn = heapq.heappop(self._pending)[2]
            self._aborted.setdefault(txn.producer_id, _Aborted(txn))

    def on_control_batch(self, header: BatchHeader, batch: bytes) -> bool:
        """True when the marker may be discarded (onControlBatchRead)."""
        self._consume_up_to(header.last_offset)
        records = decode_records(batch, header) if header.records_count else []
        if not records:
            return True  # an empty control batch was cleaned already
        key = records[0].key or b""
        kind = int.from_bytes(key[2:4], "big", signed=True) if len(key) >= 4 else -1
        pid = header.producer_id
        if kind == CONTROL_ABORT:
            meta = self._aborted.pop(pid, None)
            # Kept until every batch of the transaction has been removed.
            if meta is not None and meta.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(meta.txn)
                return False
            return True
        if kind == CONTROL_COMMIT:
            # Removable when no batch of the transaction was met.
            if pid in self._committed:
                self._committed.discard(pid)
                return False
            return True
        return False

    def on_batch(self, header: BatchHeader) -> bool:
        """True when the data batch belongs to an aborted transaction (onBatchRead)."""
        self._consume_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        meta = self._aborted.get(header.producer_id)
        if meta is not None:
            meta.last_observed_batch_offset = header.last_offset
            return True
        self._committed.add(header.producer_id)
        return False
