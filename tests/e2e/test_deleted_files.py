"""Deleting data on disk (DeleteTopics, DeleteRecords, retention) as Kafka does it: files
are renamed first (segments ``*.deleted``, partition directories ``*-delete``) and removed
after file.delete.delay.ms, so a fetch response already being sent from them completes.
Checked on the files the broker leaves and on the bytes it sends."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.delete_topics import DELETE_TOPICS
from protocol.messages.fetch import FETCH
from protocol.records import build_batch, crc_ok, iter_batches
from protocol.schema import Message
from tests.e2e.test_admin_configs import TOPIC, create, incremental
from tests.e2e.test_admin_topics import delete_records
from tests.support.broker_process import BrokerProcess
from tests.support.produce import fetch_partition, produce, stored
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS

# Kafka's longest topic name (Topic.MAX_NAME_LENGTH): "<name>-0" fits a 255-byte file name,
# "<name>-0.<32 hex>-delete" would not.
LONGEST_NAME = "t" * 249


FIRST_LOG = "00000000000000000000.log"
DEADLINE_S = 15.0


def wait_until(condition: object, what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


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


# -- a fetch response in flight while its segment is deleted --------------------------------

# Bigger than anything the kernel buffers between the broker and a client that does not read
# (send buffer up to 4 MiB here), so the broker is still sending the first partition's records
# when the second partition's segment is deleted.
BLOCKING_BATCHES, BLOCKING_VALUE = 12, 999_000
BLOCKING_BYTES = BLOCKING_BATCHES * BLOCKING_VALUE
SENDFILE_MIN = 64 * 1024  # broker.fetch.zero_copy.SENDFILE_MIN_BYTES


@pytest.fixture(scope="module")
def racing_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("race") / "data"
    proc = BrokerProcess(data, {"log.retention.check.interval.ms": "50"}).start()
    try:
        with RawClient(proc.port) as client:
            assert create(client, "race-blocker").error_code == 0
            for _ in range(BLOCKING_BATCHES):
                batch = build_batch([(b"k", b"b" * BLOCKING_VALUE)])
                assert produce(client, "race-blocker", batch).error_code == 0
        yield proc
    finally:
        proc.stop()


def _fetch_both(target: str) -> Message:
    def topic(name: str, max_bytes: int) -> Message:
        return Message(
            topic=name,
            topic_id=b"\x00" * 16,
            partitions=[Message(partition=0, fetch_offset=0, partition_max_bytes=max_bytes)],
        )

    return Message(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=100_000_000,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        # KIP-74: only the first partition may exceed its limit, so the raced one asks enough
        # for its first segment (a fetch slice never crosses a segment).
        topics=[topic("race-blocker", 2 * BLOCKING_BYTES), topic(target, 1_000_000)],
        forgotten_topics_data=[],
        rack_id="",
    )


def _delete_segment(client: RawClient, how: str, topic: str, data: Path) -> None:
    if how == "DeleteTopics":
        assert delete_topic(client, topic).error_code == 0
    elif how == "DeleteRecords":
        assert delete_records(client, topic, 1).low_watermark == 1
    else:
        set_retention = [("retention.ms", 0, "1")]
        assert incremental(client, topic, set_retention, TOPIC).error_code == 0
    # Whichever way, the first segment no longer has its live name (retention: once the next
    # check ran), but its file is still there under the name Kafka gives it.
    wait_until(lambda: not (data / f"{topic}-0" / FIRST_LOG).exists(), f"{how} on {topic}")
    if how == "DeleteTopics":
        assert [p.name for p in data.glob(f"{topic}-0.*-delete/{FIRST_LOG}")] == [FIRST_LOG]
    else:
        assert (data / f"{topic}-0" / f"{FIRST_LOG}.deleted").exists()


@pytest.mark.parametrize("how", ["retention", "DeleteRecords", "DeleteTopics"])
@pytest.mark.parametrize("size", ["small", "sendfile"])
def test_a_fetch_in_flight_completes_when_its_segment_is_deleted(
    racing_broker: BrokerProcess, how: str, size: str
) -> None:
    data = racing_broker.data_dir
    topic = f"race-{how.lower()}-{size}"
    value = 1000 if size == "small" else 2 * SENDFILE_MIN
    with RawClient(racing_broker.port) as admin:
        # One batch per segment: the fetched one is never the active segment.
        configs = {"segment.bytes": str(value + 500)}
        assert create(admin, topic, configs=configs).error_code == 0
        for i in range(3):
            assert produce(admin, topic, build_batch([(b"k%d" % i, b"v" * value)])).error_code == 0
        first_segment = stored(data, topic)[0][1]
        assert (len(first_segment) < SENDFILE_MIN) == (size == "small")

        with RawClient(racing_broker.port, receive_buffer=4096) as fetcher:
            fetcher.send(FETCH, 12, _fetch_both(topic))
            # The response has started: the broker already chose the segment slices and is
            # held inside the first partition's records by the client not reading.
            wait_until(lambda: fetcher.bytes_waiting() > 0, "the fetch response to start")
            _delete_segment(admin, how, topic, data)

            _, answer = fetcher.receive()
            blocker, raced = (t.partitions[0] for t in answer.responses)
            assert blocker.error_code == 0 and len(blocker.records) >= BLOCKING_BYTES
            assert raced.error_code == 0
            # The deleted segment's batch, byte for byte, with a valid CRC.
            assert bytes(raced.records) == first_segment
            batches = list(iter_batches(raced.records))
            assert [h.base_offset for _, h in batches] == [0]
            assert all(crc_ok(raced.records[p : p + h.size], h) for p, h in batches)
            # The connection carries on.
            assert (
                fetcher.request(
                    API_VERSIONS, 3, Message(client_software_name="t", client_software_version="1")
                ).error_code
                == 0
            )


# -- the renamed files: there after the deletion, gone after the delay or at restart --------

DELAY_MS = 1500


def _segment_files(part: Path) -> dict[str, list[str]]:
    names = sorted(p.name for p in part.iterdir())
    return {
        "live": [n for n in names if n.startswith("00000000000000000000.") and "deleted" not in n],
        "deleted": [n for n in names if n.endswith(".deleted")],
    }


def test_deleted_segment_files_wait_file_delete_delay_ms_then_go(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        with RawClient(broker.port) as client:
            configs = {"segment.bytes": "200", "file.delete.delay.ms": str(DELAY_MS)}
            assert create(client, "delayed", configs=configs).error_code == 0
            for i in range(3):
                batch = build_batch([(b"k%d" % i, b"v" * 100)])
                assert produce(client, "delayed", batch).error_code == 0
            part = data / "delayed-0"
            assert _segment_files(part)["live"] == [
                "00000000000000000000.index",
                "00000000000000000000.log",
                "00000000000000000000.timeindex",
            ]
            asked = time.monotonic()
            assert delete_records(client, "delayed", 1).low_watermark == 1
            # Kafka's LogSegment.changeFileSuffixes("", ".deleted"): renamed, not removed.
            assert _segment_files(part) == {
                "live": [],
                "deleted": [
                    "00000000000000000000.index.deleted",
                    "00000000000000000000.log.deleted",
                    "00000000000000000000.timeindex.deleted",
                ],
            }
            wait_until(lambda: not _segment_files(part)["deleted"], "the delayed removal")
            assert time.monotonic() - asked >= DELAY_MS / 1000
            assert fetch_partition(client, "delayed", 0).error_code == (
                ErrorCode.OFFSET_OUT_OF_RANGE
            )
            assert fetch_partition(client, "delayed", 1).records == stored(data, "delayed")[0][1]
    finally:
        broker.stop()


def test_deleted_topic_directory_waits_the_broker_delay_then_goes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # LogManager.deleteLogs uses the broker's default, not the topic's file.delete.delay.ms.
    broker = BrokerProcess(data, {"log.segment.delete.delay.ms": str(DELAY_MS)}).start()
    try:
        with RawClient(broker.port) as client:
            configs = {"file.delete.delay.ms": "600000"}
            assert create(client, "gone-later", partitions=2, configs=configs).error_code == 0
            assert produce(client, "gone-later", build_batch([(b"k", b"v")])).error_code == 0
            asked = time.monotonic()
            assert delete_topic(client, "gone-later").error_code == 0
            renamed = sorted(data.glob("gone-later-*"))
            assert [re.sub(r"\.[0-9a-f]{32}-", ".<uuid>-", p.name) for p in renamed] == [
                "gone-later-0.<uuid>-delete",
                "gone-later-1.<uuid>-delete",
            ]
            assert (renamed[0] / FIRST_LOG).stat().st_size > 0
            # Re-created at once under the same name: a new, empty directory.
            assert create(client, "gone-later").error_code == 0
            assert fetch_partition(client, "gone-later", 0).high_watermark == 0
            wait_until(lambda: not any(p.exists() for p in renamed), "the delayed removal")
            assert time.monotonic() - asked >= DELAY_MS / 1000
            assert [p.name for p in data.glob("gone-later-*")] == ["gone-later-0"]
    finally:
        broker.stop()


def test_files_left_for_deletion_by_a_crash_are_removed_at_start_up(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()  # file.delete.delay.ms: Kafka's 60 s
    try:
        with RawClient(broker.port) as client:
            assert create(client, "kept", configs={"segment.bytes": "200"}).error_code == 0
            assert create(client, "dropped").error_code == 0
            for i in range(3):
                batch = build_batch([(b"k%d" % i, b"v" * 100)])
                assert produce(client, "kept", batch).error_code == 0
            assert produce(client, "dropped", build_batch([(b"k", b"v")])).error_code == 0
            assert delete_records(client, "kept", 1).low_watermark == 1
            assert delete_topic(client, "dropped").error_code == 0
        assert _segment_files(data / "kept-0")["deleted"] != []
        assert list(data.glob("dropped-0.*-delete")) != []
    finally:
        broker.kill()  # before the delay is up
    broker = BrokerProcess(data).start()
    try:
        # Kafka's LogLoader.removeTempFilesAndCollectSwapFiles (*.deleted) and LogManager
        # (*-delete directories).
        assert _segment_files(data / "kept-0") == {"live": [], "deleted": []}
        assert list(data.glob("dropped-*")) == []
        with RawClient(broker.port) as client:
            kept = fetch_partition(client, "kept", 1)
            assert (kept.error_code, kept.log_start_offset, kept.high_watermark) == (0, 1, 3)
            assert kept.records == stored(data, "kept")[0][1]
            assert fetch_partition(client, "dropped", 0).error_code == (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
    finally:
        broker.stop()


def test_retention_of_many_expired_segments_finishes_in_steps(tmp_path: Path) -> None:
    """A retention pass deletes a few segments at a time (other clients are served between
    steps) and still reaches the end: 40 expired segments, more than one step, all gone."""
    data = tmp_path / "data"
    broker = BrokerProcess(data, {"log.retention.check.interval.ms": "50"}).start()
    two_days_ago = int(time.time() * 1000) - 2 * 86_400_000
    try:
        with RawClient(broker.port) as client:
            configs = {"segment.bytes": "200", "file.delete.delay.ms": "0"}
            assert create(client, "expiring", configs=configs).error_code == 0
            for i in range(40):
                batch = build_batch([(b"k%d" % i, b"v" * 100)], base_timestamp=two_days_ago)
                assert produce(client, "expiring", batch).error_code == 0
            part = data / "expiring-0"

            def segments() -> list[str]:
                return sorted(p.name for p in part.iterdir() if ".log" in p.name)

            assert len(segments()) == 40
            one_day = [("retention.ms", 0, "86400000")]
            assert incremental(client, "expiring", one_day, TOPIC).error_code == 0

            def all_gone() -> bool:
                return segments() == [f"{40:020d}.log"]

            wait_until(all_gone, "every expired segment removed")
            assert fetch_partition(client, "expiring", 39).error_code == (
                ErrorCode.OFFSET_OUT_OF_RANGE
            )
            now = build_batch([(b"k", b"fresh")])
            assert produce(client, "expiring", now).error_code == 0
            assert fetch_partition(client, "expiring", 40).error_code == 0
    finally:
        broker.stop()
