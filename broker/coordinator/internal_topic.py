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

    def append(self, key: str, records: list[KafkaRecord]) -> None:
        """One batch of ``records`` at the end of ``key``'s partition."""
        if not records:
            return
        try:
            info = self.ensure()
            plog = info.partitions[partition_for(key, len(info.partitions))]
            now_ms = int(time.time() * 1000)
            batch = bytearray(build_batch(records, base_timestamp=now_ms))
            result = plog.append(batch, parse_header(batch), now_ms)
        except Exception as exc:
            log.exception("could not append %r's records to %s", key, self.name)
            if self._is_store:
                raise InternalTopicWriteError(f"{self.name}: {exc}") from exc
            return
        if result.error:
            log.warning("%r's records not appended to %s: %s", key, self.name, result.error)
            if self._is_store:
                raise InternalTopicWriteError(f"{self.name}: error {result.error}")
            return
        with self._lock:
            self._unflushed.add(plog)
        self._notify([plog])

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
