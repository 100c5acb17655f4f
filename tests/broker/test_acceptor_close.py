"""An acceptor closing (a cluster node stopping, the broker stopping) never leaks a socket."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from broker.limits.connection_quotas import ConnectionQuotas
from broker.net.acceptor import Acceptor, bind


class _Kept(asyncio.Protocol):
    transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport


def _acceptor(made: list[_Kept]) -> Acceptor:
    def factory(address: str) -> asyncio.Protocol:
        protocol = _Kept()
        made.append(protocol)
        return protocol

    return Acceptor(bind("127.0.0.1", 0), factory, ConnectionQuotas(100, 100, ()))


@pytest.mark.asyncio
async def test_a_connection_accepted_as_the_acceptor_closes_is_closed() -> None:
    made: list[_Kept] = []
    acceptor = _acceptor(made)
    loop = asyncio.get_running_loop()
    pending: asyncio.Future[tuple[socket.socket, Any]] = loop.create_future()
    acceptor._accept = lambda _loop, _server: pending  # type: ignore[method-assign]
    acceptor.start()
    await asyncio.sleep(0)  # the accept loop now waits on ``pending``
    ours, theirs = socket.socketpair()
    # Accepted, but the accept loop has not resumed when the acceptor closes (with
    # loop.sock_accept this socket was lost, open, to the garbage collector).
    pending.set_result((ours, ("127.0.0.1", 1)))
    acceptor.close()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert ours.fileno() == -1
    assert made == []
    theirs.close()


@pytest.mark.asyncio
async def test_connections_are_accepted_and_closing_stops_listening() -> None:
    made: list[_Kept] = []
    acceptor = _acceptor(made)
    port = acceptor.port
    acceptor.start()
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    for _ in range(200):
        if len(made) == 3:
            break
        await asyncio.sleep(0.005)
    assert len(made) == 3
    acceptor.close()
    await asyncio.sleep(0)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port))
    for client in clients:
        client.close()
    for protocol in made:
        assert protocol.transport is not None
        protocol.transport.close()
    await asyncio.sleep(0)


def _waiting_clients(port: int, count: int) -> list[socket.socket]:
    """``count`` connections the kernel has completed and queued, none accepted yet."""
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]


@pytest.mark.asyncio
async def test_connections_waiting_in_the_backlog_are_all_taken_in_one_step() -> None:
    made: list[_Kept] = []
    acceptor = _acceptor(made)
    clients = _waiting_clients(acceptor.port, 60)
    acceptor.start()
    # One step of the accept task takes every waiting connection (one a pass of the loop
    # would let a burst of connects overflow the backlog), each then set up in its task.
    await asyncio.sleep(0)
    assert acceptor._quotas.total == 60
    for _ in range(200):
        if len(made) == 60:
            break
        await asyncio.sleep(0.005)
    assert len(made) == 60
    acceptor.close()
    for client in clients:
        client.close()
    for protocol in made:
        assert protocol.transport is not None
        protocol.transport.close()
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_a_burst_takes_no_more_than_max_connections_the_rest_stay_in_the_backlog() -> None:
    made: list[_Kept] = []
    acceptor = _acceptor(made)
    acceptor._quotas = ConnectionQuotas(10, 100, ())
    clients = _waiting_clients(acceptor.port, 25)
    acceptor.start()
    await asyncio.sleep(0)
    for _ in range(200):
        if len(made) == 10:
            break
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.05)
    assert len(made) == 10 and acceptor._quotas.total == 10
    # The 11th waits, accepted, for a slot; the 14 behind it are still the kernel's.
    server = acceptor.sockets[0]
    left = []
    while True:
        try:
            left.append(server.accept()[0])
        except BlockingIOError:
            break
    assert len(left) == 14
    acceptor.close()
    for sock in (*left, *clients):
        sock.close()
    for protocol in made:
        assert protocol.transport is not None
        protocol.transport.close()
    await asyncio.sleep(0)
