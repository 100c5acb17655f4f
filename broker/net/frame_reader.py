"""Size-prefixed request frames read straight into their buffers (issue 13).

A connection is an ``asyncio.BufferedProtocol``: the transport asks for a buffer
(``get_buffer``), reads into it (``recv_into``, or the TLS object's ``read`` into it) and
reports how much arrived (``filled``). Nothing is concatenated or sliced on the event loop:

- small frames are read into a scratch buffer (SCRATCH_BYTES, up to MAX_SCRATCH_BYTES
  while few connections are reading: broker.limits.frame_buffers), many per read when pipelined,
  and each complete one is copied out once (a copy cheaper than a read of its own: a frame
  above LARGE_FRAME_BYTES only gets there whole while few connections read). A connection
  holds a scratch buffer only while it has bytes of an incomplete frame in it; otherwise
  it goes back to broker.limits.frame_buffers, so a thousand idle connections hold none;
- a frame larger than LARGE_FRAME_BYTES gets a buffer of its own when the connection starts
  reading it whole (Kafka's NetworkReceive allocates its buffer on the size, once the memory
  pool grants it); the rest of the frame is read into that buffer and the complete frame is
  handed on as a view of it, never copied. Until then (read-ahead while an earlier request
  is handled) its first bytes wait in the scratch buffer, so a length prefix alone costs no
  memory. Buffers come from broker.limits.frame_buffers, which uses them again once their request
  is answered and no view of them is left.

Fairness: each read into a large frame asks for at most READ_CHUNK_BYTES, so one pass of the
event loop over all ready connections does a bounded amount of copying per connection; a
connection pipelining huge frames cannot make the loop's pass (and so everybody else's round
trip) long. The chunk shrinks (down to MIN_READ_CHUNK_BYTES) while many connections are in
the middle of large frames at once, so a whole pass stays near READ_PASS_BUDGET_BYTES: with
200 connections pipelining 1 MiB frames (bench/hostile.py), 16 KiB reads brought other
connections' p99 from 34-129 ms to 31-42 ms, while one connection alone keeps 64 KiB reads
(its throughput). The copies this module avoids were half of the loop's time.

Backlog: one read may bring hundreds of small frames (a client pipelining tiny requests).
``filled`` and ``more`` hand on at most ``limit`` of them; the rest stay unparsed in the
scratch buffer (``backlog``) until the connection asks for more, so what a connection
holds of requests it has not started is its scratch buffer plus a few frames, never one
object per pipelined request (Kafka reads one NetworkReceive per channel at a time).
"""

from __future__ import annotations

import sys

from broker.limits.frame_buffers import (
    MAX_SCRATCH_BYTES,
    MIN_READ_CHUNK_BYTES,
    READ_CHUNK_BYTES,
    READ_PASS_BUDGET_BYTES,
    SCRATCH_BYTES,
    FrameBuffers,
)
from protocol.frame import LENGTH_SIZE, check_length, read_length

LARGE_FRAME_BYTES = 16 * 1024

__all__ = [
    "MAX_SCRATCH_BYTES",
    "MIN_READ_CHUNK_BYTES",
    "READ_CHUNK_BYTES",
    "READ_PASS_BUDGET_BYTES",
    "SCRATCH_BYTES",
    "Frame",
    "FrameReader",
]

Frame = bytes | memoryview
_EMPTY = memoryview(b"")


