"""Write a small state file so that a crash leaves either the old or the new content.

The sequence is Kafka's for its checkpoint files: write ``<name>.tmp``, fsync it, rename it
over the target, then fsync the directory so the rename itself survives a power loss.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TMP_SUFFIX = ".tmp"


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a created, renamed or removed directory entry durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# How many fsyncs are in flight at once in fsync_all. The file system journals them in one
# commit (ext4's jbd2 and xfs's log group concurrent fsyncs), so a few threads make a
# thousand fsyncs cost a few commits' time instead of a thousand; more gain nothing here.
FSYNC_THREADS = 8


def _fsync_path(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if os.path.isdir(path) else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_all(paths: Iterable[str | os.PathLike[str]]) -> None:
    """fsync every file and directory in ``paths``, several at once; returns when all are
    durable, raises the first failure (after every fsync has been tried or finished)."""
    todo = list(paths)
    if len(todo) <= 1:
        for path in todo:
            _fsync_path(path)
        return
    threads = min(FSYNC_THREADS, len(todo))
    # One task per thread, each a share of the paths: a task per path would cost more in
    # the pool's bookkeeping than the fsyncs of an idle file system.
    shares = [todo[i::threads] for i in range(threads)]
    with ThreadPoolExecutor(threads, "fsync") as pool:
        for _ in pool.map(_fsync_each, shares):
            pass


def _fsync_each(paths: list[str | os.PathLike[str]]) -> None:
    for path in paths:
        _fsync_path(path)


def write_new_files(files: Sequence[tuple[Path, bytes]]) -> None:
    """``write_atomic`` of many files with the fsyncs grouped: every ``<name>.tmp`` is
    written, then all are fsynced together, then each is renamed in the order given. The
    directories are not fsynced: the caller does that once per directory (fsync_all) after
    the renames, when it has made every other name it wants durable with them.

    A crash leaves each file absent (or its old content) or whole, never torn: a name points
    at content only once that content is durable, as in write_atomic.
    """
    tmps = [target.with_name(target.name + TMP_SUFFIX) for target, _ in files]
    for tmp, (_, data) in zip(tmps, files, strict=True):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)
    fsync_all(tmps)
    for tmp, (target, _) in zip(tmps, files, strict=True):
        os.replace(tmp, target)


# Files holding secrets (SCRAM keys, ACLs): readable by the broker's user only.
PRIVATE_MODE = 0o600


def write_atomic(
    path: str | os.PathLike[str], data: bytes | bytearray | memoryview, *, private: bool = False
) -> None:
    """Replace ``path`` with ``data``: tmp -> fsync -> rename -> fsync(dir). A ``private``
    file is created with mode 0600, so its content is never readable by others, not even
    for a moment (a stale tmp file, whatever its mode, is removed first)."""
    target = Path(path)
    tmp = target.with_name(target.name + TMP_SUFFIX)
    if private:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    else:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    fsync_dir(target.parent)


def keep_private(path: str | os.PathLike[str]) -> None:
    """Take group and other access away from an existing secrets file (one written with
    the default mode by an earlier version)."""
    with contextlib.suppress(FileNotFoundError):
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, PRIVATE_MODE)


def write_atomic_at(dir_fd: int, name: str, data: bytes | bytearray | memoryview) -> None:
    """``write_atomic`` of ``name`` in the directory open as ``dir_fd``: the file lands in
    that very directory even if it has been renamed meanwhile (a worker thread writing into
    a partition directory that a topic deletion renames away)."""
    tmp = name + TMP_SUFFIX
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    os.fsync(dir_fd)
