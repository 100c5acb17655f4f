"""Buffers for large request frames, used again once nobody sees them (issue 13).

A fresh buffer costs more than the bytes read into it: the allocator zeroes it and the
kernel faults its pages in one by one (measured here: a new 1 MiB bytearray filled by 64 KiB
reads costs twice what a reused one does, an anonymous mapping four to nine times).
So a frame's buffer goes back to this pool when its request has been answered, provided no
view of it is left anywhere (a decoded request keeps slices of its frame; as long as one
lives, so does a reference to the buffer, and it is not reused). CPython's reference count
says so exactly: every memoryview of the bytearray holds one reference through its managed
buffer.

Idle buffers are bounded (MAX_IDLE_BYTES in all); sizes are rounded up to SIZE_STEP so that
frames of about the same size share buffers. Frames above MAX_POOLED_BYTES are not pooled:
they are read into an anonymous mapping whose pages become resident as bytes arrive (huge
pages where the kernel allows), so a length prefix alone costs no memory and no loop time.
Also the connections' scratch buffers (broker.net.frame_reader), which a connection holds
only while it has part of a frame in one: at most MAX_IDLE_SCRATCH of them wait here. A
scratch buffer is as large as a pass of the loop can afford while so few connections read
(``scratch_bytes``): up to MAX_SCRATCH_BYTES, so that one producer's frames a little over
64 KiB (the 64 x 1 KiB batches of bench --ingest) arrive several to a read instead of two
reads each, and SCRATCH_BYTES once many connections are reading.
One pool per broker (BrokerState), used on its event loop only.
"""

from __future__ import annotations

import mmap
import sys

SIZE_STEP = 64 * 1024
MAX_POOLED_BYTES = 8 * 1024 * 1024
MAX_IDLE_BYTES = 32 * 1024 * 1024
MAX_IDLE_SCRATCH = 64
MAX_SEEN_SCRATCH = 8
# Reads into large frames (broker.net.frame_reader): at most READ_CHUNK_BYTES each, shrinking to
# MIN_READ_CHUNK_BYTES while many connections read large frames at once.
READ_CHUNK_BYTES = 64 * 1024
MIN_READ_CHUNK_BYTES = 16 * 1024
READ_PASS_BUDGET_BYTES = 1024 * 1024
# Scratch buffers (broker.net.frame_reader): SCRATCH_BYTES at least, up to MAX_SCRATCH_BYTES
# while few connections are reading (their share of READ_PASS_BUDGET_BYTES).
SCRATCH_BYTES = 64 * 1024
MAX_SCRATCH_BYTES = 256 * 1024


class FrameBuffers:
    def __init__(self, max_idle_bytes: int = MAX_IDLE_BYTES) -> None:
        self.max_idle_bytes = max_idle_bytes
        self.idle_bytes = 0
        self._idle: dict[int, list[bytearray]] = {}
        self._scratch: dict[int, list[bytearray]] = {}
        # Given back while still seen (take_scratch reuses them once they are not).
        self._scratch_seen: list[bytearray] = []
        # Scratch buffers held by connections (they have part of a frame in one).
        self.scratch_out = 0
        # Connections in the middle of reading a large frame (broker.net.frame_reader), and the
        # size of their next read: a pass of the loop over all of them stays near
        # READ_PASS_BUDGET_BYTES.
        self.large_readers = 0
        self.read_chunk_bytes = READ_CHUNK_BYTES

    def large_reader_started(self) -> None:
        self.large_readers += 1
        self._size_chunks()

    def large_reader_done(self) -> None:
        self.large_readers -= 1
        self._size_chunks()

    def _size_chunks(self) -> None:
        share = READ_PASS_BUDGET_BYTES // max(self.large_readers, 1)
        self.read_chunk_bytes = max(MIN_READ_CHUNK_BYTES, min(READ_CHUNK_BYTES, share))

    @property
    def scratch_bytes(self) -> int:
        """The size of the next scratch buffer taken: the share of READ_PASS_BUDGET_BYTES
        of every connection reading now and the one about to, within SCRATCH_BYTES ..
        MAX_SCRATCH_BYTES (powers of two, so buffers are shared)."""
        share = READ_PASS_BUDGET_BYTES // (self.large_readers + self.scratch_out + 1)
        size = SCRATCH_BYTES
        while size * 2 <= min(share, MAX_SCRATCH_BYTES):
            size *= 2
        return size

    def take_scratch(self) -> bytearray:
        size = self.scratch_bytes
        self.scratch_out += 1
        free = self._scratch.get(size)
        if free:
            return free.pop()
        # A buffer given back while a view of it was still alive (the transport's slice of
        # it, while the read that emptied it is reported): reused once nobody sees it.
        # Three references then: the list, ``buffer`` and getrefcount's argument.
        seen = self._scratch_seen
        for i in range(len(seen)):  # not enumerate: its cached tuple would hold a reference
            buffer = seen[i]
            if len(buffer) == size and sys.getrefcount(buffer) <= 3:
                del seen[i]
                return buffer
        return bytearray(size)

    def give_scratch(self, buffer: bytearray) -> None:
        self.scratch_out -= 1
        # The reader released its own view first: three references (the reader's local,
        # ``buffer`` and getrefcount's argument); a view left anywhere adds one. The
        # transport's slice of the buffer it read into is one while the read that emptied
        # the buffer is reported (buffer_updated), which is when a connection in a request-
        # answer exchange gives its scratch buffer back: a fresh 256 KiB buffer per request
        # cost more than the rest of reading it (an mmap, zeroed pages faulted in).
        if sys.getrefcount(buffer) <= 3:
            free = self._scratch.setdefault(len(buffer), [])
            if len(free) < MAX_IDLE_SCRATCH:
                free.append(buffer)
        elif len(self._scratch_seen) < MAX_SEEN_SCRATCH:
            self._scratch_seen.append(buffer)

    def take(self, length: int) -> memoryview:
        """A writable buffer of exactly ``length`` bytes (contents undefined)."""
        if length > MAX_POOLED_BYTES:
            # Not bytearray(length): that would zero (and make resident) all of it at once,
            # on the loop, before the bytes arrive.
            mapping = mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            if hasattr(mmap, "MADV_HUGEPAGE"):
                mapping.madvise(mmap.MADV_HUGEPAGE)
            return memoryview(mapping)
        size = -(-length // SIZE_STEP) * SIZE_STEP
        free = self._idle.get(size)
        if free:
            buffer = free.pop()
            self.idle_bytes -= size
        else:
            buffer = bytearray(size)
        with memoryview(buffer) as whole:
            return whole[:length]

    def give_back(self, frame: bytes | memoryview) -> None:
        """``frame`` (from ``take``) has been handled: keep its buffer if nothing else can
        see it. The caller's ``frame`` is released (unusable) afterwards."""
        if not isinstance(frame, memoryview):
            return
        buffer = frame.obj
        try:
            frame.release()
        except BufferError:
            return  # someone exported a buffer from this very view: still in use
        # Two references: ``buffer`` here and getrefcount's argument. Any view of it left
        # anywhere (a slice kept by a decoded message, a worker thread) would add one.
        if not isinstance(buffer, bytearray) or sys.getrefcount(buffer) > 2:
            return
        size = len(buffer)
        if size % SIZE_STEP or self.idle_bytes + size > self.max_idle_bytes:
            return
        self._idle.setdefault(size, []).append(buffer)
        self.idle_bytes += size
