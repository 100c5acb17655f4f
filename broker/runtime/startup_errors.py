"""Why the broker cannot start, in one line that names the listener or the path and the fix.

Kafka ends such a start with "Fatal error during KafkaServer startup" and a stack trace; a
newcomer needs to know which port or directory is wrong and what to change. Every failure
here is raised before the data directory is read or written (broker.lifecycle.server's start order),
and ``minikafka`` prints it as one ERROR line and exits 2, as for an invalid configuration.
"""

from __future__ import annotations

import errno
import os
import resource
import socket
from collections.abc import Sequence
from pathlib import Path

__all__ = ["StartupError", "bind_failure", "data_dir_failure", "listeners_fix"]

# Below this port, binding needs root or CAP_NET_BIND_SERVICE (Linux's default
# net.ipv4.ip_unprivileged_port_start).
_FIRST_UNPRIVILEGED_PORT = 1024


class StartupError(Exception):
    """The environment refuses what the configuration asks for: the broker does not start."""


def bind_failure(what: str, host: str, port: int, exc: OSError, fix: str) -> StartupError:
    """``what`` names the listener; ``fix`` is the property setting that would move it,
    with ``<port>`` where the user picks another port."""
    where = _host_port(host or "0.0.0.0", port)
    if isinstance(exc, socket.gaierror):
        return StartupError(
            f"{what}: host {host!r} does not resolve ({exc.strerror or exc}): use a name "
            "this machine resolves or an IP address (0.0.0.0 for every interface)"
        )
    if exc.errno == errno.EADDRINUSE:
        return StartupError(
            f"{what}: {where} is in use: is another broker running? {fix} picks another port"
        )
    if exc.errno == errno.EACCES and 0 < port < _FIRST_UNPRIVILEGED_PORT:
        return StartupError(
            f"{what}: cannot bind {where}: ports below {_FIRST_UNPRIVILEGED_PORT} need root "
            f"(or CAP_NET_BIND_SERVICE); {fix} with a port above {_FIRST_UNPRIVILEGED_PORT - 1}"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return StartupError(
            f"{what}: {host} is not an address of this machine: bind 0.0.0.0 or a local "
            "address and give the name clients use in advertised.listeners"
        )
    return StartupError(f"{what}: cannot bind {where}: {exc.strerror or exc}")


def listeners_fix(listeners: Sequence[tuple[str, str, int]], failing: str) -> str:
    """``--override listeners=...`` with the failing listener's port left for the user."""
    items = [
        f"{name}://{_bracketed(host)}:<port>"
        if name == failing
        else f"{name}://{_host_port(host, port)}"
        for name, host, port in listeners
    ]
    return "--override listeners=" + ",".join(items)


def data_dir_failure(log_dir: str, exc: OSError) -> StartupError:
    """A data directory that cannot be created, written or is not a directory."""
    path = exc.filename if isinstance(exc.filename, str) else log_dir
    if isinstance(exc, FileExistsError | NotADirectoryError):
        return StartupError(
            f"log.dirs {log_dir}: {path} is a file, not a directory: point log.dirs at a "
            "directory (or move the file away)"
        )
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        # Every segment keeps its log file open, as Kafka's do; Kafka's docs ask for a
        # descriptor limit of at least 100000 for a broker.
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        which = "this process's" if exc.errno == errno.EMFILE else "the system's"
        return StartupError(
            f"log.dirs {log_dir}: {which} open-file limit was reached while opening {path} "
            f"(this process may open {soft}): each segment keeps its log file open, as "
            "Kafka's do; raise the limit (ulimit -n 100000, or the container's nofile "
            "ulimit) or keep fewer segments (a larger segment.bytes)"
        )
    if exc.errno == errno.EROFS:
        return StartupError(
            f"log.dirs {log_dir}: {path} is on a read-only file system: mount it read-write "
            "or choose another log.dirs"
        )
    if isinstance(exc, PermissionError):
        me = os.geteuid()
        path, owner = _owner(Path(path))
        if owner is not None and owner != me:
            # The Docker image runs as its own uid (Dockerfile ARG UID): a bind mount made by
            # another user is the usual cause.
            rebuild = f", or build the image with --build-arg UID={owner}" if owner else ""
            return StartupError(
                f"log.dirs {log_dir}: {path} is owned by uid {owner} and this broker runs as "
                f"uid {me}, which cannot write it: chown -R {me} {path} (for a Docker bind "
                f"mount, chown the bind mount on the host){rebuild}"
            )
        return StartupError(
            f"log.dirs {log_dir}: {path} is not writable by uid {me}: "
            "give it write permission (chmod u+rwx) or choose another log.dirs"
        )
    return StartupError(f"log.dirs {log_dir}: {path}: {exc.strerror or exc}")


def _owner(path: Path) -> tuple[str, int | None]:
    """``path`` or its nearest existing parent (what refused the creation), and its owner."""
    for candidate in (path, *path.absolute().parents):
        try:
            return str(candidate), candidate.stat().st_uid
        except OSError:
            continue
    return str(path), None


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _host_port(host: str, port: int) -> str:
    return f"{_bracketed(host)}:{port}"
