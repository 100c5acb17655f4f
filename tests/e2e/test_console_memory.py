"""The console's memory stays bounded while it browses and searches a 256 MiB partition: the
broker process's resident set after dozens of pages (oldest, newest, deep offsets, every
format, a search window) is within a few page reads of what it was after the first."""

from __future__ import annotations

from pathlib import Path

from protocol.records import build_batch
from tests.e2e.test_connection_limits import memory_mb
from tests.e2e.test_console import CONSOLE, console_url, get
from tests.support.broker_process import running
from tests.support.produce import create_topic, produce
from tests.support.raw_client import RawClient

MIB = 1024 * 1024
PARTITION_MIB = 256
RECORD_BYTES = 10_000
# A page reads at most 8 MiB of log and decodes 500 records; a search 16 MiB in 1 MiB
# reads. Pages at once: one. Allow a few such reads' worth, not the partition's size.
GROWTH_LIMIT_MB = 64


def test_browsing_a_large_partition_keeps_the_consoles_memory_bounded(tmp_path: Path) -> None:
    with running(tmp_path / "data", CONSOLE) as proc:
        url = console_url(proc)
        per_batch = MIB // RECORD_BYTES
        with RawClient(proc.port) as client:
            create_topic(client, "big")
            for n in range(PARTITION_MIB):
                records = [
                    (f"key-{n}-{i}".encode(), bytes([65 + (n + i) % 26]) * RECORD_BYTES)
                    for i in range(per_batch)
                ]
                produce(client, "big", build_batch(records))
        end = PARTITION_MIB * per_batch
        base = url + "/topics/big/0"
        assert get(base)[0] == 200  # the first page: imports and caches warmed
        before = memory_mb(proc)
        pages = 0
        for step in range(12):
            offset = step * end // 12
            for query in (
                f"?offset={offset}&count=500",
                f"?offset={offset}&count=500&format=hex",
                f"?offset={offset + 499}&order=newest&count=500&format=json",
            ):
                status, page = get(base + query)
                assert status == 200 and f"<td>{offset}</td>" in page, query
                pages += 1
        status, page = get(base + "?search=no-such-key&in=key")
        assert status == 200 and "scanned offsets 0 to " in page
        after = memory_mb(proc)
        growth = after - before
        print(f"RSS {before:.0f} MB -> {after:.0f} MB after {pages} pages and a search")
        assert growth < GROWTH_LIMIT_MB, (before, after)
