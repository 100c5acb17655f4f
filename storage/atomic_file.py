"""Write a small state file so that a crash leaves either the old or the new content.

The sequence is Kafka's for its checkpoint files: write ``<name>.tmp``, fsync it, rename it
over the target, then fsync the directory so the rename itself survives a power loss.
"""

from __future__ import annotations

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


def write_atomic(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> None:
    """Replace ``path`` with ``data``: tmp -> fsync -> rename -> fsync(dir)."""
    target = Path(path)
    tmp = target.with_name(target.name + TMP_SUFFIX)
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
