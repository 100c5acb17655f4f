"""The console's pieces on their own: the Prometheus text it writes (read back with
Prometheus' own parser), the request time buckets, the listener setting, the escaping of
what clients stored."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker.config.loader import make_config
from broker.config.model import ConfigError
from broker.console import browse
from broker.console.exposition import Family, render
from broker.console.pages import Rates, _shown, table
from broker.core.metrics import LATENCY_BUCKETS_MS, BrokerMetrics
from protocol.records import build_batch, parse_header
from storage.batch_filter import _empty
from storage.log_config import LogConfig
from storage.partition_log import PartitionLog


def parsed(text: str) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    return {
        family.name: [(s.name, s.labels, s.value) for s in family.samples]
        for family in text_string_to_metric_families(text)
    }


def test_counters_and_gauges_read_back_with_their_labels_escaped() -> None:
    counter = Family("kafka_server_brokertopicmetrics_messagesin_total", "counter", "In.")
    counter.add(12)
    awkward = 'a"b\\c\nd'
    counter.add(5, topic=awkward)
    gauge = Family("kafka_log_log_size", "gauge", "Size\nwith a \\ newline.")
    gauge.add(1.5, topic="t", partition="0")
    families = parsed(render([counter, gauge]))
    assert families["kafka_server_brokertopicmetrics_messagesin"] == [
        ("kafka_server_brokertopicmetrics_messagesin_total", {}, 12),
        ("kafka_server_brokertopicmetrics_messagesin_total", {"topic": awkward}, 5),
    ]
    assert families["kafka_log_log_size"] == [
        ("kafka_log_log_size", {"topic": "t", "partition": "0"}, 1.5)
    ]


def test_a_histogram_is_cumulative_up_to_inf_with_sum_and_count() -> None:
    family = Family("kafka_network_requestmetrics_totaltimems", "histogram", "Time.")
    family.add_histogram((1.0, 10.0), [2, 3, 4], 123.5, request="Produce")
    [(name, samples)] = parsed(render([family])).items()
    assert name == "kafka_network_requestmetrics_totaltimems"
    buckets = [(s[1]["le"], s[2]) for s in samples if s[0].endswith("_bucket")]
    assert buckets == [("1.0", 2), ("10.0", 5), ("+Inf", 9)]
    assert ("kafka_network_requestmetrics_totaltimems_sum", {"request": "Produce"}, 123.5) in (
        samples
    )
    assert ("kafka_network_requestmetrics_totaltimems_count", {"request": "Produce"}, 9) in (
        samples
    )


def test_request_times_fall_in_the_bucket_whose_bound_they_do_not_exceed() -> None:
    metrics = BrokerMetrics()
    metrics.answered(0, 9, LATENCY_BUCKETS_MS[0] / 1000)  # exactly on the first bound
    metrics.answered(0, 9, 0.0007)  # between 0.5 and 1 ms
    metrics.answered(0, 3, 60.0)  # above every bound
    times = metrics.requests[0]
    assert times.count == 3 and math.isclose(times.seconds, 60.00095)
    assert (times.versions[9], times.versions[3]) == (2, 1)
    assert list(metrics.requests) == [0]
    assert times.buckets[0] == 1
    assert times.buckets[LATENCY_BUCKETS_MS.index(1.0)] == 1
    assert times.buckets[-1] == 1


def test_appends_and_fetches_count_per_topic_and_in_total() -> None:
    metrics = BrokerMetrics()
    metrics.appended("a", 3, 100)
    metrics.appended("b", 1, 50)
    metrics.sent("a", 70)
    assert (metrics.total.messages_in, metrics.total.bytes_in, metrics.total.bytes_out) == (
        4,
        150,
        70,
    )
    assert (metrics.topics["a"].messages_in, metrics.topics["a"].bytes_out) == (3, 70)
    # A deleted topic's metrics go (as Kafka removes them); its counts stay in the totals.
    metrics.forget("a")
    assert "a" not in metrics.topics
    assert (metrics.total.messages_in, metrics.total.bytes_out) == (4, 70)
    assert sorted(metrics.topic("a").__slots__) == ["bytes_in", "bytes_out", "messages_in"]
    assert metrics.topics["a"].messages_in == 0


def test_rates_are_the_change_over_the_last_interval() -> None:
    metrics = BrokerMetrics()
    rates = Rates()
    rates.sample(metrics.total, 100.0)
    metrics.appended("a", 50, 5000)
    rates.sample(metrics.total, 105.0)
    assert (rates.messages_in, rates.bytes_in, rates.bytes_out) == (10.0, 1000.0, 0.0)


@pytest.mark.parametrize(
    ("setting", "host", "port"),
    [
        ("http://127.0.0.1:8080", "127.0.0.1", 8080),
        ("http://localhost:0/", "localhost", 0),
        ("127.0.0.1:9000", "127.0.0.1", 9000),
        ("[::1]:0", "::1", 0),
    ],
)
def test_the_console_listener_is_host_port_with_or_without_http(
    setting: str, host: str, port: int
) -> None:
    config = make_config({"minikafka.console.listener": setting})
    assert (config.console_host, config.console_port) == (host, port)


def test_the_console_is_off_by_default_and_loopback_unless_opened() -> None:
    assert make_config().console_host is None
    with pytest.raises(ConfigError, match=r"minikafka\.console\.allow\.remote=true"):
        make_config({"minikafka.console.listener": "0.0.0.0:8080"})
    with pytest.raises(ConfigError, match="not host:port"):
        make_config({"minikafka.console.listener": "http://127.0.0.1"})
    opened = make_config(
        {"minikafka.console.listener": "0.0.0.0:8080", "minikafka.console.allow.remote": "true"}
    )
    assert opened.console_host == "0.0.0.0" and opened.console_allow_remote


def test_what_clients_stored_is_escaped_in_every_shape() -> None:
    hostile = b'<script>alert("x")</script>&'
    for shape in ("text", "json"):
        shown = _shown(hostile, shape)
        assert "<script>" not in shown and "&lt;script&gt;" in shown
    assert "3c 73 63" in _shown(hostile, "hex")
    assert "null" in _shown(None, "text")
    assert "<td>&lt;b&gt;</td>" in table(["h"], [["<b>"]])
    assert "{\n  &quot;a&quot;: 1\n}" in _shown(b'{"a":1}', "json")
    long = _shown(b"x" * 5000, "text")
    assert "(+2952 B)" in long


def _append(plog: PartitionLog, batch: bytes) -> None:
    data = bytearray(batch)
    assert plog.append(data, parse_header(data), 1_000).error == 0


@pytest.mark.asyncio
async def test_browsing_reads_past_emptied_batches_and_stops_at_the_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Reads of one batch a round: the emptied batch comes back alone.
    monkeypatch.setattr(browse, "READ_BYTES", 1)
    plog = PartitionLog.open(tmp_path / "b-0", "b", 0, config=LogConfig())
    try:
        _append(plog, build_batch([(b"k%d" % i, b"v") for i in range(3)]))  # 0-2
        # What the cleaner leaves of a batch whose records all went: offsets 3-6, no record.
        emptied = parse_header(build_batch([(b"x", b"x")] * 4, base_offset=3))
        _append(plog, _empty(emptied))
        _append(plog, build_batch([(b"k7", b"v"), (b"k8", None)]))  # 7-8
        page = await browse.read(plog, 3, 10)
        assert [(r.offset, r.key) for r in page.records] == [(7, b"k7"), (8, b"k8")]
        assert page.records[1].value is None and page.next_offset == 9
        assert page.records[0].batch.base_offset == 7 and page.records[0].batch.codec == "none"
        page = await browse.read(plog, 1, 2)
        assert [r.offset for r in page.records] == [1, 2]
        assert (await browse.read(plog, 9, 5)).records == []
    finally:
        plog.close()
