"""One listener's server sockets and the loop that accepts from them (Kafka's Acceptor).

Accepting is our own loop rather than asyncio's server so that it can stop, as Kafka's
Acceptor does, while ``max.connections`` connections are open: the accepted connection
waits unread for a slot and the ones behind it stay in the listen backlog
(ConnectionQuotas.inc -> waitForConnectionSlot). A connection over its address's
``max.connections.per.ip`` is closed at once. It also stops while accepting would leave
the log too few file descriptors (broker.net.fd_headroom), until a connection closes or the
log gives some back. Everything else is asyncio's own transport
(``connect_accepted_socket``), with asyncio's TCP_NODELAY; SO_KEEPALIVE as Kafka sets it.
Accepting is loop.sock_accept's own way (try, else wait for the socket to be readable) in a
future of our own, so that closing (a broker stopping, one node of a simulated cluster) closes
a connection accepted at that moment instead of losing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

from broker.limits.connection_quotas import ConnectionQuotas, normalize
from broker.net.fd_headroom import FdHeadroom
from broker.runtime.startup_errors import StartupError, bind_failure

log = logging.getLogger(__name__)

# Kafka's socket.listen.backlog.size default is 50, with an acceptor thread of its own that
# keeps the queue short; here accepting shares the event loop with every request, and a
# burst of connects while a pass of the loop is long (or the process waits for a core)
# overflowed a backlog of 100: each overflow costs that client a 1 s SYN retry (3-4 per
# 1,000 connections opened one after another). 1024 is what Tokio (Tansu) and Go listen with.
LISTEN_BACKLOG = 1024
# Connections taken from the backlog in one pass of the event loop (each is a transport and
# a task): the rest wait there for the next pass, so a pass stays short.
ACCEPT_BURST = 100
# After EMFILE/ENFILE, wait before accepting again (asyncio's ACCEPT_RETRY_DELAY).
ACCEPT_RETRY_DELAY_S = 1.0
# Stopped for want of file descriptors: how often to look again when no connection closes
# (the log may free some: retention, deletions).
DESCRIPTOR_POLL_S = 1.0

ProtocolFactory = Callable[[str], asyncio.BaseProtocol]


class BindError(StartupError):
    """A listener's address cannot be bound (in use, not local): the broker does not start."""


def bind(
    host: str, port: int, what: str = "listener", fix: str = "another port"
) -> list[socket.socket]:
    """Listening sockets for ``host`` ("" = every interface) as asyncio.create_server binds.

    Raises BindError naming ``what`` (the listener), the address and the reason, with
    ``fix`` (the setting that moves it) as the suggestion (broker.runtime.startup_errors).
    """
    sockets: list[socket.socket] = []
    try:
        infos = socket.getaddrinfo(
            host or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE
        )
        for family, type_, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, type_, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                # Each family gets its own socket, as asyncio does.
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise BindError(str(bind_failure(what, host, port, exc, fix))) from exc
    return sockets


