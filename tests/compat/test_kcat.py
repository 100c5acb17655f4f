"""kcat 1.7 (librdkafka 2.0.2, as Debian ships it) produces and consumes 1,000 keyed records.

Produce runs twice, on separate topics: with the idempotent producer and without it. Each
time the segment files must hold every line kcat read exactly once, in send order within
each partition; then `kcat -C -o beginning -e` must read back exactly what is stored.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.compat.checks import StoredRecord, assert_exactly_once_in_order, stored_partitions
from tests.compat.conftest import PARTITIONS, record_versions, require_tool
from tests.support.broker_process import BrokerProcess
from tests.support.capture_proxy import CaptureProxy

N_RECORDS = 1000
TOOL_TIMEOUT_S = 60


def sent_records() -> list[tuple[bytes, bytes]]:
    # Values may hold ':' (kcat -K: splits at the first one only); keys must not.
    return [(b"key-%d" % i, b"kcat value %d: the quick brown fox" % i) for i in range(N_RECORDS)]


def run(args: list[str], proxy: CaptureProxy, tool: str, stdin: bytes = b"") -> bytes:
    try:
        done = subprocess.run(args, input=stdin, capture_output=True, timeout=TOOL_TIMEOUT_S)
    finally:
        # Recorded even when the tool fails: the versions it sent explain most failures.
        record_versions(tool, proxy.take())
    assert done.returncode == 0, (
        f"{' '.join(args)} exited {done.returncode}:\n{done.stderr.decode(errors='replace')}"
    )
    return done.stdout


def consumed_partitions(output: bytes) -> dict[int, list[StoredRecord]]:
    result: dict[int, list[StoredRecord]] = {p: [] for p in range(PARTITIONS)}
    for line in output.splitlines():
        message = json.loads(line)
        key, payload = message["key"], message["payload"]
        result[message["partition"]].append(
            StoredRecord(
                message["offset"],
                None if key is None else key.encode(),
                None if payload is None else payload.encode(),
            )
        )
    return result


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "plain"])
def test_kcat_produces_and_consumes_every_record_once_in_order(
    proxied_broker: tuple[BrokerProcess, CaptureProxy], idempotent: bool
) -> None:
    kcat = require_tool("kcat", "kafkacat")
    broker, proxy = proxied_broker
    label = "idempotent" if idempotent else "plain"
    topic = f"kcat-{label}"
    records = sent_records()

    produce = [kcat, "-P", "-b", proxy.bootstrap, "-t", topic, "-K:"]
    if idempotent:
        produce += ["-X", "enable.idempotence=true"]
    run(produce, proxy, f"kcat -P ({label})", b"".join(k + b":" + v + b"\n" for k, v in records))

    by_partition = stored_partitions(broker.data_dir, topic, PARTITIONS, idempotent=idempotent)
    assert_exactly_once_in_order(by_partition, records)

    # -e exits once every partition has reached its end; -J prints one JSON object a record.
    consume = [kcat, "-C", "-b", proxy.bootstrap, "-t", topic, "-o", "beginning", "-e", "-J"]
    output = run(consume, proxy, "kcat -C")
    assert consumed_partitions(output) == by_partition
