"""Long-polling fetches parked until data arrives on one of THEIR partitions.

Kafka parks a Fetch that cannot be answered yet in the delayed-fetch purgatory
(DelayedOperationPurgatory[DelayedFetch]), watched under one TopicPartitionOperationKey per
partition it reads; an append calls checkAndComplete for the partitions it wrote
(ReplicaManager.addCompletePurgatoryAction), so it wakes only the fetches that read one of
them. Deleting a topic completes the fetches on its partitions
(ReplicaManager.completeDelayedFetchOrProduceRequests); shutting down completes all.

A watcher is an asyncio future registered under each of its keys: ``watch`` before reading
(so an append between the read and the wait is not missed), ``wait`` with the remaining
time, ``cancel`` when done. Waking is O(watchers of that partition), whatever the number
of fetches parked elsewhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

# (topic name, partition index): the same key for an append and for the fetches reading it.
PartitionKey = tuple[str, int]


class Watch:
    """One parked fetch, watching a set of partitions."""

    __slots__ = ("_future", "_keys", "_purgatory")

    def __init__(self, purgatory: FetchPurgatory, keys: list[PartitionKey]) -> None:
        self._purgatory = purgatory
        self._keys = keys
        self._future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @property
    def woken(self) -> bool:
        return self._future.done()

    def wake(self) -> None:
        if not self._future.done():
            self._future.set_result(None)

    async def wait(self, timeout: float) -> bool:
        """True when woken by an append, False when ``timeout`` seconds passed first."""
        if self._future.done():
            return True
        try:
            await asyncio.wait_for(self._future, max(timeout, 0))
        except TimeoutError:
            return False
        return True

    def cancel(self) -> None:
        self._purgatory.unwatch(self, self._keys)
        self.wake()


class FetchPurgatory:
    def __init__(self) -> None:
        self._watchers: dict[PartitionKey, set[Watch]] = {}

    def watch(self, keys: Iterable[PartitionKey]) -> Watch:
        unique = list(dict.fromkeys(keys))
        watch = Watch(self, unique)
        for key in unique:
            self._watchers.setdefault(key, set()).add(watch)
        return watch

    def unwatch(self, watch: Watch, keys: Iterable[PartitionKey]) -> None:
        for key in keys:
            watchers = self._watchers.get(key)
            if watchers is None:
                continue
            watchers.discard(watch)
            if not watchers:
                del self._watchers[key]

    def check_and_complete(self, key: PartitionKey) -> int:
        """Wake the fetches watching ``key``; how many were woken."""
        watchers = self._watchers.get(key)
        if not watchers:
            return 0
        for watch in list(watchers):
            watch.wake()
        return len(watchers)

    def complete_all(self) -> None:
        for watchers in list(self._watchers.values()):
            for watch in list(watchers):
                watch.wake()

    def size(self) -> int:
        """Kafka's PurgatorySize: parked fetches counted once per partition they watch."""
        return sum(len(watchers) for watchers in self._watchers.values())

    def watched(self) -> int:
        """Number of partition keys with a parked fetch (for tests and diagnostics)."""
        return len(self._watchers)