class FrameReader:
    """The bytes one connection has read and not yet handed on as complete frames."""

    __slots__ = (
        "_buffers",
        "_end",
        "_filled",
        "_large",
        "_scratch",
        "_scratch_view",
        "_start",
        "backlog",
    )

    def __init__(self, buffers: FrameBuffers) -> None:
        self._buffers = buffers
        self._scratch: bytearray | None = None
        self._scratch_view = _EMPTY
        # Unparsed bytes are _scratch[_start:_end].
        self._start = 0
        self._end = 0
        # The frame being read into its own buffer (its body), and how much of it arrived.
        self._large: memoryview | None = None
        self._filled = 0
        # Whether the scratch buffer may hold complete frames not handed on yet (``limit``).
        self.backlog = False

    # --- what the transport reads into ----------------------------------------------------

    def buffer(self, whole: bool) -> memoryview:
        """Where the next read goes (never empty). ``whole``: the incomplete frame is the
        next one the connection handles, so a large one gets its own buffer now."""
        large = self._large
        if large is None:
            size = len(self._scratch_view)
            if self._start and size - self._end < LENGTH_SIZE + LARGE_FRAME_BYTES:
                length = self.next_length()
                if length is None or LENGTH_SIZE + length <= size:
                    self._compact()  # else the frame gets its own buffer, below
            if not self.backlog and ((whole and not self._fits(size)) or self._end == size):
                length = self.next_length()
                if length is not None and length > LARGE_FRAME_BYTES:
                    large = self._begin_large(length)
            if large is None:
                if self._scratch is None:
                    self._scratch = self._buffers.take_scratch()
                    self._scratch_view = memoryview(self._scratch)
                return self._scratch_view[self._end :]
        chunk = self._buffers.read_chunk_bytes
        return large[self._filled : min(len(large), self._filled + chunk)]

    def filled(self, count: int, max_bytes: int, limit: int = sys.maxsize) -> list[Frame]:
        """``count`` bytes arrived in the last ``buffer()``: the frames now complete, at most
        ``limit`` of them (the rest wait in the scratch buffer: ``backlog``, ``more``).

        Raises ``FrameError`` (from ``check_length``) on a length the connection must not
        honour, before anything is allocated for it.
        """
        large = self._large
        if large is not None:
            self._filled += count
            if self._filled < len(large):
                return []
            self._large = None
            self._filled = 0
            self._buffers.large_reader_done()
            return [large]
        self._end += count
        return self._parse(max_bytes, limit)

    def more(self, max_bytes: int, limit: int) -> list[Frame]:
        """Up to ``limit`` more of the complete frames already read (``backlog``)."""
        return self._parse(max_bytes, limit)

    # --- what the connection's bounds look at ---------------------------------------------

    @property
    def partial_bytes(self) -> int:
        """Bytes read of frames not yet complete (length prefixes included)."""
        if self._large is not None:
            return LENGTH_SIZE + self._filled
        return self._end - self._start

    def next_length(self) -> int | None:
        """The length of the incomplete frame read next, once its prefix has arrived."""
        if self._large is not None:
            return len(self._large)
        if self._end - self._start < LENGTH_SIZE:
            return None
        return read_length(self._scratch_view, self._start)

    def clear(self) -> None:
        self._start = self._end = 0
        self.backlog = False
        if self._large is not None:
            self._buffers.large_reader_done()
        self._large = None
        self._filled = 0
        self._release_scratch()

    # --- parsing --------------------------------------------------------------------------

    def _parse(self, max_bytes: int, limit: int) -> list[Frame]:
        frames: list[Frame] = []
        scratch = self._scratch_view
        start, end = self._start, self._end
        backlog = False
        while end - start >= LENGTH_SIZE:
            if len(frames) >= limit:
                backlog = True
                break
            length = read_length(scratch, start)
            check_length(length, max_bytes)
            body_start = start + LENGTH_SIZE
            if end - body_start < length:
                break
            frames.append(bytes(self._scratch_view[body_start : body_start + length]))
            start = body_start + length
        self._start, self._end = start, end
        self.backlog = backlog
        if start == end:
            self._start = self._end = 0
            self._release_scratch()
        return frames

    def _release_scratch(self) -> None:
        scratch = self._scratch
        if scratch is not None:
            self._scratch_view.release()
            self._scratch_view = _EMPTY
            self._scratch = None
            self._buffers.give_scratch(scratch)

    def _fits(self, size: int) -> bool:
        """Whether the incomplete frame ends inside the scratch buffer (of ``size`` bytes):
        then it is read there whole, with what follows it, rather than into its own buffer."""
        length = self.next_length()
        return length is not None and self._start + LENGTH_SIZE + length <= size

    def _begin_large(self, length: int) -> memoryview:
        large = self._buffers.take(length)
        body_start = self._start + LENGTH_SIZE
        have = self._end - body_start
        large[:have] = self._scratch_view[body_start : self._end]
        self._start = self._end = 0
        self._release_scratch()
        self._large, self._filled = large, have
        self._buffers.large_reader_started()
        return large

    def _compact(self) -> None:
        """Move the unparsed bytes (part of a frame that fits the scratch buffer) to the
        front, so the rest of that frame fits behind them."""
        start, end = self._start, self._end
        self._scratch_view[: end - start] = self._scratch_view[start:end]
        self._start, self._end = 0, end - start
