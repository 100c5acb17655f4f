"""Topics and partitions under one data directory (Kafka's log.dirs with a single entry).

Layout, as Kafka's:

    <data_dir>/meta.properties               version, cluster.id, node.id, directory.id
    <data_dir>/.kafka_cleanshutdown          present only between a clean close and the next open
    <data_dir>/log-start-offset-checkpoint   log start offsets moved by DeleteRecords
    <data_dir>/topic-configs/                per-topic config overrides (topic_config_store)
    <data_dir>/<topic>-<partition>/          one PartitionLog each
        partition.metadata                   "version: 0" and the topic id
        00000000000000000000.log / .index / .timeindex
        00000000000000000042.snapshot        producer state at offset 42 (docs/SNAPSHOT_FORMAT.md)
        00000000000000000000.log.deleted     a segment retention/DeleteRecords removed, waiting
                                             file.delete.delay.ms (with its indexes)
    <data_dir>/<topic>-<partition>.<uuid>-delete/   a deleted topic's partition, likewise

Topic ids and the cluster id are random UUIDs written once and kept across restarts, because
clients cache them (Fetch v13+ and Metadata v10+ carry topic ids).

Recovery at open follows Kafka's LogManager: the clean-shutdown marker is removed as soon as
it is seen (so a crash from then on is detected next time), and every partition is opened in
"clean" mode (trust indexes and the snapshot at the log end) when it was there, otherwise in
"crash" mode (check every batch after the recovery point, cut torn tails, replay).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from protocol.errors import ErrorCode

from .atomic_file import TMP_SUFFIX, fsync_all, fsync_dir, write_atomic, write_new_files
from .delayed_delete import DelayedDeletes
from .log_config import LogConfig
from .partition_log import PartitionLog, PendingSnapshot, RecoveryMode

log = logging.getLogger(__name__)

META_PROPERTIES = "meta.properties"
# Kafka's name (LogLoader.CleanShutdownFileName).
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
PARTITION_METADATA = "partition.metadata"
# Kafka's name and format (LogManager.LogStartOffsetCheckpointFile): "0", a count, then
# "topic partition offset" lines. Needed because DeleteRecords can move a log start offset
# into the middle of a segment, which the segment files alone cannot say.
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
# A deleted partition's directory is first renamed "<topic>-<partition>.<uuid>-delete"
# (Kafka's naming), so a crash in the middle of a deletion never leaves a half topic.
DELETE_SUFFIX = "-delete"
MAX_TOPIC_NAME_LENGTH = 249
# The longest file name most file systems (ext4, xfs, btrfs) accept, in bytes.
MAX_FILE_NAME_BYTES = 255
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
_PARTITION_DIR = re.compile(r"(.+)-(\d+)")


class StoreError(Exception):
    """The data directory cannot be used as it is (mismatched ids, unreadable metadata)."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class InvalidTopicError(ValueError):
    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class TopicAlreadyExistsError(ValueError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(ValueError):
    error_code = ErrorCode.INVALID_PARTITIONS


class UnknownTopicError(KeyError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class TopicDeletionError(Exception):
    """The disk refused a topic deletion; the topic is left as it was."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


def delete_dir_name(topic: str, partition: int) -> str:
    """Kafka's LocalLog.logDeleteDirName: ``<topic>-<partition>.<uuid hex>-delete``, the topic
    part cut short so the name fits in 255 bytes (logDirNameWithSuffixCappedLength): a
    249-character topic would otherwise get a name the file system refuses."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_SUFFIX}"
    # Topic names are ASCII ([a-zA-Z0-9._-]): characters are bytes.
    return topic[: MAX_FILE_NAME_BYTES - len(suffix)] + suffix


def valid_topic_name(name: str) -> bool:
    """Kafka's Topic.validate: 1..249 chars of [a-zA-Z0-9._-], and not "." or ".."."""
    return (
        0 < len(name) <= MAX_TOPIC_NAME_LENGTH
        and name not in (".", "..")
        and _TOPIC_NAME.fullmatch(name) is not None
    )


def uuid_to_str(value: bytes) -> str:
    """Kafka's Uuid.toString: base64url without padding (22 characters)."""
    return base64.urlsafe_b64encode(value).rstrip(b"=").decode("ascii")


def uuid_from_str(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a 16-byte uuid: {text!r}")
    return raw


def random_uuid() -> bytes:
    """Kafka's Uuid.randomUuid: never the all-zero id, never a string starting with "-"
    (it would read as a command-line option)."""
    while True:
        value = uuid.uuid4().bytes
        if value != bytes(16) and not uuid_to_str(value).startswith("-"):
            return value


def _read_properties(path: Path) -> dict[str, str]:
    """Java .properties subset: key=value lines, # and ! comments."""
    props: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    return props


@dataclass
class TopicInfo:
    name: str
    topic_id: bytes
    partitions: list[PartitionLog] = field(default_factory=list)


class Store:
    def __init__(
        self, data_dir: Path, node_id: int, cluster_id: str, log_config: LogConfig
    ) -> None:
        self.data_dir = data_dir
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.log_config = log_config
        self.clean_start = False
        self.recovery_summary = ""
        self._topics: dict[str, TopicInfo] = {}
        # Names whose partitions a worker thread is preparing (prepare_topic); they count as
        # taken, so nothing else creates them meanwhile.
        self.preparing: set[str] = set()
        # Writes roll snapshots off the owner's thread (set_snapshot_writer); None: in line.
        self._snapshot_writer: Callable[[PendingSnapshot], None] | None = None
        self._by_id: dict[bytes, TopicInfo] = {}
        self._closed = False
        # Files of deleted segments and topics, waiting file.delete.delay.ms (the owner runs
        # it: see storage.delayed_delete).
        self.delayed_deletes = DelayedDeletes()

    @property
    def segment_bytes(self) -> int:
        return self.log_config.segment_bytes

    @property
    def index_interval_bytes(self) -> int:
        return self.log_config.index_interval_bytes

    @classmethod
    def open(
        cls,
        data_dir: str | os.PathLike[str],
        *,
        node_id: int,
        log_config: LogConfig | None = None,
        segment_bytes: int | None = None,
        index_interval_bytes: int | None = None,
    ) -> Store:
        """Open the data directory and recover every partition.

        ``segment_bytes`` and ``index_interval_bytes`` override ``log_config`` when given.
        """
        started = time.monotonic()
        config = log_config or LogConfig()
        if segment_bytes is not None:
            config = replace(config, segment_bytes=segment_bytes)
        if index_interval_bytes is not None:
            config = replace(config, index_interval_bytes=index_interval_bytes)
        d = Path(data_dir)
        d.mkdir(parents=True, exist_ok=True)
        fresh = not (d / META_PROPERTIES).exists()
        cluster_id = _load_or_create_meta(d, node_id)
        store = cls(d, node_id, cluster_id, config)
        marker = d / CLEAN_SHUTDOWN_MARKER
        store.clean_start = marker.exists()
        if store.clean_start:
            log.info("clean shutdown marker found: skipping log recovery")
            # Gone before anything is written, so a crash from now on is seen as one.
            marker.unlink()
            fsync_dir(d)
        elif not fresh:
            log.info("no clean shutdown marker: recovering")
        try:
            store._remove_deleted_dirs()
            store._load_topics("clean" if store.clean_start else "crash")
            store._restore_log_start_offsets()
        except BaseException:
            store.close_unclean()
            raise
        store.recovery_summary = store._summarise(fresh, (time.monotonic() - started) * 1000)
        log.info("log recovery done: %s", store.recovery_summary)
        return store

    def _summarise(self, fresh: bool, elapsed_ms: float) -> str:
        logs = self.partition_logs()
        cut = [
            f"{plog.name}: {t.bytes_cut} bytes at offset {t.offset}"
            for plog in logs
            for t in plog.recovery.truncations
        ]
        truncated = sum(1 for plog in logs if plog.recovery.truncations)
        counts = (
            (sum(plog.recovery.indexes_rebuilt for plog in logs), "indexes rebuilt"),
            (sum(len(plog.recovery.snapshots_set_aside) for plog in logs), "snapshots set aside"),
            (sum(plog.recovery.replayed_batches for plog in logs), "batches replayed"),
        )
        parts = [f"{len(logs)} partitions"]
        if truncated or not (self.clean_start or fresh):
            parts.append(f"truncated {truncated}" + (f" ({', '.join(cut)})" if cut else ""))
        parts += [f"{n} {what}" for n, what in counts if n]
        parts.append(f"{elapsed_ms:.0f} ms")
        if self.clean_start:
            head = "clean start, "
        elif fresh:
            head = "new data directory, "
        else:
            head = "recovered after crash: "
        return head + ", ".join(parts)

    def _open_partition(
        self, name: str, index: int, mode: RecoveryMode, *, sync_dir: bool = True
    ) -> PartitionLog:
        plog = PartitionLog.open(
            self.data_dir / f"{name}-{index}",
            name,
            index,
            config=self.log_config,
            mode=mode,
            sync_dir=sync_dir,
        )
        plog.file_deleter = self.delayed_deletes
        plog.snapshot_writer = self._snapshot_writer
        return plog

    def set_snapshot_writer(self, writer: Callable[[PendingSnapshot], None] | None) -> None:
        """Have every partition's roll snapshot written by ``writer`` (which runs
        ``PendingSnapshot.write`` on a worker thread, then ``finish_snapshot``)."""
        self._snapshot_writer = writer
        for plog in self.partition_logs():
            plog.snapshot_writer = writer

    def _load_topics(self, mode: RecoveryMode) -> None:
        found: dict[str, dict[int, bytes]] = {}
        for entry in sorted(os.listdir(self.data_dir)):
            m = _PARTITION_DIR.fullmatch(entry)
            path = self.data_dir / entry
            if m is None or not path.is_dir() or not valid_topic_name(m.group(1)):
                continue
            meta = path / PARTITION_METADATA
            if not meta.exists():
                # A crash between mkdir and the metadata write: the partition never existed.
                log.warning("ignoring %s: no %s", path, PARTITION_METADATA)
                continue
            found.setdefault(m.group(1), {})[int(m.group(2))] = _read_partition_metadata(meta)
        for name, parts in sorted(found.items()):
            ids = set(parts.values())
            if len(ids) != 1:
                raise StoreError(f"topic {name}: partitions disagree on the topic id")
            count = 0
            while count in parts:
                count += 1
            leftovers = sorted(index for index in parts if index > count)
            if leftovers:
                # Only a crash before a creation's commit point leaves a gap (see
                # _make_partitions): what lies beyond it was never acknowledged. Removed, not
                # ignored, so that a later creation of the name or growth of the topic never
                # finds them (with another topic id); Kafka likewise deletes the stray logs
                # its metadata does not know (LogManager, KIP-858).
                log.warning(
                    "topic %s: removing partition(s) %s, left by an interrupted creation",
                    name,
                    ", ".join(map(str, leftovers)),
                )
                self._remove_leftovers(name, leftovers)
            if count == 0:
                continue
            info = TopicInfo(name, ids.pop())
            # Registered before its partitions open, so a failure closes those opened.
            self._add(info)
            for index in range(count):
                info.partitions.append(self._open_partition(name, index, mode))

    def _remove_leftovers(self, name: str, indexes: list[int]) -> None:
        # Renamed first, as a deletion is, so a crash during the removal leaves a name that
        # the next start removes, never half a partition directory under its own name.
        doomed = []
        for index in indexes:
            target = self.data_dir / delete_dir_name(name, index)
            os.rename(self.data_dir / f"{name}-{index}", target)
            doomed.append(target)
        fsync_dir(self.data_dir)
        for path in doomed:
            shutil.rmtree(path)

    def _add(self, info: TopicInfo) -> None:
        self._topics[info.name] = info
        self._by_id[info.topic_id] = info

    def _remove_deleted_dirs(self) -> None:
        """Finish deletions a crash interrupted (directories already renamed *-delete)."""
        for entry in sorted(os.listdir(self.data_dir)):
            path = self.data_dir / entry
            if entry.endswith(DELETE_SUFFIX) and path.is_dir():
                log.info("removing %s, left by an interrupted topic deletion", entry)
                shutil.rmtree(path)

    def _restore_log_start_offsets(self) -> None:
        path = self.data_dir / LOG_START_CHECKPOINT
        if not path.exists():
            return
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
            if not lines or lines[0].strip() != "0":
                raise ValueError(f"unsupported version {lines[:1]}")
            count = int(lines[1])
            entries = [line.split() for line in lines[2 : 2 + count]]
            if len(entries) != count or any(len(e) != 3 for e in entries):
                raise ValueError("truncated")
            offsets = [(t, int(p), int(o)) for t, p, o in entries]
        except (OSError, ValueError, IndexError) as exc:
            log.warning("ignoring %s: %s", path, exc)
            return
        for topic, index, offset in offsets:
            plog = self.partition(topic, index)
            if plog is not None:
                plog.restore_log_start_offset(offset)

    def _write_log_start_offsets(self) -> None:
        entries = [
            f"{plog.topic} {plog.partition} {plog.log_start_offset}"
            for plog in self.partition_logs()
            if plog.log_start_offset > 0
        ]
        text = "\n".join(["0", str(len(entries)), *entries]) + "\n"
        write_atomic(self.data_dir / LOG_START_CHECKPOINT, text.encode("utf-8"))

    # -- topics --------------------------------------------------------------------------

    def create_topic(self, name: str, num_partitions: int) -> TopicInfo:
        """Create a topic with a fresh topic id; raises on a bad name, count or duplicate."""
        if name in self.preparing:
            raise TopicAlreadyExistsError(f"topic {name!r} is being created")
        info = self.prepare_topic(name, num_partitions)
        self.add_prepared_topic(info)
        return info

    def prepare_topic(self, name: str, num_partitions: int) -> TopicInfo:
        """The disk half of create_topic: directories, metadata files, empty logs.

        Touches only the new topic's own directories, so it may run on a worker thread
        (creating thousands of partitions takes a while of fsyncs); the topic exists once
        ``add_prepared_topic`` (on the owner's thread) has added it. The caller puts the
        name in ``preparing`` for the time being, which keeps other creations of it away.
        """
        return self.prepare_topics([(name, num_partitions)])[0]

    def prepare_topics(self, wanted: list[tuple[str, int]]) -> list[TopicInfo]:
        """``prepare_topic`` of several topics (name, partitions) at once, all their fsyncs
        grouped together (one CreateTopics request's topics); all or none are prepared."""
        if len({name for name, _ in wanted}) != len(wanted):
            raise TopicAlreadyExistsError("a topic named twice")
        for name, num_partitions in wanted:
            if not valid_topic_name(name):
                raise InvalidTopicError(f"invalid topic name {name!r}")
            if name in self._topics:
                raise TopicAlreadyExistsError(f"topic {name!r} already exists")
            if num_partitions < 1:
                raise InvalidPartitionsError(f"number of partitions must be >= 1: {num_partitions}")
        infos = [TopicInfo(name, random_uuid()) for name, _ in wanted]
        counts = [count for _, count in wanted]
        made = self._make_partitions(
            [(info.name, info.topic_id, 0, n) for info, n in zip(infos, counts, strict=True)]
        )
        for info, partitions in zip(infos, made, strict=True):
            info.partitions.extend(partitions)
        return infos

    def add_prepared_topic(self, info: TopicInfo) -> None:
        """Make a topic from ``prepare_topic`` visible (one step on the owner's thread)."""
        if info.name in self._topics:
            raise TopicAlreadyExistsError(f"topic {info.name!r} already exists")
        self._add(info)

    def add_partitions(self, name: str, count: int) -> TopicInfo:
        """Grow a topic to ``count`` partitions (CreatePartitions); never shrinks one."""
        info = self._topics.get(name)
        if info is None:
            raise UnknownTopicError(name)
        return self.add_prepared_partitions(info, self.prepare_partitions(info, count))

    def prepare_partitions(self, info: TopicInfo, count: int) -> list[PartitionLog]:
        """The disk half of add_partitions: the new partitions' directories, metadata files
        and empty logs, from the topic's current count up to ``count``.

        Touches only the new partitions' own directories, so it may run on a worker thread;
        the caller keeps other changes of this topic (growth, deletion) away meanwhile and
        then calls ``add_prepared_partitions`` on the owner's thread.
        """
        current = len(info.partitions)
        if count <= current:
            raise InvalidPartitionsError(
                f"topic {info.name} has {current} partition(s); {count} would not be an increase"
            )
        return self._make_partitions([(info.name, info.topic_id, current, count)])[0]

    def _make_partitions(
        self, wanted: list[tuple[str, bytes, int, int]]
    ) -> list[list[PartitionLog]]:
        """For each (topic, topic id, first, count): partitions ``first`` to ``count - 1``,
        all durable when this returns: directories, partition.metadata files and empty
        first segments.

        The fsyncs are grouped, not made file by file (three per partition, one after the
        other, as write_atomic and a new segment each would): every file is written, then
        the files are fsynced together, then every directory once (the new ones, and the
        data dir whose entries they are), concurrently (atomic_file.fsync_all), so a request
        for thousands of partitions costs a few rounds of journal commits.

        Each topic's partition ``first`` gets its partition.metadata last, once every other
        new partition is durable: that file is the commit point. Recovery counts a topic's
        partitions from 0 up to the first without partition.metadata (``_load_topics``), so
        a crash before it is durable leaves the topic as it was before the request (absent,
        or its old count) and the other new partitions as leftovers that recovery removes;
        a crash after it leaves every new partition. Kafka gets the same all-or-nothing from
        the metadata records of a topic's creation or growth, committed to its log together.
        """
        made: list[list[PartitionLog]] = []
        rest: list[tuple[Path, bytes]] = []
        commits: list[tuple[Path, bytes]] = []
        new_dirs: list[Path] = []
        try:
            for name, topic_id, first, count in wanted:
                text = f"version: 0\ntopic_id: {uuid_to_str(topic_id)}\n".encode("ascii")
                paths = [self.data_dir / f"{name}-{index}" for index in range(first, count)]
                for path in paths:
                    path.mkdir(exist_ok=True)
                new_dirs += paths
                commits.append((paths[0] / PARTITION_METADATA, text))
                rest += [(path / PARTITION_METADATA, text) for path in paths[1:]]
            write_new_files(rest)
            for name, _, first, count in wanted:
                made.append([])
                for index in range(first, count):
                    # "crash": a leftover of an interrupted creation is checked, not trusted.
                    made[-1].append(self._open_partition(name, index, "crash", sync_dir=False))
            fsync_all([*new_dirs, self.data_dir])
            write_new_files(commits)
            fsync_all(path.parent for path, _ in commits)
        except BaseException:
            for plog in (plog for partitions in made for plog in partitions):
                plog.close()
            self._forget_uncommitted(rest, commits)
            raise
        return made

    @staticmethod
    def _forget_uncommitted(
        rest: list[tuple[Path, bytes]], commits: list[tuple[Path, bytes]]
    ) -> None:
        """After a failed creation (the disk refused, the broker goes on): the metadata of a
        topic's partitions whose commit point was not written goes, so that a later creation
        of the name with fewer partitions does not leave these behind with the old topic id,
        contiguous with its own (the next start would refuse the disagreeing ids)."""
        committed = {path.parent.name for path, _ in commits if path.exists()}
        topic_of = {path.parent.name: path.parent.name.rpartition("-")[0] for path, _ in rest}
        live = {name.rpartition("-")[0] for name in committed}
        for path, _ in rest:
            if topic_of[path.parent.name] not in live:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
                    path.with_name(path.name + TMP_SUFFIX).unlink(missing_ok=True)

    def add_prepared_partitions(self, info: TopicInfo, added: list[PartitionLog]) -> TopicInfo:
        """Make partitions from ``prepare_partitions`` part of their topic (one step on the
        owner's thread)."""
        if self._topics.get(info.name) is not info or (
            added and added[0].partition != len(info.partitions)
        ):
            for plog in added:
                plog.close()
            raise UnknownTopicError(info.name)
        info.partitions.extend(added)
        return info

    def delete_topic(self, name: str) -> TopicInfo:
        """Remove a topic and its data from disk (DeleteTopics).

        The partition directories are renamed ``*.<uuid>-delete`` first (Kafka's
        LogManager.asyncDelete), atomically for each and made durable together, so a crash
        leaves either the whole topic or a leftover that the next open removes. Their files
        stay open and are closed and removed after the broker's file.delete.delay.ms (Kafka's
        LogManager.deleteLogs uses the broker default, not the topic's), so a fetch response
        being sent from them completes. When a rename fails, those already done are undone
        and TopicDeletionError is raised: the topic stays whole and served, never half gone
        (a re-created topic must not find the old records in a directory that kept its name).
        """
        info = self.detach_topic(name)
        try:
            doomed = self.rename_for_deletion(info)
        except TopicDeletionError:
            self.reattach_topic(info)
            raise
        self.finish_deletion(info, doomed)
        return info

    # delete_topic in three steps, so that the renames may run on a worker thread (a topic
    # of thousands of partitions takes a while): detach_topic and then reattach_topic or
    # finish_deletion on the owner's thread, rename_for_deletion in between anywhere.

    def detach_topic(self, name: str) -> TopicInfo:
        """The topic is gone for every request from now on; its name stays taken (in
        ``preparing``) until ``reattach_topic`` or ``finish_deletion``, so nothing creates
        it again while its directories still have their names."""
        info = self._topics.get(name)
        if info is None:
            raise UnknownTopicError(name)
        del self._topics[name]
        self._by_id.pop(info.topic_id, None)
        self.preparing.add(name)
        return info

    def rename_for_deletion(self, info: TopicInfo) -> list[Path]:
        """Rename the partition directories ``*.<uuid>-delete`` and make that durable; on a
        failure undo the renames done and raise TopicDeletionError."""
        return self._rename_for_deletion(info)

    def reattach_topic(self, info: TopicInfo) -> None:
        """The deletion failed: the topic is served again, whole."""
        self.preparing.discard(info.name)
        self._add(info)

    def finish_deletion(self, info: TopicInfo, doomed: list[Path]) -> None:
        self.preparing.discard(info.name)

        def close() -> None:
            for plog in info.partitions:
                plog.close_unclean()

        def remove() -> None:
            close()
            for path in doomed:
                shutil.rmtree(path)
            fsync_dir(self.data_dir)

        self.delayed_deletes.schedule(
            self.log_config.file_delete_delay_ms,
            f"topic {info.name} ({', '.join(p.name for p in doomed)})",
            remove,
            close,
        )
        if any(plog.log_start_offset > 0 for plog in info.partitions):
            # A topic re-created under this name must not inherit the old log starts.
            self._write_log_start_offsets()

    def _rename_for_deletion(self, info: TopicInfo) -> list[Path]:
        done: list[tuple[Path, Path]] = []
        try:
            for plog in info.partitions:
                target = self.data_dir / delete_dir_name(info.name, plog.partition)
                os.rename(plog.path, target)
                done.append((plog.path, target))
            fsync_dir(self.data_dir)
        except OSError as exc:
            failed = plog.path.name if len(done) < len(info.partitions) else self.data_dir.name
            for original, target in reversed(done):
                try:
                    os.rename(target, original)
                except OSError:
                    log.exception("cannot move %s back to %s", target.name, original.name)
            try:
                fsync_dir(self.data_dir)
            except OSError:
                log.exception("cannot fsync %s", self.data_dir)
            raise TopicDeletionError(
                f"Error while deleting topic {info.name}: {failed}: {exc.strerror or exc}"
            ) from exc
        return [target for _, target in done]

    def delete_records(self, name: str, index: int, offset: int) -> int:
        """DeleteRecords on one partition: returns the new log start offset (low watermark).

        Raises UnknownTopicError, or OffsetOutOfRangeError (partition_log) for an offset
        above the high watermark. The new start is checkpointed before returning.
        """
        plog = self.partition(name, index)
        if plog is None:
            raise UnknownTopicError(f"{name}-{index}")
        before = plog.log_start_offset
        after = plog.delete_records_before(offset)
        if after != before:
            self._write_log_start_offsets()
        return after

    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topic_by_id(self, topic_id: bytes) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def topics(self) -> list[TopicInfo]:
        return list(self._topics.values())

    def partition(self, name: str, index: int) -> PartitionLog | None:
        info = self._topics.get(name)
        if info is None or not 0 <= index < len(info.partitions):
            return None
        return info.partitions[index]

    def partition_logs(self) -> list[PartitionLog]:
        return [plog for info in self._topics.values() for plog in info.partitions]

    # -- housekeeping (the owner schedules these) ----------------------------------------

    def snapshot_all(self) -> int:
        """Snapshot every partition whose state changed; returns how many were written."""
        return sum(plog.take_snapshot() for plog in self.partition_logs())

    def apply_retention(self, now_ms: int) -> int:
        """retention.ms / retention.bytes on every partition; returns segments deleted."""
        return sum(plog.apply_retention(now_ms) for plog in self.partition_logs())

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """producer.id.expiration.ms on every partition; returns producer states dropped."""
        return sum(plog.expire_producers(now_ms, expiration_ms) for plog in self.partition_logs())

    def flush_all(self) -> None:
        for plog in self.partition_logs():
            plog.flush()

    flush = flush_all

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        """Clean shutdown: flush, final snapshots, close files, then the marker.

        The marker is written last and made durable, so its presence proves every partition
        was flushed and snapshotted at its log end.
        """
        if self._closed:
            return
        # Nothing can be reading the deleted files any more: remove them now rather than
        # leave them to the next start-up (where Kafka leaves them).
        self.delayed_deletes.run_all()
        try:
            for plog in self.partition_logs():
                plog.close()
        except BaseException:
            # No marker: the next start recovers as after a crash.
            self.close_unclean()
            raise
        self._closed = True
        offline = [plog.name for plog in self.partition_logs() if plog.offline is not None]
        if offline:
            # Their logs may end in a torn write: the next start recovers as after a crash,
            # as Kafka does for a log dir that went offline.
            log.warning("no clean-shutdown marker: partition(s) offline: %s", ", ".join(offline))
            return
        write_atomic(self.data_dir / CLEAN_SHUTDOWN_MARKER, b"")

    def close_unclean(self) -> None:
        """Close files without flushing, snapshotting or writing the marker (a crash)."""
        if self._closed:
            return
        self.delayed_deletes.abandon()
        for plog in self.partition_logs():
            plog.close_unclean()
        self._closed = True


def _load_or_create_meta(data_dir: Path, node_id: int) -> str:
    """Return the cluster id, writing meta.properties on first use."""
    path = data_dir / META_PROPERTIES
    if path.exists():
        props = _read_properties(path)
        if props.get("version") != "1":
            raise StoreError(f"{path}: unsupported version {props.get('version')!r}")
        stored_node = props.get("node.id")
        if stored_node != str(node_id):
            # Kafka refuses to start when the stored node.id differs from the configured one.
            raise StoreError(f"{path}: stored node.id {stored_node} but configured {node_id}")
        cluster_id = props.get("cluster.id", "")
        try:
            uuid_from_str(cluster_id)
        except ValueError as exc:
            raise StoreError(f"{path}: bad cluster.id {cluster_id!r}") from exc
        return cluster_id
    cluster_id = uuid_to_str(random_uuid())
    text = (
        "#\n"
        "#Written by minikafka\n"
        f"cluster.id={cluster_id}\n"
        f"directory.id={uuid_to_str(random_uuid())}\n"
        f"node.id={node_id}\n"
        "version=1\n"
    )
    write_atomic(path, text.encode("ascii"))
    return cluster_id


def read_directory_id(data_dir: Path) -> bytes | None:
    """The log directory's id from meta.properties (Kafka's directory.id, KIP-858), if any."""
    try:
        text = _read_properties(data_dir / META_PROPERTIES).get("directory.id", "")
        return uuid_from_str(text)
    except (OSError, ValueError):
        return None


def _read_partition_metadata(path: Path) -> bytes:
    """Parse Kafka's partition.metadata ("version: 0" / "topic_id: <base64url>")."""
    fields: dict[str, str] = {}
    for line in path.read_text(encoding="ascii").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if fields.get("version") != "0":
        raise StoreError(f"{path}: unsupported version {fields.get('version')!r}")
    try:
        return uuid_from_str(fields.get("topic_id", ""))
    except ValueError as exc:
        raise StoreError(f"{path}: bad topic_id") from exc
