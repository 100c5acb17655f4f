"""The single owner of mutable broker state: config, the store, producer ids, connections."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from broker.flusher import Flusher
from storage.producer_ids import ProducerIdAllocator
from storage.store import Store, TopicInfo

if TYPE_CHECKING:
    from broker.config import Config
    from broker.connection import KafkaConnection
    from broker.dispatch import Dispatcher
    from broker.groups import GroupCoordinator

log = logging.getLogger(__name__)


class BrokerState:
    # Consumer groups and committed offsets; set by the server once the store is open.
    groups: GroupCoordinator

    def __init__(
        self,
        config: Config,
        store: Store,
        producer_ids: ProducerIdAllocator,
        dispatcher: Dispatcher,
    ) -> None:
        self.config = config
        self.dispatcher = dispatcher
        self.store = store
        self.producer_ids = producer_ids
        self.node_id = config.node_id
        self.connections: set[KafkaConnection] = set()
        self.flusher = Flusher()
        self.shutting_down = False
        self._appended = asyncio.Event()

    def append_signal(self) -> asyncio.Event:
        """An event set at the next append (long-polling fetches wait on it)."""
        return self._appended

    def notify_appended(self) -> None:
        # Wake every waiter once, then start a fresh event for the next round.
        self._appended.set()
        self._appended = asyncio.Event()

    @property
    def cluster_id(self) -> str:
        return self.store.cluster_id

    def auto_create_topic(self, name: str) -> TopicInfo:
        info = self.store.create_topic(name, self.config.num_partitions)
        log.info("auto-created topic %r with %d partition(s)", name, self.config.num_partitions)
        return info
