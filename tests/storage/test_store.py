"""Store: meta.properties, topics with persistent ids, partition directories, reload."""

from __future__ import annotations

import base64
import logging
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import parse_header
from storage.log_config import LogConfig
from storage.store import (
    InvalidPartitionsError,
    InvalidTopicError,
    Store,
    StoreError,
    TopicAlreadyExistsError,
    delete_dir_name,
    uuid_from_str,
    uuid_to_str,
    valid_topic_name,
)
from tests.storage.test_segment import make_batch

OOO = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def open_store(path: Path, node_id: int = 1) -> Store:
    return Store.open(path, node_id=node_id, segment_bytes=1 << 20)


def read_properties(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_meta_properties_written_once_and_cluster_id_kept(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = open_store(data, node_id=3)
    store.close()
    props = read_properties(data / "meta.properties")
    assert props["version"] == "1"
    assert props["node.id"] == "3"
    cluster_id = props["cluster.id"]
    assert len(cluster_id) == 22 and "=" not in cluster_id
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
    assert store.cluster_id == cluster_id
    store = open_store(data, node_id=3)
    assert store.cluster_id == cluster_id
    store.close()
    assert read_properties(data / "meta.properties")["cluster.id"] == cluster_id


def test_other_node_id_is_refused(tmp_path: Path) -> None:
    open_store(tmp_path, node_id=1).close()
    with pytest.raises(StoreError):
        open_store(tmp_path, node_id=2)


def test_create_topic_writes_partition_dirs_and_metadata(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    info = store.create_topic("orders.v1-x_y", 3)
    assert len(info.topic_id) == 16
    assert [p.partition for p in info.partitions] == [0, 1, 2]
    store.close()
    for i in range(3):
        d = tmp_path / f"orders.v1-x_y-{i}"
        text = (d / "partition.metadata").read_text()
        assert text == f"version: 0\ntopic_id: {uuid_to_str(info.topic_id)}\n"
        assert "00000000000000000000.log" in os.listdir(d)


def test_topics_ids_and_data_survive_reopen(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    a = store.create_topic("a", 2)
    b = store.create_topic("b-1", 1)
    plog = store.partition("a", 1)
    assert plog is not None
    batch = make_batch(3)
    assert plog.append(batch, parse_header(batch), now_ms=1).base_offset == 0
    store.close()
    store = open_store(tmp_path)
    assert sorted(t.name for t in store.topics()) == ["a", "b-1"]
    a2, b2 = store.topic("a"), store.topic("b-1")
    assert a2 is not None and b2 is not None
    assert (a2.topic_id, b2.topic_id) == (a.topic_id, b.topic_id)
    assert len(a2.partitions) == 2 and len(b2.partitions) == 1
    assert store.topic_by_id(b.topic_id) is b2
    reopened = store.partition("a", 1)
    assert reopened is not None and reopened.log_end_offset == 3
    assert [h.base_offset for h, _ in reopened.batches()] == [0]
    store.close()


def test_topic_ids_differ(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    ids = {store.create_topic(f"t{i}", 1).topic_id for i in range(5)}
    assert len(ids) == 5
    store.close()


def test_create_topic_errors(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("x", 1)
    with pytest.raises(TopicAlreadyExistsError) as exists:
        store.create_topic("x", 2)
    assert exists.value.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    with pytest.raises(InvalidTopicError):
        store.create_topic("bad/name", 1)
    with pytest.raises(InvalidPartitionsError):
        store.create_topic("y", 0)
    store.close()
    assert sorted(os.listdir(tmp_path)) == [".kafka_cleanshutdown", "meta.properties", "x-0"]


def test_unknown_topic_and_partition(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("x", 2)
    assert store.topic("nope") is None
    assert store.partition("nope", 0) is None
    assert store.partition("x", 2) is None
    assert store.partition("x", -1) is None
    store.close()


def test_partition_dir_without_metadata_is_ignored(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("x", 1)
    store.close()
    (tmp_path / "half-0").mkdir()  # crash between mkdir and the metadata write
    (tmp_path / "not a partition").mkdir()
    store = open_store(tmp_path)
    assert [t.name for t in store.topics()] == ["x"]
    store.close()


def test_flush_then_files_hold_the_data(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("x", 1)
    plog = store.partition("x", 0)
    assert plog is not None
    batch = make_batch(2)
    plog.append(batch, parse_header(batch), now_ms=1)
    store.flush()
    assert (tmp_path / "x-0" / "00000000000000000000.log").read_bytes() == bytes(batch)
    store.close()


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("a", True),
        ("A.b_c-D9", True),
        ("x" * 249, True),
        ("x" * 250, False),
        ("", False),
        (".", False),
        ("..", False),
        ("...", True),
        ("a b", False),
        ("a/b", False),
        ("é", False),
        ("a\n", False),
    ],
)
def test_valid_topic_name(name: str, valid: bool) -> None:
    assert valid_topic_name(name) is valid


def test_uuid_text_round_trip() -> None:
    raw = bytes(range(16))
    text = uuid_to_str(raw)
    assert len(text) == 22 and uuid_from_str(text) == raw


# -- clean shutdown marker and recovery at open -------------------------------------------

MARKER = ".kafka_cleanshutdown"
PID = 777


def idempotent(store: Store, topic: str, seq: int, n: int = 2) -> int:
    plog = store.partition(topic, 0)
    assert plog is not None
    batch = make_batch(n, producer_id=PID, epoch=0, base_seq=seq)
    result = plog.append(batch, parse_header(batch), now_ms=1)
    assert result.error == ErrorCode.NONE
    return result.base_offset


def recovery_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    wanted = ("clean shutdown marker found", "no clean shutdown marker")
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(wanted)]


def test_clean_close_writes_the_marker_and_open_removes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "storage")
    store = open_store(tmp_path)
    assert not store.clean_start
    assert store.recovery_summary.startswith("new data directory, 0 partitions")
    store.create_topic("orders", 2)
    offsets = [idempotent(store, "orders", 2 * i) for i in range(7)]
    store.close()
    assert (tmp_path / MARKER).exists()
    caplog.clear()
    store = open_store(tmp_path)
    assert recovery_lines(caplog) == ["clean shutdown marker found: skipping log recovery"]
    assert store.clean_start and not (tmp_path / MARKER).exists()
    assert re.fullmatch(r"clean start, 2 partitions, \d+ ms", store.recovery_summary)
    plog = store.partition("orders", 0)
    assert plog is not None and plog.recovery.mode == "clean"
    assert plog.recovery.replayed_batches == 0
    for i in range(2, 7):
        assert idempotent(store, "orders", 2 * i) == offsets[i]
    store.close_unclean()  # a crash: no marker
    assert not (tmp_path / MARKER).exists()
    caplog.clear()
    store = open_store(tmp_path)
    assert recovery_lines(caplog) == ["no clean shutdown marker: recovering"]
    assert not store.clean_start
    assert store.recovery_summary.startswith("recovered after crash: 2 partitions, truncated 0")
    store.close()


def test_crash_recovery_reports_each_truncation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(tmp_path)
    store.create_topic("orders", 1)
    store.create_topic("audit", 1)
    offsets = [idempotent(store, "orders", 2 * i) for i in range(6)]
    idempotent(store, "audit", 0)
    store.close_unclean()
    seg = tmp_path / "orders-0" / "00000000000000000000.log"
    data = seg.read_bytes()
    seg.write_bytes(data + b"\xee" * 57)
    caplog.set_level(logging.INFO, "storage")
    store = open_store(tmp_path)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"orders-0: truncated 57 bytes at byte position {len(data)} of "
        "00000000000000000000.log (offset 12): partial batch at the end"
    ]
    assert re.fullmatch(
        r"recovered after crash: 2 partitions, truncated 1 \(orders-0: 57 bytes at offset 12\)"
        r", 7 batches replayed, \d+ ms",
        store.recovery_summary,
    )
    assert seg.stat().st_size == len(data)
    for i in range(1, 6):
        assert idempotent(store, "orders", 2 * i) == offsets[i]
    assert idempotent(store, "orders", 12) == 12
    store.close()


def test_objects_dropped_without_close_are_recovered(tmp_path: Path) -> None:
    crashed = Store.open(tmp_path, node_id=1, segment_bytes=400)
    crashed.create_topic("t", 1)
    offsets = [idempotent(crashed, "t", 2 * i) for i in range(9)]
    store = Store.open(tmp_path, node_id=1, segment_bytes=400)
    assert not store.clean_start
    plog = store.partition("t", 0)
    assert plog is not None and len(plog.segments) > 2
    for i in range(4, 9):
        assert idempotent(store, "t", 2 * i) == offsets[i]
    p = store.partition("t", 0)
    assert p is not None
    batch = make_batch(2, producer_id=PID, epoch=0, base_seq=6)
    assert p.append(batch, parse_header(batch), now_ms=1).error == OOO
    store.close()
    crashed.close_unclean()


def test_log_config_and_overrides(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=5000, retention_ms=-1, index_interval_bytes=10)
    store = Store.open(tmp_path, node_id=1, log_config=config, segment_bytes=300)
    assert store.log_config == replace(config, segment_bytes=300)
    assert (store.segment_bytes, store.index_interval_bytes) == (300, 10)
    store.create_topic("t", 1)
    plog = store.partition("t", 0)
    assert plog is not None and plog.config == store.log_config
    store.close()


def test_store_housekeeping_covers_every_partition(tmp_path: Path) -> None:
    size = len(make_batch(2))
    config = LogConfig(segment_bytes=size, retention_ms=-1, retention_bytes=size)
    store = Store.open(tmp_path, node_id=1, log_config=config)
    store.create_topic("a", 2)
    for plog in store.partition_logs():
        for seq in (0, 2, 4):
            b = make_batch(2, producer_id=PID, epoch=0, base_seq=seq)
            plog.append(b, parse_header(b), now_ms=10)
    assert len(store.partition_logs()) == 2
    assert store.snapshot_all() == 2  # the rolls snapshotted at 4, not at the log end 6
    assert store.snapshot_all() == 0
    assert store.apply_retention(now_ms=0) == 4
    # Expiration counts from the batches' max timestamp (1001), not the append's now_ms.
    assert store.expire_producers(now_ms=1001 + 999, expiration_ms=1000) == 0
    assert store.expire_producers(now_ms=1001 + 1000, expiration_ms=1000) == 2
    assert store.snapshot_all() == 2
    store.flush_all()
    assert all(p.unflushed_messages == 0 for p in store.partition_logs())
    store.close()
    store.close()  # idempotent


@pytest.mark.parametrize("partition", [0, 7, 2**31 - 1])
def test_delete_dir_name_is_capped_at_255_bytes_like_kafkas(partition: int) -> None:
    # LocalLog.logDirNameWithSuffixCappedLength: "<topic>-<partition>.<32 hex>-delete", the
    # topic cut so the whole name fits in 255 bytes.
    long_name = delete_dir_name("x" * 249, partition)
    assert len(long_name) == 255
    assert re.fullmatch(rf"x+-{partition}\.[0-9a-f]{{32}}-delete", long_name)
    short = delete_dir_name("orders", partition)
    assert re.fullmatch(rf"orders-{partition}\.[0-9a-f]{{32}}-delete", short)
