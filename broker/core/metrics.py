"""What the broker counts for /metrics and the console (broker.console): Kafka's
BrokerTopicMetrics (messages and bytes in, bytes out; overall and per topic) and
RequestMetrics (requests and their total time per API), as plain numbers.

Cheap by design, since Produce and Fetch update them: an attribute add per batch or
partition answered, and per request one clock read and a bucket's add. Rates are the
scraper's business (Prometheus' rate()), as the JMX exporter publishes Kafka's meters' counts.
"""

from __future__ import annotations

import time
from bisect import bisect_left

# Upper bounds (ms) of the request time histogram's buckets; one more counts the rest.
LATENCY_BUCKETS_MS = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0)
_BUCKETS_S = tuple(b / 1000 for b in LATENCY_BUCKETS_MS)


class TopicCounters:
    __slots__ = ("bytes_in", "bytes_out", "messages_in")

    def __init__(self) -> None:
        self.messages_in = 0
        self.bytes_in = 0
        self.bytes_out = 0


class RequestTimes:
    """One API's requests answered and their total time (Kafka's TotalTimeMs), bucketed."""

    __slots__ = ("buckets", "count", "seconds")

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self.buckets = [0] * (len(_BUCKETS_S) + 1)


class BrokerMetrics:
    def __init__(self) -> None:
        self.started = time.time()
        self.total = TopicCounters()
        # Kafka removes a deleted topic's metrics; BrokerState.forget_topic does here.
        self.topics: dict[str, TopicCounters] = {}
        self.requests: dict[int, RequestTimes] = {}

    def topic(self, name: str) -> TopicCounters:
        counters = self.topics.get(name)
        if counters is None:
            counters = self.topics[name] = TopicCounters()
        return counters

    def appended(self, topic: str, records: int, size: int) -> None:
        """A batch appended (ReplicaManager: bytesInRate and messagesInRate per topic and
        for all topics)."""
        counters = self.topic(topic)
        counters.messages_in += records
        counters.bytes_in += size
        total = self.total
        total.messages_in += records
        total.bytes_in += size

    def sent(self, topic: str, size: int) -> None:
        """Record bytes in a Fetch answer (KafkaApis' updateBytesOut)."""
        self.topic(topic).bytes_out += size
        self.total.bytes_out += size

    def answered(self, api_key: int, seconds: float) -> None:
        times = self.requests.get(api_key)
        if times is None:
            times = self.requests[api_key] = RequestTimes()
        times.count += 1
        times.seconds += seconds
        times.buckets[bisect_left(_BUCKETS_S, seconds)] += 1
