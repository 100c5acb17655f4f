"""The console never slows the broker: while its biggest pages are rendered (a topic list of
thousands of partitions, a topic of hundreds, the message browser on a 1 GB partition of
megabyte records, oldest, newest and deep, in every format, a search window) and /metrics is
scraped in a loop, a Kafka client's round trips on another connection keep the p99 bound of
the other no-stall tests (tests/e2e/test_consumer_group_regex.py,
test_queued_requests_per_connection.py), and the broker's memory stays bounded (a page reads a
bounded window of the log, never the partition)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from protocol.records import build_batch
from tests.e2e.test_console import CONSOLE, console_url, get
from tests.e2e.test_consumer_group_regex import PROBE_P99_LIMIT_S, Probe
from tests.support.broker_process import running
from tests.support.produce import create_topic, produce
from tests.support.raw_client import RawClient

TOPICS = 100
PARTITIONS = 20  # 2,000 partitions: /topics, / and /metrics list each
WIDE_PARTITIONS = 500  # one topic's page with this many rows
RECORD_BYTES = 1_000_000  # a batch of one within max.message.bytes' default
RECORDS = 1024  # a 1 GB partition
ROUNDS = 3  # of every page and scrape, at least
# Round trips for a p99 that one full garbage collection of the broker's heap (a few hundred
# ms on a loaded 2-core machine, whoever allocated last) does not decide alone.
PROBES = 1000
# The broker's resident memory may grow by this much while the pages are read: a page holds
# at most 8 MiB of log and the scrapes' texts, several at once; the 1 GB partition is never read.
RSS_GROWTH_LIMIT_MB = 256


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


class Loop(threading.Thread):
    """``fetch`` called until stopped, counting rounds; a failure kept for the test."""

    def __init__(self, fetch: Callable[[], None]) -> None:
        super().__init__(daemon=True)
        self.fetch = fetch
        self.rounds = 0
        self.failure: BaseException | None = None
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.is_set():
                self.fetch()
                self.rounds += 1
        except BaseException as e:
            self.failure = e


def test_rendering_big_pages_and_scraping_metrics_leave_other_clients_served(
    tmp_path: Path,
) -> None:
    with running(tmp_path / "data", CONSOLE) as proc:
        url = console_url(proc)
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        topics = [NewTopic(f"many-{i:03d}", PARTITIONS, 1) for i in range(TOPICS)]
        topics.append(NewTopic("wide", WIDE_PARTITIONS, 1))
        for done in admin.create_topics(topics).values():
            done.result(60)
        del admin  # its connection closed before the measurement
        with RawClient(proc.port) as client:
            create_topic(client, "big")
            for n in range(RECORDS):
                value = bytes([65 + n % 26]) * RECORD_BYTES
                answer = produce(client, "big", build_batch([(f"key-{n}".encode(), value)]))
                assert (answer.error_code, answer.base_offset) == (0, n), answer

        # Each page and what it must show (the records' keys: the records were read).
        pages = {
            "/": "Listeners",
            "/topics": "many-099",
            "/topics/wide": "/topics/wide/499",
            # A page reads at most 8 MiB of log: 8 of these records, values cut to 2 KiB.
            "/topics/big/0?count=64": "key-7</pre></td><td><pre>HHHH",
            "/topics/big/0?offset=512&count=8": "key-519",
            "/topics/big/0?count=64&format=hex&offset=900": "6b 65 79 2d 39 30 37",
            "/topics/big/0?count=64&format=json&order=newest": "key-1023",
            "/topics/big/0?search=key-1000&in=key&offset=990": "1 match(es)",
            "/groups": "Consumer groups",
        }

        def browse() -> None:
            for page, shown in pages.items():
                status, text = get(url + page)
                assert status == 200 and shown in text, (page, text[:300])

        def scrape() -> None:
            status, text = get(url + "/metrics")
            assert status == 200 and 'topic="many-099"' in text

        assert proc.proc is not None
        before_mb = peak_mb = rss_mb(proc.proc.pid)
        browser, scraper = Loop(browse), Loop(scrape)
        probe = Probe(proc.port)
        probe.start()
        browser.start()
        scraper.start()
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                peak_mb = max(peak_mb, rss_mb(proc.proc.pid))
                if browser.failure or scraper.failure or probe.failure:
                    break
                if min(browser.rounds, scraper.rounds) >= ROUNDS and len(probe.latencies) >= PROBES:
                    break
                time.sleep(0.1)
        finally:
            for thread in (browser, scraper, probe):
                thread.stopped.set()
            for thread in (browser, scraper, probe):
                thread.join(60)
        assert browser.failure is None, browser.failure
        assert scraper.failure is None, scraper.failure
        assert probe.failure is None, probe.failure
        assert min(browser.rounds, scraper.rounds) >= ROUNDS, (browser.rounds, scraper.rounds)
        assert len(probe.latencies) >= PROBES, len(probe.latencies)
        ordered = sorted(probe.latencies)
        print(
            f"{len(ordered)} probes during {browser.rounds} rounds of {len(pages)} pages and "
            f"{scraper.rounds} scrapes: p50 {ordered[len(ordered) // 2] * 1000:.1f} ms, "
            f"p99 {probe.p99() * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms; "
            f"broker RSS {before_mb:.0f} MB before, {peak_mb:.0f} MB at most"
        )
        assert peak_mb - before_mb < RSS_GROWTH_LIMIT_MB, (before_mb, peak_mb)
        assert probe.p99() < PROBE_P99_LIMIT_S, ordered[-5:]
