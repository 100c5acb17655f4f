"""Record-batch compression codecs, as Kafka puts them on the wire.

Codec ids are the low three bits of a batch's attributes: 0 none, 1 gzip, 2 snappy, 3 lz4,
4 zstd. What each client actually sends:

- gzip: one (or more) RFC 1952 members; Java reads them with GZIPInputStream.
- snappy: Java (snappy-java's SnappyOutputStream) and librdkafka send the "xerial" framing:
  the 8-byte magic b"\\x82SNAPPY\\x00", int32 version, int32 minimum compatible version,
  then blocks of int32 length + one raw snappy block. Some clients send a plain raw snappy
  block, so both are accepted on input; output is always xerial, what Kafka itself writes.
- lz4: the LZ4 frame format with independent blocks (Kafka's KafkaLZ4BlockOutputStream
  cannot read linked blocks), 64 KiB blocks, no content size, no checksums.
- zstd: Java's ZstdOutputStream writes frames without a content size, so decompression
  streams instead of trusting a size in the frame header.

Every decompressor stops at ``max_size`` output bytes and raises CompressionError: a batch
of a few KiB can otherwise expand to gigabytes (a "zip bomb") and exhaust memory.
"""

from __future__ import annotations

import functools
import struct
import zlib
from types import ModuleType

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_IDS = (NONE, GZIP, SNAPPY, LZ4, ZSTD)

DEFAULT_MAX_SIZE = 64 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
# snappy-java writes version 1, minimum compatible version 1.
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
# snappy-java's default block size; each block is compressed on its own.
_XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")

# zstd cannot expand more than about 32768x (a 4-byte RLE block yields 128 KiB), so feeding
# compressed input in slices of (budget / 32768) bytes bounds what one step can produce.
_ZSTD_MAX_RATIO = 32768
_ZSTD_MAX_SLICE = 64 * 1024

Buffer = bytes | bytearray | memoryview


# Each codec's library is imported the first time a batch uses it: most brokers only ever see
# one codec or none, and the three together take about as long to import as asyncio.
@functools.cache
def _lz4_frame() -> ModuleType:
    import lz4.frame

    module: ModuleType = lz4.frame
    return module


@functools.cache
def _snappy() -> ModuleType:
    import snappy

    module: ModuleType = snappy
    return module


@functools.cache
def _zstandard() -> ModuleType:
    import zstandard

    return zstandard


class CompressionError(ValueError):
    """Compressed data is malformed, uses an unknown codec, or expands past the cap."""


