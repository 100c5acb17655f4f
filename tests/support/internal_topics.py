"""What the tests of ``__consumer_offsets`` and ``__transaction_state`` share: the partition
Kafka picks for a group or transactional id, and the records Kafka's console consumer prints
for a partition of either topic with one of its coordinator-record formatters."""

from __future__ import annotations

import json
from typing import Any

from tests.support.kafka_reference import run_tool


def java_partition(key: str, partitions: int) -> int:
    """abs(String.hashCode) % partitions, written out as Java computes it (ASCII keys)."""
    h = 0
    for ch in key:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def formatted_records(
    bootstrap: str, topic: str, partition: int, formatter: str, version: str
) -> list[dict[str, Any]]:
    """Every record kafka-console-consumer ``--formatter formatter`` prints for the
    partition, as the JSON objects it prints."""
    result = run_tool(
        "kafka-console-consumer",
        [
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--partition",
            str(partition),
            "--offset",
            "earliest",
            "--formatter",
            formatter,
            "--timeout-ms",
            "8000",
        ],
        version=version,
    )
    assert "Processed a total of" in result.stderr, result.stderr
    # Kafka 4.0's coordinator-record formatters print no line separator between records.
    records: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    text, pos = result.stdout.strip(), 0
    while pos < len(text):
        record, pos = decoder.raw_decode(text, pos)
        while pos < len(text) and text[pos].isspace():
            pos += 1
        records.append(record)
    return records
