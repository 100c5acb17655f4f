"""kafkajs 2.2: an idempotent producer and a consumer group, 1,000 keyed records.

tests/compat/js/compat.js does the kafkajs side: `produce` sends 10 batches of 100 records
(idempotent, acks -1, kafkajs's murmur2 partitioner over 3 partitions); `consume` joins a
group, subscribes fromBeginning and reads until it has 1,000 records, then reports the
group's committed offsets. The segment files must hold every record exactly once in send
order per partition; the consumer must see exactly what is stored, partition by partition,
and the group must have committed the end of every partition.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.compat.checks import StoredRecord, assert_exactly_once_in_order, stored_partitions
from tests.compat.conftest import JS_DIR, PARTITIONS, record_versions, require_tool
from tests.support.broker_process import BrokerProcess
from tests.support.capture_proxy import CaptureProxy

N_RECORDS = 1000
# compat.js gives itself 60 s; this only catches a node process that ignores its deadline.
NODE_TIMEOUT_S = 90


def sent_records() -> list[tuple[bytes, bytes]]:
    # Must match key() and value() in compat.js.
    return [
        (b"key-%d" % i, b"kafkajs record %d: the quick brown fox jumps over the lazy dog" % i)
        for i in range(N_RECORDS)
    ]


def run_js(proxy: CaptureProxy, tool: str, *args: str) -> list[dict[str, Any]]:
    node = require_tool("node", "nodejs")
    if not (JS_DIR / "node_modules" / "kafkajs").is_dir():
        raise AssertionError("kafkajs not installed in tests/compat/js: run `make compat`")
    try:
        done = subprocess.run(
            [node, str(JS_DIR / "compat.js"), args[0], proxy.bootstrap, *args[1:]],
            capture_output=True,
            text=True,
            timeout=NODE_TIMEOUT_S,
        )
    finally:
        record_versions(tool, proxy.take())
    assert done.returncode == 0, f"compat.js {args[0]} exited {done.returncode}:\n{done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_kafkajs_idempotent_producer_and_consumer_group(
    proxied_broker: tuple[BrokerProcess, CaptureProxy],
) -> None:
    broker, proxy = proxied_broker
    topic, group = "kafkajs-records", "kafkajs-group"
    records = sent_records()

    sends = run_js(proxy, "kafkajs producer", "produce", topic, str(N_RECORDS))
    assert [s["send"] for s in sends] == list(range(0, N_RECORDS, 100))
    assert all(m["errorCode"] == 0 for s in sends for m in s["metadata"]), sends
    by_partition = stored_partitions(broker.data_dir, topic, PARTITIONS, idempotent=True)
    assert_exactly_once_in_order(by_partition, records)

    lines = run_js(proxy, "kafkajs consumer group", "consume", topic, str(N_RECORDS), group)
    *messages, last = lines
    consumed: dict[int, list[StoredRecord]] = {p: [] for p in range(PARTITIONS)}
    for m in messages:
        consumed[m["partition"]].append(
            StoredRecord(m["offset"], m["key"].encode(), m["value"].encode())
        )
    assert consumed == by_partition

    # kafkajs commits what it processed when the consumer stops: the end of each partition.
    [committed] = last["committed"]
    assert committed["topic"] == topic
    assert {p["partition"]: int(p["offset"]) for p in committed["partitions"]} == {
        p: len(stored) for p, stored in by_partition.items()
    }
