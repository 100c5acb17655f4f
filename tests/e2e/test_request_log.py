"""At DEBUG, one line per request answered: API, version, client id, topics, error codes."""

from __future__ import annotations

from pathlib import Path

from protocol.errors import ErrorCode
from protocol.messages.metadata import METADATA
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_topic, init_producer, produce
from tests.support.raw_client import RawClient


def test_each_request_gets_one_debug_line(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "d", {"log.level": "DEBUG"}).start()
    try:
        with RawClient(broker.port, client_id="app-1") as client:
            create_topic(client, "orders")
            pid = init_producer(client)
            assert produce(client, "orders", batch(pid, 0, 0)).error_code == 0
            answer = client.request(
                METADATA,
                12,
                Message(topics=[Message(name="missing")], allow_auto_topic_creation=False),
            )
            assert answer.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        produced = broker.wait_for_log(r"request Produce v\d+ from client 'app-1'")
        assert "topics [orders]: error NONE" in produced
        missing = broker.wait_for_log(r"request Metadata v12 from client 'app-1'.*\[missing\]")
        assert "topics [missing]: errors UNKNOWN_TOPIC_OR_PARTITION" in missing
        assert broker.log_text().count("request Produce v") == 1
    finally:
        broker.stop()


def test_no_request_lines_at_info(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "d").start()
    try:
        with RawClient(broker.port, client_id="app-1") as client:
            create_topic(client, "orders")
        broker.wait_for_log("orders")
        assert "request CreateTopics" not in broker.log_text()
    finally:
        broker.stop()
