"""A connection that goes away in the middle of a frame gives its read buffers back and no
longer counts as reading (broker.limits.frame_buffers sizes every connection's reads by how many
are reading: a count left behind would shrink everybody's reads for good). Real sockets
against a broker on this loop; the counts read from the broker's own pool."""

from __future__ import annotations

import asyncio
import socket
import struct

import minikafka
from broker.limits.frame_buffers import MAX_SCRATCH_BYTES
from tests.support.polling import until


def _open_inside_frames(port: int, connections: int) -> list[socket.socket]:
    """``connections`` sockets, each having sent part of a frame (of 1 MiB or 100 bytes)."""
    socks = []
    for i in range(connections):
        sock = socket.create_connection(("127.0.0.1", port))
        size = 1024 * 1024 if i % 2 else 100
        sock.sendall(struct.pack(">i", size) + b"\0" * min(size - 1, 70_000))
        socks.append(sock)
    return socks


def _reset(socks: list[socket.socket]) -> None:
    for sock in socks:
        # SO_LINGER 0: the close sends an RST, no FIN (connection_lost without eof_received).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()


def test_connections_reset_inside_frames_leave_no_reader_counted() -> None:
    async def scenario() -> tuple[bool, bool, int]:
        async with minikafka.Broker() as broker:
            assert broker._host is not None and broker._host.broker is not None
            state = broker._host.broker.state
            assert state is not None
            buffers = state.frame_buffers
            socks = await asyncio.to_thread(_open_inside_frames, broker.port, 12)
            # Each holds either a scratch buffer or a frame buffer of its own (when more of
            # its frame arrived after the length prefix).
            reading = await until(lambda: buffers.large_readers + buffers.scratch_out == 12)
            _reset(socks)
            released = await until(
                lambda: (
                    not state.connections and not buffers.large_readers and not buffers.scratch_out
                )
            )
            return reading, released, buffers.scratch_bytes

    reading, released, size = asyncio.run(scenario())
    assert reading, "the broker never read into those frames"
    assert released, "connections reset inside frames still count as reading"
    assert size == MAX_SCRATCH_BYTES
