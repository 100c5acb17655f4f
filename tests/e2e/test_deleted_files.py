"""Deleting data on disk (DeleteTopics, DeleteRecords, retention) as Kafka does it: files
are renamed first (segments ``*.deleted``, partition directories ``*-delete``) and removed
after file.delete.delay.ms, so a fetch response already being sent from them completes.
Checked on the files the broker leaves and on the bytes it sends."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.delete_topics import DELETE_TOPICS
from protocol.records import build_batch
from protocol.schema import Message
from tests.e2e.test_admin_configs import create
from tests.support.broker_process import BrokerProcess
from tests.support.produce import fetch_partition, produce, stored
from tests.support.raw_client import RawClient

pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]

# Kafka's longest topic name (Topic.MAX_NAME_LENGTH): "<name>-0" fits a 255-byte file name,
# "<name>-0.<32 hex>-delete" would not.
LONGEST_NAME = "t" * 249


def delete_topic(client: RawClient, name: str) -> Message:
    answer = client.request(DELETE_TOPICS, 6, Message(topics=[Message(name=name)], timeout_ms=1000))
    result: Message = answer.responses[0]
    return result


def test_a_topic_with_the_longest_name_is_deleted_and_recreated_empty(
    shared_broker: BrokerProcess,
) -> None:
    data = shared_broker.data_dir
    with RawClient(shared_broker.port) as client:
        assert create(client, LONGEST_NAME).error_code == 0
        batch = build_batch([(b"k", b"old record")])
        assert produce(client, LONGEST_NAME, batch).error_code == 0
        assert stored(data, LONGEST_NAME) != []

        deleted = delete_topic(client, LONGEST_NAME)
        assert (deleted.error_code, deleted.error_message) == (0, None)
        assert not (data / f"{LONGEST_NAME}-0").exists()
        # Kafka's logDirNameWithSuffixCappedLength: the topic part is cut so the renamed
        # directory still fits in 255 bytes.
        for leftover in data.glob("t*-delete"):
            assert len(leftover.name) <= 255

        assert create(client, LONGEST_NAME).error_code == 0
        assert stored(data, LONGEST_NAME) == []
        fetched = fetch_partition(client, LONGEST_NAME, 0)
        assert (fetched.error_code, fetched.high_watermark, fetched.records) == (0, 0, b"")
        assert produce(client, LONGEST_NAME, build_batch([(b"k", b"new")])).base_offset == 0
        assert [h.base_offset for h, _ in stored(data, LONGEST_NAME)] == [0]
        # The connection that asked for all this is still served.
        assert fetch_partition(client, LONGEST_NAME, 0).error_code == ErrorCode.NONE


def test_a_topic_with_the_longest_name_stays_deleted_after_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        with RawClient(broker.port) as client:
            assert create(client, LONGEST_NAME).error_code == 0
            assert produce(client, LONGEST_NAME, build_batch([(b"k", b"v")])).error_code == 0
            assert delete_topic(client, LONGEST_NAME).error_code == 0
    finally:
        broker.kill()  # a crash: whatever the deletion left must not come back
    broker = BrokerProcess(data).start()
    try:
        assert [p.name for p in data.iterdir() if p.name.startswith("ttt")] == []
        with RawClient(broker.port) as client:
            assert create(client, LONGEST_NAME).error_code == 0
            assert fetch_partition(client, LONGEST_NAME, 0).high_watermark == 0
    finally:
        broker.stop()
