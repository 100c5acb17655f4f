"""Write a small state file so that a crash leaves either the old or the new content.

The sequence is Kafka's for its checkpoint files: write ``<name>.tmp``, fsync it, rename it
over the target, then fsync the directory so the rename itself survives a power loss.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TMP_SUFFIX = ".tmp"


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a created, renamed or removed directory entry durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
