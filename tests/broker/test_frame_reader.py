"""broker.net.frame_reader and broker.limits.frame_buffers: frames split anywhere come out whole, a
large frame is read into a buffer of its own (bounded reads) and that buffer is used again
only when nothing can see it any more. Over real sockets: tests/e2e/test_connection_limits.py,
test_fuzz_frames.py, test_security_tls.py."""

from __future__ import annotations

import random
import struct

import pytest

from broker.limits.frame_buffers import MAX_POOLED_BYTES, FrameBuffers
from broker.net.frame_reader import (
    LARGE_FRAME_BYTES,
    MAX_SCRATCH_BYTES,
    MIN_READ_CHUNK_BYTES,
    READ_CHUNK_BYTES,
    READ_PASS_BUDGET_BYTES,
    SCRATCH_BYTES,
    FrameReader,
)
from protocol.frame import FrameError
from protocol.primitives import Reader


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def feed(
    reader: FrameReader, data: bytes, sizes: list[int] | None = None, *, whole: bool = True
) -> tuple[list[bytes | memoryview], list[int]]:
    """Read ``data`` in reads of at most the given sizes; the frames and each read's size."""
    frames: list[bytes | memoryview] = []
    reads: list[int] = []
    pos = 0
    step = 0
    while pos < len(data):
        buffer = reader.buffer(whole)
        assert len(buffer) > 0
        want = len(buffer) if sizes is None else sizes[step % len(sizes)]
        count = min(len(buffer), want, len(data) - pos)
        buffer[:count] = data[pos : pos + count]
        del buffer
        reads.append(count)
        pos += count
        step += 1
        frames += reader.filled(count, 200 * 1024 * 1024)
    return frames, reads


def test_frames_split_at_any_point_come_out_whole_and_in_order() -> None:
    rng = random.Random(13)
    payloads = [
        rng.randbytes(rng.choice([1, 7, 100, 5000, LARGE_FRAME_BYTES, LARGE_FRAME_BYTES + 1]))
        for _ in range(60)
    ] + [rng.randbytes(300_000), b"x", rng.randbytes(3 * 1024 * 1024)]
    data = b"".join(framed(p) for p in payloads)
    for sizes in ([1, 2, 3], [4093, 17, 65536], [rng.randrange(1, 100_000) for _ in range(50)]):
        frames, _ = feed(FrameReader(FrameBuffers()), data, sizes)
        assert [bytes(f) for f in frames] == payloads


def test_a_large_frame_is_handed_on_as_a_view_of_its_own_buffer_read_in_bounded_chunks() -> None:
    payload = random.Random(1).randbytes(1024 * 1024)
    frames, reads = feed(FrameReader(FrameBuffers()), framed(payload))
    (frame,) = frames
    assert isinstance(frame, memoryview) and frame == payload
    # The first read lands in the scratch buffer (a reader alone: the largest one); the
    # frame then has a buffer of its own, read in chunks.
    assert reads[0] == MAX_SCRATCH_BYTES
    assert max(reads[1:]) <= READ_CHUNK_BYTES


def test_a_reader_alone_reads_frames_a_little_over_64_kib_several_at_a_time() -> None:
    # bench --ingest's 64 x 1 KiB batches: with 64 KiB reads every frame took two.
    payloads = [bytes([i]) * (66 * 1024) for i in range(8)]
    frames, reads = feed(FrameReader(FrameBuffers()), b"".join(framed(p) for p in payloads))
    assert [bytes(f) for f in frames] == payloads
    assert len(reads) <= 3


