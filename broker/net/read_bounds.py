"""How much one connection reads, bounded like Kafka's muted channel.

SocketServer.Processor mutes a channel after each complete receive and unmutes it once the
response is sent: while a request is being handled the connection reads ahead at most
READ_AHEAD_BYTES / READ_AHEAD_REQUESTS more, then pauses its transport, leaving the rest in
the kernel's socket buffers. Only the next request to be handled is read whole (up to
socket.request.max.bytes); small frames that came in the same read beyond
READ_AHEAD_REQUESTS wait unparsed in the reader (broker.net.frame_reader, backlog).
Broker-wide, queued.max.requests and queued.max.request.bytes (broker.limits.request_budget)
stop reading as Kafka's request queue and memory pool do; a connection holds one slot of
queued.max.requests only while its next request waits to start (``_sync_charge``), as a
muted channel has at most one request in Kafka's queue, so no client's read-ahead can stop
the broker reading the others. Deviation: Kafka reads nothing ahead; the read-ahead keeps
pipelined requests from paying a pause/resume each (two epoll changes and a pass of the
loop): a producer with 5 batches of 64 KiB in flight would pause after every one with
64 KiB (1 MiB took 11-20% off the broker's CPU per such request and changed nothing in
bench/hostile.py's 200 connections pipelining 1 MiB frames).
"""

from __future__ import annotations

import asyncio
import logging

from broker.net.connection_base import ConnectionBase
from protocol.frame import FrameError

log = logging.getLogger("broker.net.connection")

# What a connection may read beyond the request it is handling (bytes, whole requests).
READ_AHEAD_BYTES = 1024 * 1024
READ_AHEAD_REQUESTS = 8
# What one connection may read in one pass of the event loop (where the loop may read a
# connection more than once per pass: uvloop).
READ_PASS_BYTES = 64 * 1024


class ReadBounds(ConnectionBase):
    def _max_frame_bytes(self) -> int:
        if self.sasl is not None and not self.sasl.authenticated:
            # SaslServerAuthenticator reads with sasl.server.max.receive.size until done.
            return self.sasl.max_receive_size
        return self.state.config.socket_request_max_bytes

    def _take_backlog(self, limit: int) -> None:
        """Queue up to ``limit`` more of the complete frames the reader already holds."""
        try:
            frames = self._reader.more(self._max_frame_bytes(), limit)
        except FrameError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self.close()
            return
        for frame in frames:
            self._frames.append((frame, 0))
            self._queued_bytes += len(frame)
        if frames:
            self._wakeup.set()

    def _update_reading(self) -> None:
        """Pause or resume the transport as the bounds in the module docstring say."""
        if self._closing or self.transport is None:
            return
        if self._reader.backlog and len(self._frames) < READ_AHEAD_REQUESTS:
            self._take_backlog(READ_AHEAD_REQUESTS - len(self._frames))
            if self._closing:
                return
        self._sync_charge()
        self._maybe_reserve_partial()
        self._set_reading(self._may_read())

    def _sync_charge(self) -> None:
        """Hold one slot of queued.max.requests while the next request is read and waits to
        start, none otherwise. Kafka mutes a channel once a request is complete, so it has at
        most one in the RequestChannel queue, and none while that request is handled or
        parked in purgatory; what the client pipelined behind it waits in the socket,
        uncharged (here: the read-ahead, bounded per connection by READ_AHEAD_*)."""
        want = bool(self._frames) and not self._busy
        if want != self._charged:
            self._charged = want
            if want:
                self.state.request_budget.request_queued()
            else:
                self.state.request_budget.request_started()

    def _count_pass(self, nbytes: int) -> None:
        if self._pass_bytes == 0 and self._next_pass is None:
            self._next_pass = asyncio.get_running_loop().call_soon(self._end_pass)
        self._pass_bytes += nbytes

    def _end_pass(self) -> None:
        self._next_pass = None
        self._pass_bytes = 0
        self._update_reading()

    def _may_read(self) -> bool:
        if self._pass_bytes >= READ_PASS_BYTES:
            return False  # this pass's share is read: the next pass resumes (_end_pass)
        if self._reader.backlog:
            return False  # complete requests wait in the reader (READ_AHEAD_REQUESTS)
        if self._partial_reserved < 0:
            return False  # waiting for queued.max.request.bytes
        budget = self.state.request_budget
        if budget.requests_full:
            budget.wait_for_request_room(id(self), self._update_reading)
            return False
        if not self._busy and not self._frames:
            return True  # the partial request is the next one handled: read it whole
        return (
            len(self._frames) < READ_AHEAD_REQUESTS
            and self._queued_bytes + self._reader.partial_bytes < READ_AHEAD_BYTES
        )

    def _maybe_reserve_partial(self) -> None:
        """Take the next request's size from queued.max.request.bytes before reading it
        whole (Kafka's NetworkReceive allocates from the MemoryPool on its size)."""
        budget = self.state.request_budget
        if not budget.limits_bytes or self._partial_reserved != 0 or self._busy or self._frames:
            return
        length = self._reader.next_length()
        if length is None or length <= READ_AHEAD_BYTES:
            return
        self._partial_reserved = length
        if not budget.try_reserve(length, lambda: self._reserve_granted(length)):
            self._partial_reserved = -1
            log.debug("connection from %s waits for queued.max.request.bytes", self.peer)

    def _reserve_granted(self, length: int) -> None:
        if self._closing:
            # Closed meanwhile: give the bytes straight back.
            self.state.request_budget.release(length)
            return
        self._partial_reserved = length
        self._update_reading()

    def _set_reading(self, on: bool) -> None:
        assert self.transport is not None
        if on and self._reading_paused:
            self._reading_paused = False
            self.transport.resume_reading()
        elif not on and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()

    def _release_budget(self) -> None:
        budget = self.state.request_budget
        budget.forget(id(self))
        if self._charged:
            self._charged = False
            budget.request_started()
        for _, reserved in self._frames:
            budget.release(reserved)
        self._frames.clear()
        self._queued_bytes = 0
        if self._partial_reserved > 0:
            budget.release(self._partial_reserved)
        self._partial_reserved = 0
