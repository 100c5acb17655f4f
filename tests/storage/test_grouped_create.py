"""Creating partitions with grouped fsyncs (Store._make_partitions, atomic_file.
write_new_files and fsync_all): what is durable when, and what a crash before the commit
point leaves for recovery."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from storage import store as store_module
from storage.atomic_file import fsync_all, write_new_files
from storage.store import PARTITION_METADATA, Store


def open_store(path: Path) -> Store:
    return Store.open(path, node_id=1, segment_bytes=1 << 20)


def test_write_new_files_writes_each_whole_and_leaves_no_tmp(tmp_path: Path) -> None:
    files = [(tmp_path / f"f{i}", f"content {i}\n".encode()) for i in range(20)]
    (tmp_path / "f3").write_bytes(b"old content, longer than the new one\n")
    write_new_files(files)
    for path, data in files:
        assert path.read_bytes() == data
    assert sorted(os.listdir(tmp_path)) == sorted(f"f{i}" for i in range(20))


def test_fsync_all_fsyncs_every_path_and_raises_a_failure(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_bytes(b"x")
    fsync_all([tmp_path / "d", tmp_path / "f", tmp_path])
    with pytest.raises(FileNotFoundError):
        fsync_all([tmp_path / "f", tmp_path / "missing"])


class Recorder:
    """Logs each fsync (the path its descriptor was opened for) and each rename, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[tuple[str, str]] = []
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd: int) -> None:
            real_fsync(fd)
            self.events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))

        def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
            real_replace(src, dst)
            self.events.append(("rename", os.fspath(dst)))

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)


def with_metadata(data_dir: Path) -> list[str]:
    """The partition directories recovery would look at (those with partition.metadata)."""
    return sorted(n for n in os.listdir(data_dir) if (data_dir / n / PARTITION_METADATA).exists())


@pytest.mark.parametrize("grow", [False, True])
def test_one_fsync_per_file_and_directory_and_the_first_metadata_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grow: bool
) -> None:
    tmp_path = tmp_path.resolve()
    store = open_store(tmp_path)
    first, count = (3, 53) if grow else (0, 50)
    if grow:
        store.create_topic("t", first)
    recorder = Recorder(monkeypatch)
    if grow:
        store.add_partitions("t", count)
    else:
        store.create_topic("t", count)
    events = recorder.events
    dirs = {str(tmp_path / f"t-{i}") for i in range(first, count)}
    fsynced = [path for what, path in events if what == "fsync"]
    # Each new metadata file (written as .tmp), each new directory and the data dir: once;
    # the commit point's file and directory once more, alone at the end.
    commit = str(tmp_path / f"t-{first}" / PARTITION_METADATA)
    assert sorted(fsynced[:-2]) == sorted(
        [f"{d}/{PARTITION_METADATA}.tmp" for d in dirs if d != str(tmp_path / f"t-{first}")]
        + [*dirs, str(tmp_path)]
    )
    assert events[-2:] == [("rename", commit), ("fsync", str(tmp_path / f"t-{first}"))]
    assert fsynced[-2] == commit + ".tmp"
    assert len(store.topic("t").partitions) == count  # type: ignore[union-attr]
    store.close()
    reopened = open_store(tmp_path)
    assert len(reopened.topic("t").partitions) == count  # type: ignore[union-attr]
    reopened.close()


def fail_the_commit(monkeypatch: pytest.MonkeyPatch, *, crash: bool = True) -> None:
    """A failure just before the commit points' partition.metadata files are written (the
    second write_new_files of a request: the first writes all the other partitions'); as
    a ``crash`` it tidies nothing up, as the process would not."""
    if crash:
        monkeypatch.setattr(Store, "_forget_uncommitted", staticmethod(lambda *_: None))
    real = write_new_files
    calls = []

    def write(files: Sequence[tuple[Path, bytes]]) -> None:
        calls.append(files)
        if len(calls) == 2:
            raise OSError("simulated crash")
        real(files)

    monkeypatch.setattr(store_module, "write_new_files", write)


def test_a_creation_cut_before_its_commit_point_is_gone_after_recovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(tmp_path)
    store.create_topic("kept", 2)
    with monkeypatch.context() as m:
        fail_the_commit(m)
        with pytest.raises(OSError, match="simulated crash"):
            store.create_topic("t", 30)
    # Every other partition is on disk with its metadata: only partition 0's is missing.
    assert (tmp_path / "t-29" / PARTITION_METADATA).exists()
    assert not (tmp_path / "t-0" / PARTITION_METADATA).exists()
    store.close_unclean()
    store = open_store(tmp_path)
    assert store.topic("t") is None
    assert with_metadata(tmp_path) == ["kept-0", "kept-1"]
    assert len(store.topic("kept").partitions) == 2  # type: ignore[union-attr]
    # The name is free again, and a smaller topic under it survives the next start whole
    # (no leftover partition of the first attempt with another topic id).
    created = store.create_topic("t", 3)
    store.close_unclean()
    store = open_store(tmp_path)
    info = store.topic("t")
    assert info is not None and info.topic_id == created.topic_id
    assert len(info.partitions) == 3
    store.close()


def test_a_growth_cut_before_its_commit_point_leaves_the_old_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(tmp_path)
    topic_id = store.create_topic("t", 4).topic_id
    with monkeypatch.context() as m:
        fail_the_commit(m)
        with pytest.raises(OSError, match="simulated crash"):
            store.add_partitions("t", 20)
    store.close_unclean()
    store = open_store(tmp_path)
    info = store.topic("t")
    assert info is not None and info.topic_id == topic_id
    assert len(info.partitions) == 4
    assert with_metadata(tmp_path) == [f"t-{i}" for i in range(4)]
    store.add_partitions("t", 6)
    store.close_unclean()
    store = open_store(tmp_path)
    assert len(store.topic("t").partitions) == 6  # type: ignore[union-attr]
    store.close()


def test_partitions_beyond_a_gap_are_removed(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic("t", 5)
    store.close_unclean()
    # What a power loss before the commit point of a growth could leave on a file system
    # that kept some of the new partitions: a gap, then more.
    os.remove(tmp_path / "t-2" / PARTITION_METADATA)
    store = open_store(tmp_path)
    assert len(store.topic("t").partitions) == 2  # type: ignore[union-attr]
    assert not (tmp_path / "t-3").exists() and not (tmp_path / "t-4").exists()
    store.close()


def test_a_failed_creation_retried_smaller_in_the_same_run_survives_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(tmp_path)
    with monkeypatch.context() as m:
        fail_the_commit(m, crash=False)
        with pytest.raises(OSError, match="simulated crash"):
            store.create_topic("t", 10)
    assert with_metadata(tmp_path) == []
    created = store.create_topic("t", 3)
    store.close()
    store = open_store(tmp_path)
    info = store.topic("t")
    assert info is not None and info.topic_id == created.topic_id
    assert len(info.partitions) == 3
    store.close()
