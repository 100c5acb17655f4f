"""`make oracle-record` end to end: one scenario recorded through the proxy from a live Kafka.

The file must have the corpus format field for field (as the committed recordings have it),
every frame must decode with this project's protocol codecs, the header must carry what the
scenario returned, and the conversation must replay against a fresh minikafka with no
differences beyond the reviewed ones (tests/oracle/allowed_differences.toml).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol import codec
from protocol.api_keys import ALL_APIS
from protocol.header import decode_request_header, decode_response_header
from protocol.primitives import Reader
from tests.oracle import test_oracle_replay as oracle
from tests.oracle.record import FORMAT, jsonable, record, write
from tests.oracle.scenarios import SCENARIOS
from tests.support.broker_process import BrokerProcess

SCENARIO = "admin_delete_records_list_offsets"
# An existing recording: the new file must have its fields in its order.
MODEL = oracle.CORPUS / "admin_delete_records.jsonl"


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def decode_exchange(ex: dict[str, Any]) -> None:
    api = ALL_APIS[ex["api_key"]]
    version = ex["api_version"]
    reader = Reader(bytes.fromhex(ex["request"]))
    header = decode_request_header(reader, api.request_header_version(version))
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        ex["api_key"],
        version,
        ex["correlation_id"],
        ex["client_id"],
    )
    codec.decode(api.request, version, api.is_flexible(version), reader)
    if ex["response"] is not None:
        reader = Reader(bytes.fromhex(ex["response"]))
        assert (
            decode_response_header(reader, api.response_header_version(version))
            == (ex["correlation_id"])
        )
        codec.decode(api.response, version, api.is_flexible(version), reader)


def replay_against_minikafka(path: Path, broker_config: dict[str, str], work: Path) -> list[str]:
    broker = BrokerProcess(work / "minikafka", broker_config)
    try:
        broker.start()
        result = oracle.replay(path.stem, work, path, ["--broker", broker.bootstrap])
    finally:
        broker.stop() if broker.is_running() else broker.kill()
    return [
        f"#{d['n']} ({d['api']}) {d['path']}: kafka={d['kafka']} broker={d['broker']}"
        for d in result["diffs"]
        if not any(a.matches(path.stem, d) for a in oracle.ALLOWANCES)
    ]


@pytest.mark.timeout(300)
def test_a_recorded_scenario_has_the_corpus_format_and_replays_against_us(tmp_path: Path) -> None:
    scenario = SCENARIOS[SCENARIO]
    recording = record(scenario, "4.0.0")
    path = tmp_path / f"{SCENARIO}.jsonl"
    write(recording.lines, path)
    header, *exchanges = read_lines(path)
    model_header, model_exchange = read_lines(MODEL)[:2]

    assert list(header) == list(model_header)
    assert header["format"] == FORMAT
    assert header["scenario"] == SCENARIO
    assert header["kafka_version"].startswith("4.0.0 ")
    assert header["broker_config"]["node.id"] == "1"
    assert header["scenario_exit"] == 0
    assert header["replay"] == "full"
    assert header["observed"] == jsonable(recording.returned)
    # What the scenario saw is Kafka's DeleteRecords/ListOffsets behaviour.
    assert header["observed"]["delete_before_4"] == 4
    assert header["observed"]["delete_beyond_end"] == "OFFSET_OUT_OF_RANGE"

    assert header["exchange_count"] == len(exchanges) > 0
    assert [e["n"] for e in exchanges] == list(range(1, len(exchanges) + 1))
    assert all(list(e) == list(model_exchange) for e in exchanges)
    conns = {c["conn"]: c for c in header["connections"]}
    assert sorted(conns) == list(range(1, len(conns) + 1))
    assert all(c["closed_by"] in ("client", "server") for c in conns.values())
    for e in exchanges:
        conn = conns[e["conn"]]
        assert conn["t_open_ms"] <= e["t_request_ms"] <= conn["t_close_ms"]
        if e["response"] is None:
            assert e["no_response"] in ("acks0", "server_closed", "client_closed")
        else:
            assert e["no_response"] is None and e["t_response_ms"] >= e["t_request_ms"]
        decode_exchange(e)
    # Requests are numbered in the order they were sent; seq per connection likewise.
    assert [e["t_request_ms"] for e in exchanges] == sorted(e["t_request_ms"] for e in exchanges)
    for no in conns:
        seqs = [e["seq"] for e in exchanges if e["conn"] == no]
        assert seqs == list(range(1, len(seqs) + 1))
    apis = {e["api_key"] for e in exchanges}
    assert {18, 3, 0, 21, 2, 1} <= apis  # ApiVersions, Metadata, Produce, DeleteRecords, ...

    unexplained = replay_against_minikafka(path, header["broker_config"], tmp_path)
    assert not unexplained, "differences from Kafka 4.0:\n" + "\n".join(unexplained)