def compress(codec: int, data: Buffer) -> bytes:
    """Compress ``data`` the way Kafka's own producer does for ``codec``."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        # Java's GZIPOutputStream uses the default level; mtime 0 keeps output reproducible.
        co = zlib.compressobj(wbits=31)
        return co.compress(data) + co.flush()
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        lz4_frame = _lz4_frame()
        return bytes(
            lz4_frame.compress(
                data,
                block_size=lz4_frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                store_size=False,
            )
        )
    if codec == ZSTD:
        return bytes(_zstandard().ZstdCompressor(write_content_size=False).compress(data))
    raise CompressionError(f"unknown compression codec id {codec}")


def decompress(codec: int, data: Buffer, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """Decompress ``data``; raise CompressionError if malformed or larger than ``max_size``."""
    if codec == NONE:
        if len(data) > max_size:
            raise CompressionError(f"data larger than {max_size} bytes")
        return bytes(data)
    try:
        if codec == GZIP:
            return _gzip_decompress(data, max_size)
        if codec == SNAPPY:
            return _snappy_decompress(data, max_size)
        if codec == LZ4:
            return _lz4_decompress(data, max_size)
        if codec == ZSTD:
            return _zstd_decompress(data, max_size)
    except CompressionError:
        raise
    except Exception as exc:  # each library raises its own types (zlib.error, ZstdError, ...)
        raise CompressionError(f"malformed {codec_name(codec)} data: {exc}") from exc
    raise CompressionError(f"unknown compression codec id {codec}")


def codec_name(codec: int) -> str:
    return ("none", "gzip", "snappy", "lz4", "zstd")[codec] if 0 <= codec <= 4 else f"?{codec}"


def _too_big(max_size: int) -> CompressionError:
    return CompressionError(f"decompressed data exceeds {max_size} bytes")


def _gzip_decompress(data: Buffer, max_size: int) -> bytes:
    out = bytearray()
    pending: Buffer = data
    # Java's GZIPInputStream reads concatenated members, so a batch may hold several.
    while True:
        d = zlib.decompressobj(wbits=31)
        chunk = d.decompress(pending, max_size - len(out) + 1)
        out += chunk
        while d.unconsumed_tail and len(out) <= max_size:
            out += d.decompress(d.unconsumed_tail, max_size - len(out) + 1)
        if len(out) > max_size:
            raise _too_big(max_size)
        if not d.eof:
            raise CompressionError("truncated gzip data")
        if not d.unused_data:
            return bytes(out)
        pending = d.unused_data


def _xerial_compress(data: Buffer) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(_snappy().compress(bytes(view[start : start + _XERIAL_BLOCK])))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: Buffer, max_size: int) -> bytes:
    view = memoryview(data)
    if bytes(view[:8]) != XERIAL_MAGIC:
        return _raw_snappy(view, max_size)
    if len(view) < 16:
        raise CompressionError("truncated xerial snappy header")
    out = bytearray()
    pos = 16  # magic + version + compatible version; no reader checks the versions
    while pos < len(view):
        if view[pos] == XERIAL_MAGIC[0]:
            # snappy-java's reader accepts concatenated streams; a block length can never
            # start with 0x82 (it would be negative), so the magic is unambiguous.
            if bytes(view[pos : pos + 8]) != XERIAL_MAGIC or len(view) - pos < 16:
                raise CompressionError("malformed xerial snappy header")
            pos += 16
            continue
        if len(view) - pos < 4:
            raise CompressionError("truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(view, pos)
        pos += 4
        if length < 0 or pos + length > len(view):
            raise CompressionError("xerial snappy block runs past the end")
        out += _raw_snappy(view[pos : pos + length], max_size - len(out))
        pos += length
    return bytes(out)


def _raw_snappy(block: memoryview, budget: int) -> bytes:
    # A raw snappy block starts with its uncompressed length as a varint: check it against
    # the budget before letting the library allocate that much.
    size = 0
    shift = 0
    for i in range(min(5, len(block))):
        byte = block[i]
        size |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    else:
        raise CompressionError("malformed snappy length preamble")
    if size > budget:
        raise CompressionError(f"decompressed data exceeds the size cap ({size} > {budget})")
    snappy = _snappy()
    try:
        return bytes(snappy.uncompress(bytes(block)))
    except snappy.UncompressError as exc:
        raise CompressionError(f"malformed snappy data: {exc}") from exc


def _lz4_decompress(data: Buffer, max_size: int) -> bytes:
    lz4_frame = _lz4_frame()
    out = bytearray()
    pending: Buffer = data
    while True:
        d = lz4_frame.LZ4FrameDecompressor()
        out += d.decompress(pending, max_length=max_size - len(out) + 1)
        while not d.eof and not d.needs_input and len(out) <= max_size:
            out += d.decompress(b"", max_length=max_size - len(out) + 1)
        if len(out) > max_size:
            raise _too_big(max_size)
        if not d.eof:
            raise CompressionError("truncated lz4 frame")
        if not d.unused_data:
            return bytes(out)
        pending = d.unused_data


def _zstd_decompress(data: Buffer, max_size: int) -> bytes:
    view = memoryview(data)
    dctx = _zstandard().ZstdDecompressor()
    out = bytearray()
    pos = 0
    while True:
        # decompressobj has no output limit, so feed it input in slices small enough that
        # one slice cannot overshoot the remaining budget by much.
        d = dctx.decompressobj()
        while not d.eof:
            if pos >= len(view):
                raise CompressionError("truncated zstd frame")
            step = max(4, min(_ZSTD_MAX_SLICE, (max_size - len(out)) // _ZSTD_MAX_RATIO))
            end = min(pos + step, len(view))
            out += d.decompress(view[pos:end])
            pos = end
            if len(out) > max_size:
                raise _too_big(max_size)
        rest = bytes(d.unused_data)
        if not rest and pos >= len(view):
            return bytes(out)
        # Concatenated frames: restart after the end of this one.
        pos -= len(rest)