def test_scratch_buffers_shrink_while_many_connections_read() -> None:
    buffers = FrameBuffers()
    assert buffers.scratch_bytes == MAX_SCRATCH_BYTES
    readers = [FrameReader(buffers) for _ in range(READ_PASS_BUDGET_BYTES // SCRATCH_BYTES)]
    sizes = []
    for reader in readers:
        sizes.append(len(reader.buffer(whole=False)))
        assert reader.filled(3, 1024) == []  # part of a length prefix: the scratch is kept
    assert sizes[0] == MAX_SCRATCH_BYTES and sizes[-1] == SCRATCH_BYTES
    assert sizes == sorted(sizes, reverse=True)
    assert buffers.scratch_out == len(readers)
    for reader in readers:
        reader.clear()
    assert buffers.scratch_out == 0 and buffers.scratch_bytes == MAX_SCRATCH_BYTES


def test_reads_shrink_while_many_connections_are_inside_large_frames_and_grow_back() -> None:
    """A pass of the loop over every connection reading a large frame stays near
    READ_PASS_BUDGET_BYTES: 200 such connections read 16 KiB each, one alone 64 KiB."""
    buffers = FrameBuffers()
    payload = bytes(256 * 1024)
    many = READ_PASS_BUDGET_BYTES // MIN_READ_CHUNK_BYTES + 10
    readers = [FrameReader(buffers) for _ in range(many)]
    for reader in readers:
        buffer = reader.buffer(whole=True)
        buffer[:100] = framed(payload)[:100]
        del buffer
        assert reader.filled(100, 10 * 1024 * 1024) == []
        assert len(reader.buffer(whole=True)) > 0  # the frame now has its own buffer
    assert buffers.large_readers == many
    assert len(readers[0].buffer(whole=True)) == MIN_READ_CHUNK_BYTES
    # The others finish (complete frames) or their connection goes away (clear).
    for n, reader in enumerate(readers[1:]):
        if n % 2:
            reader.clear()
        else:
            frames, _ = feed(reader, framed(payload)[100:])
            assert [bytes(f) for f in frames] == [payload]
    assert buffers.large_readers == 1
    assert len(readers[0].buffer(whole=True)) == READ_CHUNK_BYTES
    readers[0].clear()
    assert buffers.large_readers == 0


def test_read_ahead_keeps_a_large_frame_in_the_scratch_buffer_until_it_is_read_whole() -> None:
    buffers = FrameBuffers()
    reader = FrameReader(buffers)
    payload = bytes(5 * 1024 * 1024)
    buffer = reader.buffer(whole=False)
    buffer[:1000] = framed(payload)[:1000]
    del buffer
    assert reader.filled(1000, 10 * 1024 * 1024) == []
    assert reader.next_length() == len(payload) and reader.partial_bytes == 1000
    # No buffer of the frame's size yet: the length prefix alone costs nothing.
    assert len(reader.buffer(whole=False)) < MAX_SCRATCH_BYTES
    assert len(reader.buffer(whole=True)) == READ_CHUNK_BYTES
    assert reader.partial_bytes == 1000


def test_a_length_over_the_limit_is_refused_before_anything_is_allocated() -> None:
    reader = FrameReader(FrameBuffers())
    buffer = reader.buffer(whole=True)
    buffer[:4] = struct.pack(">i", 101)
    del buffer
    with pytest.raises(FrameError):
        reader.filled(4, 100)


def test_a_buffer_is_used_again_only_once_no_view_of_it_is_left() -> None:
    buffers = FrameBuffers()
    reader = FrameReader(buffers)
    payload = bytes(range(256)) * 1200  # over MAX_SCRATCH_BYTES: a buffer of its own
    (frame,) = feed(reader, framed(payload))[0]
    kept = Reader(frame).buf[10:20]  # a decoded request keeps slices of its frame
    buffers.give_back(frame)
    assert buffers.idle_bytes == 0
    del kept

    (frame,) = feed(reader, framed(payload))[0]
    buffers.give_back(frame)
    assert buffers.idle_bytes > 0
    (again,) = feed(reader, framed(payload[::-1]))[0]
    assert buffers.idle_bytes == 0 and again == payload[::-1]


def test_frames_above_the_pooled_size_are_mappings_resident_as_they_fill() -> None:
    view = FrameBuffers().take(MAX_POOLED_BYTES + 1)
    assert len(view) == MAX_POOLED_BYTES + 1 and not isinstance(view.obj, bytearray)


def test_a_connection_holds_a_scratch_buffer_only_while_part_of_a_frame_is_in_it() -> None:
    buffers = FrameBuffers()
    reader = FrameReader(buffers)
    frames, _ = feed(reader, framed(b"hello") + framed(b"world"))
    assert frames == [b"hello", b"world"]
    assert reader.partial_bytes == 0 and _idle_scratch(buffers) == 1
    feed(reader, framed(b"partial")[:5])
    assert reader.partial_bytes == 5 and _idle_scratch(buffers) == 0


def _idle_scratch(buffers: FrameBuffers) -> int:
    return sum(len(free) for free in buffers._scratch.values())


def test_a_scratch_buffer_given_back_while_still_seen_is_reused_once_it_is_not() -> None:
    # The transport's slice of the buffer it read into is alive while the read that emptied
    # the buffer is reported: the buffer must not be handed out while that view exists.
    buffers = FrameBuffers()
    scratch = buffers.take_scratch()
    ident = id(scratch)
    view = memoryview(scratch)[10:]
    buffers.give_scratch(scratch)
    del scratch  # the pool's reference is left, and the view's
    assert id(buffers.take_scratch()) != ident
    del view
    assert id(buffers.take_scratch()) == ident


def test_a_reader_in_a_request_answer_exchange_reads_every_frame_into_one_buffer() -> None:
    buffers = FrameBuffers()
    reader = FrameReader(buffers)
    for i in range(5):
        buffer = reader.buffer(whole=True)
        # A mark at the end of the scratch buffer, where no frame reaches: a new buffer
        # would be all zeroes there.
        assert buffer[-1] == (0 if i == 0 else 0x5A)
        buffer[-1] = 0x5A
        data = framed(b"request %d" % i)
        buffer[: len(data)] = data
        assert reader.filled(len(data), 1024) == [b"request %d" % i]
        del buffer  # the transport's slice goes after the report
    assert buffers.scratch_out == 0


def test_frames_beyond_the_limit_wait_unparsed_in_the_scratch_buffer() -> None:
    # 600 tiny requests in one read: a few are handed on, the rest stay bytes in the
    # scratch buffer (no object per request) until asked for.
    payloads = [b"r%d" % i for i in range(600)]
    data = b"".join(framed(p) for p in payloads)
    reader = FrameReader(FrameBuffers())
    buffer = reader.buffer(True)
    buffer[: len(data)] = data
    del buffer
    frames = reader.filled(len(data), 1024, 8)
    assert frames == payloads[:8] and reader.backlog
    assert reader.partial_bytes == len(data) - sum(4 + len(p) for p in payloads[:8])
    got = list(frames)
    while reader.backlog:
        got += reader.more(1024, 8)
    assert got == payloads
    assert reader.partial_bytes == 0 and not reader.backlog