class Acceptor:
    def __init__(
        self,
        sockets: list[socket.socket],
        factory: ProtocolFactory,
        quotas: ConnectionQuotas,
        headroom: FdHeadroom | None = None,
    ) -> None:
        self.sockets = sockets
        self._factory = factory
        self._quotas = quotas
        self._headroom = headroom
        self._tasks: list[asyncio.Task[None]] = []
        # Listening sockets' file descriptors with an accept waiting on them.
        self._reading: set[int] = set()
        # Accepted connections whose transports are being made.
        self._connecting: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        port: int = self.sockets[0].getsockname()[1]
        return port

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._accept_from(sock)) for sock in self.sockets]

    def close(self) -> None:
        loop = asyncio.get_running_loop() if self._reading else None
        for fd in self._reading:
            # Before the sockets close: their numbers may be reused at once.
            assert loop is not None
            loop.remove_reader(fd)
        self._reading.clear()
        for task in (*self._tasks, *self._connecting):
            task.cancel()
        for sock in self.sockets:
            sock.close()

    async def _accept_from(self, server: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        headroom = self._headroom
        while True:
            if headroom is not None and not headroom.room_for_a_connection():
                await self._wait_for_descriptors(headroom)
            accepted = self._accept(loop, server)
            try:
                conn, peer = await accepted
            except asyncio.CancelledError:
                # Accepted just before the cancellation (a node stopping, the broker
                # closing): loop.sock_accept would lose that socket, open, to the GC.
                if accepted.done() and not accepted.cancelled() and not accepted.exception():
                    accepted.result()[0].close()
                raise
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.error("cannot accept connections for now: %s", exc)
                    await asyncio.sleep(ACCEPT_RETRY_DELAY_S)
                    continue
                if exc.errno in (errno.ECONNABORTED, errno.EAGAIN):
                    continue
                raise
            if headroom is not None:
                headroom.accepted()
            try:
                await self._quotas.wait_for_slot()
            except asyncio.CancelledError:
                conn.close()
                raise
            self._set_up(loop, conn, normalize(peer[0]))
            # Kafka's Acceptor thread takes each connection as soon as it is ready; here one
            # per pass of the event loop (a pass that also serves every readable connection)
            # would let a burst of connects overflow the listen backlog, and each overflow
            # costs that client a SYN retry of a second. So the ones already waiting are
            # taken now, while slots and file descriptors remain.
            for conn, peer in self._waiting(server, headroom):
                self._set_up(loop, conn, normalize(peer[0]))

    def _waiting(
        self, server: socket.socket, headroom: FdHeadroom | None
    ) -> Iterator[tuple[socket.socket, Any]]:
        """Connections the kernel has ready, up to ACCEPT_BURST, each taken while a
        max.connections slot is free and the log keeps its file descriptors."""
        for _ in range(ACCEPT_BURST):
            if not self._quotas.slot_free():
                return
            if headroom is not None and not headroom.room_for_a_connection():
                return
            try:
                conn, peer = server.accept()
            except OSError:
                return  # nothing waiting, or an error the next accept reports
            conn.setblocking(False)
            if headroom is not None:
                headroom.accepted()
            yield conn, peer

    def _set_up(self, loop: asyncio.AbstractEventLoop, conn: socket.socket, address: str) -> None:
        """The accepted socket becomes a connection (or is closed, over its address's
        max.connections.per.ip); its transport is made in a task of its own, so that the
        connections of a burst are made in one pass of the loop."""
        if not self._quotas.try_inc(address):
            conn.close()
            return
        task = loop.create_task(self._connect(loop, conn, address))
        self._connecting.add(task)
        task.add_done_callback(self._connecting.discard)

    async def _connect(
        self, loop: asyncio.AbstractEventLoop, conn: socket.socket, address: str
    ) -> None:
        try:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            await loop.connect_accepted_socket(functools.partial(self._factory, address), conn)
        except OSError as exc:
            log.warning("closing connection from %s: setting it up failed: %s", address, exc)
            self._quotas.dec(address)
            with contextlib.suppress(OSError):
                conn.close()
        except asyncio.CancelledError:
            # The acceptor is closing (a node stopping, the broker closing); asyncio closes
            # a transport already made, and this closes the socket if none was.
            with contextlib.suppress(OSError):
                conn.close()
            raise

    def _accept(
        self, loop: asyncio.AbstractEventLoop, server: socket.socket
    ) -> asyncio.Future[tuple[socket.socket, Any]]:
        """The next connection on ``server``, in a future of our own (what loop.sock_accept
        does, but a connection accepted before a cancellation stays in the future)."""
        accepted: asyncio.Future[tuple[socket.socket, Any]] = loop.create_future()
        fd = server.fileno()

        def ready() -> None:
            if accepted.done():
                return
            try:
                conn, peer = server.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                accepted.set_exception(exc)
                return
            conn.setblocking(False)
            accepted.set_result((conn, peer))

        def done(_: object) -> None:
            if fd in self._reading:
                self._reading.discard(fd)
                loop.remove_reader(fd)

        ready()  # a connection already waiting is taken at once, as sock_accept does
        if not accepted.done():
            self._reading.add(fd)
            loop.add_reader(fd, ready)
            accepted.add_done_callback(done)
        return accepted

    async def _wait_for_descriptors(self, headroom: FdHeadroom) -> None:
        """Accept nothing (connections wait in the listen backlog) until accepting one
        leaves the log its reserve of file descriptors."""
        if not headroom.stopped:
            headroom.stopped = True
            log.warning("stopped accepting connections: %s", headroom.describe())
        while not headroom.room_for_a_connection():
            await self._quotas.wait_for_close(DESCRIPTOR_POLL_S)
        if headroom.stopped:
            headroom.stopped = False
            log.info("accepting connections again: %s", headroom.describe())
