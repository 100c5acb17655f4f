"""One broker per data directory: an exclusive lock on ``<log.dirs>/.lock`` (Kafka's
LogManager.lockLogDirs).

Two brokers writing one directory overwrite each other's acknowledged records, so a broker
takes this lock before it reads or writes anything there and holds it while it runs. It is
an OS lock (``flock``): the kernel drops it when the process dies, SIGKILL included, so no
stale lock survives a crash. ``flock`` belongs to the open file, not to the process, so two
brokers in one process (tests, ``minikafka.Broker``) exclude each other as well, as Kafka's
FileLock does between threads of one JVM. The file is opened close-on-exec: a worker
process the broker starts never holds it.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

LOCK_FILE = ".lock"


class DataDirLockedError(Exception):
    """Another broker (process or thread) holds the data directory's lock."""


class DataDirLock:
    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, data_dir: str | os.PathLike[str]) -> DataDirLock:
        """Lock ``data_dir`` (created if missing) or raise DataDirLockedError at once."""
        directory = Path(data_dir).absolute()
        directory.mkdir(parents=True, exist_ok=True)
        # A directory this user cannot write fails here, before a file is made in it, not
        # half-way through recovery (os.access answers for the real uid, as the broker runs).
        if not os.access(directory, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(directory))
        path = directory / LOCK_FILE
        # No O_TRUNC: opening the lock another broker holds must change nothing on disk.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise DataDirLockedError(
                    f"Failed to acquire lock on file {LOCK_FILE} in {directory}. A Kafka "
                    "instance in another process or thread is using this directory. Stop that "
                    "broker, or point log.dirs at another directory."
                ) from None
            raise
        return cls(path, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Unlock (closing the file unlocks it); a second call does nothing."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
