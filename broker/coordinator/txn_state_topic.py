"""``__transaction_state`` as a real, compacted topic, in Kafka 4.0's record formats.

The transaction coordinator's store is still ``storage.txn_state_log`` (replayed at start);
each record written there is also appended as Kafka's TransactionLogKey/Value
(protocol.transaction_log_records) to the partition Kafka picks for the transactional id
(``abs(transactionalId.hashCode) % transaction.state.log.num.partitions``); an expired id
(Dead) is a tombstone, as Kafka's removal of expired transactional ids writes. The groups
whose offsets a transaction carries appear as their ``__consumer_offsets`` partitions, as
AddOffsetsToTxn adds them in Kafka; a record that changes nothing Kafka keeps here (the
offsets a TxnOffsetCommit adds, which Kafka keeps in ``__consumer_offsets``) is not written.
The topic is created at the first FindCoordinator for a transactional id (or the first record), with
Kafka's transaction log configs (compacted, uncompressed, 100 MiB segments). A data
directory written before the topic existed gets its live records written once at start;
one with the topic but no transaction log gets that log rebuilt from the topic.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from broker.coordinator.internal_topic import InternalTopic
from broker.coordinator.transactions import DEFAULT_OFFSETS_PARTITIONS, partition_for
from protocol import transaction_log_records as tl
from protocol.records import CorruptBatchError, decode_records
from storage.partition_log import PartitionLog
from storage.store import Store, TopicInfo
from storage.txn_state_log import DEAD, EMPTY, TxnRecord, TxnStateLog

log = logging.getLogger(__name__)

TRANSACTION_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"
# TransactionStateManager.transactionTopicConfigs.
TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "compression.type": "uncompressed",
    "segment.bytes": "104857600",
}


class TxnStateTopic:
    """The listener of ``TxnStateLog`` that writes ``__transaction_state``."""

    def __init__(
        self,
        store: Store,
        partitions: int,
        set_configs: Callable[[TopicInfo, dict[str, str]], None],
        notify_appended: Callable[[Iterable[PartitionLog]], None],
        offsets_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
    ) -> None:
        self._offsets_partitions = offsets_partitions
        # Per live transactional id, what its last record said (update time aside).
        self._last: dict[str, tuple[object, ...]] = {}
        self.topic = InternalTopic(
            store, TRANSACTION_TOPIC, partitions, TOPIC_CONFIGS, set_configs, notify_appended
        )

    def ensure(self) -> None:
        self.topic.ensure()

    def start(self, txn_log: TxnStateLog, *, fresh_log: bool) -> None:
        """At start-up: a transaction log that did not exist yet is rebuilt from the topic
        when there is one; else the log's live records are written into a missing topic."""
        info = self.topic.info()
        if not fresh_log or info is None:
            self.migrate(txn_log)
            return
        loaded: dict[str, TxnRecord] = {}
        for plog in info.partitions:
            for header, data in plog.batches(plog.log_start_offset):
                if header.is_control or header.is_transactional:
                    continue
                try:
                    records = decode_records(data, header)
                except CorruptBatchError as exc:
                    log.warning("%s: skipped a corrupt batch: %s", plog.name, exc)
                    continue
                for r in records:
                    try:
                        _load(loaded, r.key, r.value)
                    except ValueError as exc:
                        log.warning("%s: skipped a record: %s", plog.name, exc)
        for record in loaded.values():
            txn_log.append(record)
            txn_log.records[record.transactional_id] = record
        log.info(
            "loaded %d transactional id(s) from %s into the transaction log",
            len(loaded),
            TRANSACTION_TOPIC,
        )

    def migrate(self, txn_log: TxnStateLog) -> None:
        """Write the live records of a data directory that predates the topic into it."""
        if self.topic.exists() or not txn_log.records:
            return
        self.topic.ensure()
        for record in txn_log.records.values():
            self.written(record)
        log.info(
            "wrote %d transactional id(s) from the transaction log into %s",
            len(txn_log.records),
            TRANSACTION_TOPIC,
        )

    def written(self, record: TxnRecord) -> None:
        kafka_record = _kafka_record(record, self._offsets_partitions)
        # The coordinator's log also records what Kafka keeps elsewhere (the offsets a
        # TxnOffsetCommit adds, in __consumer_offsets): a record Kafka would not write, the
        # same transaction state again, is left out.
        seen = (
            record.producer_id,
            record.producer_epoch,
            record.state,
            *_without_update_time(record),
        )
        if self._last.get(record.transactional_id) == seen:
            return
        if record.state == DEAD:
            self._last.pop(record.transactional_id, None)
        else:
            self._last[record.transactional_id] = seen
        self.topic.append(record.transactional_id, [kafka_record])


def _without_update_time(record: TxnRecord) -> tuple[object, ...]:
    return (
        record.timeout_ms,
        tuple(record.partitions),
        tuple(record.groups),
        record.start_ms,
        record.client_transaction_version,
    )


def _kafka_record(record: TxnRecord, offsets_partitions: int) -> tuple[bytes, bytes | None]:
    key = tl.encode_key(record.transactional_id)
    if record.state == DEAD:
        return key, None
    topics: dict[str, list[int]] = {}
    for topic, partition in record.partitions:
        topics.setdefault(topic, []).append(partition)
    # AddOffsetsToTxn adds the group's __consumer_offsets partition to Kafka's transaction
    # (kept apart here, as the groups whose offsets the transaction carries).
    for group in record.groups:
        partition = partition_for(group, offsets_partitions)
        if partition not in topics.setdefault(OFFSETS_TOPIC, []):
            topics[OFFSETS_TOPIC].append(partition)
    value = {
        "producer_id": record.producer_id,
        "producer_epoch": record.producer_epoch,
        "transaction_timeout_ms": record.timeout_ms,
        "transaction_status": record.state,
        "transaction_partitions": None
        if record.state == EMPTY
        else [{"topic": t, "partition_ids": ps} for t, ps in topics.items()],
        "transaction_last_update_timestamp_ms": record.last_update_ms,
        "transaction_start_timestamp_ms": record.start_ms,
        "client_transaction_version": record.client_transaction_version,
    }
    return key, tl.encode_value(value)


def _load(loaded: dict[str, TxnRecord], key: bytes | None, value: bytes | None) -> None:
    """One record of the topic replayed (TransactionStateManager's load: the latest value
    of an id wins, a tombstone removes it). What Kafka does not keep (the groups of an open
    transaction and their pending offsets, the last epoch) comes back empty."""
    if key is None:
        raise ValueError("a record without a key")
    txn_id = tl.decode_key(key).transactional_id
    if value is None:
        loaded.pop(txn_id, None)
        return
    _, v = tl.decode_value(value)
    partitions = [
        (entry.topic, p)
        for entry in v.transaction_partitions or []
        if entry.topic != OFFSETS_TOPIC
        for p in entry.partition_ids
    ]
    loaded[txn_id] = TxnRecord(
        transactional_id=txn_id,
        producer_id=v.producer_id,
        previous_producer_id=v.previous_producer_id,
        next_producer_id=v.next_producer_id,
        producer_epoch=v.producer_epoch,
        last_producer_epoch=-1,
        timeout_ms=v.transaction_timeout_ms,
        state=v.transaction_status,
        partitions=partitions,
        start_ms=v.transaction_start_timestamp_ms,
        last_update_ms=v.transaction_last_update_timestamp_ms,
        client_transaction_version=v.client_transaction_version,
    )
