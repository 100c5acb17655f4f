"""An internal topic a coordinator writes its records into (``__consumer_offsets``,
``__transaction_state``): created on first use with its compacted configs, each change
appended as one batch, without a producer id, to the partition of its key.

A topic that is its coordinator's store (``is_store=True``: ``__consumer_offsets``) raises
``InternalTopicWriteError`` when an append fails, so the request that made the change fails
too, and ``flush`` fsyncs the partitions appended to since the last flush (a worker thread
may run it while the event loop appends). Otherwise the topic mirrors the coordinator's
own log: a failed append is logged and dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from broker.coordinator.transactions import partition_for
from protocol.records import build_batch, parse_header
from storage.partition_log import PartitionLog
from storage.store import Store, TopicInfo

log = logging.getLogger(__name__)

KafkaRecord = tuple[bytes, bytes | None]


class InternalTopicWriteError(OSError):
    """An append to a coordinator's store topic failed: the change is not stored."""


class InternalTopic:
    def __init__(
        self,
        store: Store,
        name: str,
        partitions: int,
        configs: dict[str, str],
        set_configs: Callable[[TopicInfo, dict[str, str]], None],
        notify_appended: Callable[[Iterable[PartitionLog]], None],
        *,
        is_store: bool = False,
    ) -> None:
        self.name = name
        self._is_store = is_store
        # Partitions appended to since the last flush (swapped under the lock: flush runs
        # in a worker thread).
        self._unflushed: set[PartitionLog] = set()
        self._lock = threading.Lock()
        self._store = store
        self._partitions = partitions
        self._configs = configs
        self._set_configs = set_configs
        self._notify = notify_appended

    def exists(self) -> bool:
        return self._store.topic(self.name) is not None

    def info(self) -> TopicInfo | None:
        return self._store.topic(self.name)

    def ensure(self) -> TopicInfo:
        """The topic, created with its configs and partition count when missing."""
        info = self._store.topic(self.name)
        if info is None:
            info = self._store.create_topic(self.name, self._partitions)
            self._set_configs(info, dict(self._configs))
            log.info("created %s with %d partition(s)", self.name, self._partitions)
        return info

    def append(
        self,
        key: str,
        records: list[KafkaRecord],
        producer: tuple[int, int] | None = None,
    ) -> int:
        """One batch of ``records`` at the end of ``key``'s partition; with ``producer``
        (producer id, epoch) a transactional batch of that producer, as Kafka's group
        coordinator writes TxnOffsetCommit's offsets. The batch's base offset (-1 when
        nothing was written)."""
        if not records:
            return -1
        try:
            info = self.ensure()
            plog = info.partitions[partition_for(key, len(info.partitions))]
            now_ms = int(time.time() * 1000)
            if producer is None:
                batch = bytearray(build_batch(records, base_timestamp=now_ms))
            else:
                batch = bytearray(
                    build_batch(
                        records,
                        producer_id=producer[0],
                        producer_epoch=producer[1],
                        transactional=True,
                        base_timestamp=now_ms,
                    )
                )
            # A transactional batch: the transaction coordinator has the group's partition in
            # the transaction (AddOffsetsToTxn), which is what verification checks.
            result = plog.append(
                batch,
                parse_header(batch),
                now_ms,
                verified=producer is not None,
                coordinator=producer is not None,
            )
        except Exception as exc:
            log.exception("could not append %r's records to %s", key, self.name)
            if self._is_store:
                raise InternalTopicWriteError(f"{self.name}: {exc}") from exc
            return -1
        if not self._appended(plog, result.error, f"{key!r}'s records"):
            return -1
        return result.base_offset

    def append_marker(
        self, key: str, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> None:
        """The transaction's COMMIT/ABORT marker at the end of ``key``'s partition (Kafka's
        transaction coordinator sends it to the group coordinator's partition)."""
        info = self.ensure()
        plog = info.partitions[partition_for(key, len(info.partitions))]
        now_ms = int(time.time() * 1000)
        try:
            result = plog.append_marker(
                producer_id, producer_epoch, coordinator_epoch, commit=commit, now_ms=now_ms
            )
        except Exception as exc:
            log.exception("could not append a marker for %r to %s", key, self.name)
            raise InternalTopicWriteError(f"{self.name}: {exc}") from exc
        self._appended(plog, result.error, f"the marker for {key!r}")

    def _appended(self, plog: PartitionLog, error: int, what: str) -> bool:
        if error:
            log.warning("%s not appended to %s: %s", what, self.name, error)
            if self._is_store:
                raise InternalTopicWriteError(f"{self.name}: error {error}")
            return False
        with self._lock:
            self._unflushed.add(plog)
        self._notify([plog])
        return True

    def flush(self) -> None:
        """fsync every partition appended to since the last flush."""
        with self._lock:
            logs, self._unflushed = self._unflushed, set()
        try:
            for plog in logs:
                plog.flush()
        except BaseException:
            with self._lock:
                self._unflushed |= logs  # the next flush tries them again
            raise
