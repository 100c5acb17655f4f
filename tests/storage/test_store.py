"""Store: meta.properties, topics with persistent ids, partition directories, reload."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import parse_header
from storage.store import (
    InvalidPartitionsError,
    InvalidTopicError,
    Store,
    StoreError,
    TopicAlreadyExistsError,
    uuid_from_str,
    uuid_to_str,
    valid_topic_name,
)
from tests.storage.test_segment import make_batch


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
    assert sorted(os.listdir(tmp_path)) == ["meta.properties", "x-0"]


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
