"""What the broker counts for /metrics and the console (broker.console): Kafka's
BrokerTopicMetrics (messages and bytes in, bytes out; per topic, totals summed when read)
and RequestMetrics (requests and their total time per API), as plain numbers.

Cheap by design, since Produce and Fetch update them: per batch appended or partition
answered a dictionary lookup and attribute adds; per request one more clock read and a
bucket's add. Rates are the scraper's business (Prometheus' rate()), as the JMX exporter
publishes the counts of Kafka's meters.
"""

from __future__ import annotations

import time
from bisect import bisect_left

# Upper bounds (ms) of the request time histogram's buckets; one more counts the rest.
LATENCY_BUCKETS_MS = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0)
_BUCKETS_S = tuple(b / 1000 for b in LATENCY_BUCKETS_MS)
# Above every API key and version Kafka 4.0 defines: requests index lists.
_API_KEYS = 128
_VERSIONS = 32


class TopicCounters:
    __slots__ = ("bytes_in", "bytes_out", "messages_in")

    def __init__(self) -> None:
        self.messages_in = 0
        self.bytes_in = 0
        self.bytes_out = 0

    def add(self, other: TopicCounters) -> None:
        self.messages_in += other.messages_in
        self.bytes_in += other.bytes_in
        self.bytes_out += other.bytes_out


class RequestTimes:
    """One API's requests answered per version (Kafka's RequestsPerSec has a version tag)
    and their total time (TotalTimeMs), bucketed."""

    __slots__ = ("buckets", "seconds", "versions")

    def __init__(self) -> None:
        self.seconds = 0.0
        self.buckets = [0] * (len(_BUCKETS_S) + 1)
        self.versions = [0] * _VERSIONS

    @property
    def count(self) -> int:
        return sum(self.buckets)


class BrokerMetrics:
    def __init__(self) -> None:
        self.started = time.time()
        # Kafka removes a deleted topic's metrics (BrokerState.forget_topic calls forget);
        # its counts stay in the totals.
        self.topics: dict[str, TopicCounters] = {}
        self._gone = TopicCounters()
        self._requests = [RequestTimes() for _ in range(_API_KEYS)]

    def topic(self, name: str) -> TopicCounters:
        counters = self.topics.get(name)
        if counters is None:
            counters = self.topics[name] = TopicCounters()
        return counters

    def forget(self, name: str) -> None:
        counters = self.topics.pop(name, None)
        if counters is not None:
            self._gone.add(counters)

    @property
    def total(self) -> TopicCounters:
        total = TopicCounters()
        total.add(self._gone)
        for counters in self.topics.values():
            total.add(counters)
        return total

    def appended(self, topic: str, records: int, size: int) -> None:
        """A batch appended (ReplicaManager: the topic's bytesInRate and messagesInRate)."""
        counters = self.topics.get(topic) or self.topic(topic)
        counters.messages_in += records
        counters.bytes_in += size

    def sent(self, topic: str, size: int) -> None:
        """Record bytes in a Fetch answer (KafkaApis' updateBytesOut)."""
        (self.topics.get(topic) or self.topic(topic)).bytes_out += size

    def answered(self, api_key: int, version: int, seconds: float) -> None:
        times = self._requests[api_key]
        times.versions[version] += 1
        times.seconds += seconds
        times.buckets[bisect_left(_BUCKETS_S, seconds)] += 1

    @property
    def requests(self) -> dict[int, RequestTimes]:
        """The APIs that were called."""
        return {key: t for key, t in enumerate(self._requests) if t.seconds or any(t.buckets)}
