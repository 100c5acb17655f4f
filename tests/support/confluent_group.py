"""confluent-kafka group members on threads, for consumer-group tests with a real client:
records spread over a topic's partitions, and a member that subscribes, reads and commits
what it read when partitions are revoked and at close. Import it after
``pytest.importorskip("confluent_kafka")``."""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping

import confluent_kafka

# KIP-848 members that react fast: Kafka's 5 s heartbeat interval (and 45 s session) would
# make each hand-over slow.
QUICK_CONSUMER_GROUPS = {
    "group.consumer.heartbeat.interval.ms": "200",
    "group.consumer.session.timeout.ms": "6000",
}


def produce_spread(bootstrap: str, topic: str, partitions: int, count: int, start: int) -> None:
    """Records ``start`` .. ``start + count - 1`` (their numbers as values), record i to
    partition i % partitions, all acknowledged (acks=all)."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(start, start + count):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(10) == 0


class CommittingConsumer(threading.Thread):
    """A group member reading ``topic``: ``read`` is every (partition, offset) it got, and it
    commits its positions in the partitions revoked from it (``retriable`` commit errors are
    retried, up to five tries) and at close. With ``forget_revoked``, a revoked partition's
    position is dropped, so a stale one is never committed over another member's commit."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        name: str,
        *,
        protocol: str = "consumer",
        retriable: Collection[int],
        forget_revoked: bool,
        settings: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.topic = topic
        self.protocol = protocol
        self.retriable = retriable
        self.forget_revoked = forget_revoked
        self.read: list[tuple[int, int]] = []
        self.assignment: set[int] = set()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.positions: dict[int, int] = {}
        self.consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": protocol,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "client.id": name,
                **(settings or {}),
            }
        )

    def _commit(self, partitions: list[object]) -> None:
        offsets = [
            confluent_kafka.TopicPartition(self.topic, p.partition, self.positions[p.partition])  # type: ignore[attr-defined]
            for p in partitions
            if p.partition in self.positions  # type: ignore[attr-defined]
        ]
        for attempt in range(5):
            if not offsets:
                return
            try:
                self.consumer.commit(offsets=offsets, asynchronous=False)
                return
            except confluent_kafka.KafkaException as e:
                if e.args[0].code() not in self.retriable or attempt == 4:
                    raise

    def _on_assign(self, consumer: object, partitions: list[object]) -> None:
        self.assignment |= {p.partition for p in partitions}  # type: ignore[attr-defined]

    def _on_revoke(self, consumer: object, partitions: list[object]) -> None:
        self._commit(partitions)
        revoked = {p.partition for p in partitions}  # type: ignore[attr-defined]
        self.assignment -= revoked
        if self.forget_revoked:
            for partition in revoked:
                self.positions.pop(partition, None)

    def run(self) -> None:
        try:
            self.consumer.subscribe(
                [self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke
            )
            while not self.stop.is_set():
                msg = self.consumer.poll(0.1)
                if msg is None or msg.error():
                    continue
                self.read.append((msg.partition(), msg.offset()))
                self.positions[msg.partition()] = msg.offset() + 1
            self.consumer.close()  # revokes (and so commits) everything, then leaves
        except BaseException as e:
            self.error = e
