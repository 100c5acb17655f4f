"""DeleteTopics when the disk refuses the deletion: an error code in the answer, the
connection kept, the topic and its records intact (in-process broker, real socket, a
monkeypatched os.rename)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.e2e.test_admin_configs import create
from tests.e2e.test_deleted_files import delete_topic
from tests.support.in_process_broker import in_process_broker
from tests.support.produce import fetch_partition, produce, stored
from tests.support.raw_client import RawClient


def test_a_failed_rename_answers_a_storage_error_and_keeps_the_topic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    real_rename = os.rename
    renamed: list[str] = []

    def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        # The first partition's directory moves, the second one's cannot.
        if str(dst).endswith("-delete") and Path(src).name == "doomed-1":
            raise OSError(errno.EIO, "Input/output error", str(src))
        real_rename(src, dst)
        renamed.append(Path(dst).name)

    with in_process_broker(data) as broker, RawClient(broker.config.listeners[0].port) as client:
        assert create(client, "doomed", partitions=2).error_code == 0
        for partition in (0, 1):
            batch = build_batch([(b"k", b"record %d" % partition)])
            assert produce(client, "doomed", batch, partition=partition).error_code == 0
        before = {p: stored(data, "doomed", p) for p in (0, 1)}
        monkeypatch.setattr(os, "rename", rename)

        answer = delete_topic(client, "doomed")

        monkeypatch.setattr(os, "rename", real_rename)
        assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert "doomed-1" in (answer.error_message or "")
        # The first directory was renamed, then put back: nothing half-deleted.
        assert any(name.endswith("-delete") for name in renamed)
        assert sorted(p.name for p in data.iterdir() if p.name.startswith("doomed")) == [
            "doomed-0",
            "doomed-1",
        ]
        # Same connection: the topic still serves every record it had, and takes more.
        for partition in (0, 1):
            fetched = fetch_partition(client, "doomed", 0, partition)
            assert (fetched.error_code, fetched.high_watermark) == (0, 1)
            assert fetched.records == before[partition][0][1]
        assert produce(client, "doomed", build_batch([(b"k", b"after")])).base_offset == 1
        # Once the disk behaves again, the deletion goes through.
        assert delete_topic(client, "doomed").error_code == 0
        assert not (data / "doomed-0").exists() and not (data / "doomed-1").exists()
