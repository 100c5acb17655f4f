"""Codecs: round trips, interop with kafka-python's encoders, malformed data, size cap."""

from __future__ import annotations

import gzip
import os
import struct
import warnings

import lz4.frame
import pytest
import snappy
import zstandard

from protocol import compression
from protocol.compression import CompressionError, compress, decompress

with warnings.catch_warnings():
    # kafka-python 3.0 uses importlib.resources.read_text, deprecated in Python 3.11.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import codec as kcodec

CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD]
PAYLOADS = [b"", b"x", b"kafka " * 20000, os.urandom(70000) + b"a" * 70000]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("payload", PAYLOADS, ids=["empty", "one", "text", "mixed"])
def test_round_trip(codec: int, payload: bytes) -> None:
    assert decompress(codec, compress(codec, payload)) == payload


@pytest.mark.parametrize("codec", CODECS)
def test_decompress_accepts_memoryview(codec: int) -> None:
    data = b"abc" * 1000
    assert decompress(codec, memoryview(b"--" + compress(codec, data))[2:]) == data


KAFKA_PYTHON_ENCODERS = {
    compression.GZIP: kcodec.gzip_encode,
    compression.SNAPPY: kcodec.snappy_encode,  # xerial framing, as Java and librdkafka
    compression.LZ4: kcodec.lz4_encode,
    compression.ZSTD: kcodec.zstd_encode,
}
KAFKA_PYTHON_DECODERS = {
    compression.GZIP: kcodec.gzip_decode,
    compression.SNAPPY: kcodec.snappy_decode,
    compression.LZ4: kcodec.lz4_decode,
    compression.ZSTD: kcodec.zstd_decode,
}


@pytest.mark.parametrize("codec", list(KAFKA_PYTHON_ENCODERS))
def test_reads_what_kafka_python_writes(codec: int) -> None:
    data = b"record payload " * 5000
    assert decompress(codec, KAFKA_PYTHON_ENCODERS[codec](data)) == data


@pytest.mark.parametrize("codec", list(KAFKA_PYTHON_DECODERS))
def test_kafka_python_reads_what_we_write(codec: int) -> None:
    data = b"record payload " * 5000
    assert KAFKA_PYTHON_DECODERS[codec](compress(codec, data)) == data


def test_snappy_output_is_xerial_framed_in_32k_blocks() -> None:
    data = os.urandom(40000)
    out = compress(compression.SNAPPY, data)
    assert out[:8] == compression.XERIAL_MAGIC
    assert struct.unpack(">ii", out[8:16]) == (1, 1)
    (first,) = struct.unpack(">i", out[16:20])
    assert snappy.uncompress(out[20 : 20 + first]) == data[:32768]


def test_snappy_accepts_raw_blocks() -> None:
    data = b"raw snappy " * 1000
    assert decompress(compression.SNAPPY, snappy.compress(data)) == data


def test_snappy_accepts_concatenated_xerial_streams() -> None:
    a, b = b"first " * 100, b"second " * 100
    joined = compress(compression.SNAPPY, a) + compress(compression.SNAPPY, b)
    assert decompress(compression.SNAPPY, joined) == a + b


def test_gzip_accepts_concatenated_members() -> None:
    assert decompress(compression.GZIP, gzip.compress(b"a" * 10) + gzip.compress(b"b")) == (
        b"a" * 10 + b"b"
    )


def test_zstd_frame_without_content_size() -> None:
    data = b"zstd streaming " * 3000
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(compression.ZSTD, frame) == data


def test_zstd_streamed_frame_as_java_writes_it() -> None:
    data = b"chunked " * 10000
    cobj = zstandard.ZstdCompressor().compressobj()
    frame = b"".join(cobj.compress(data[i : i + 1000]) for i in range(0, len(data), 1000))
    frame += cobj.flush()
    assert decompress(compression.ZSTD, frame) == data


@pytest.mark.parametrize("codec", CODECS[1:])
def test_concatenated_frames(codec: int) -> None:
    a, b = b"one " * 500, b"two " * 500
    assert decompress(codec, compress(codec, a) + compress(codec, b)) == a + b


def test_lz4_frame_uses_independent_blocks_without_content_size() -> None:
    # Kafka's KafkaLZ4BlockInputStream rejects linked blocks.
    frame = compress(compression.LZ4, b"x" * 200000)
    info = lz4.frame.get_frame_info(frame)
    assert info["block_linked"] is False
    assert info["content_size"] == 0


@pytest.mark.parametrize("codec", CODECS[1:])
def test_truncated_data_is_an_error(codec: int) -> None:
    full = compress(codec, os.urandom(5000) + b"z" * 5000)
    for cut in (1, 7, len(full) // 2):
        with pytest.raises(CompressionError):
            decompress(codec, full[:-cut])


@pytest.mark.parametrize("codec", CODECS[1:])
@pytest.mark.parametrize("garbage", [b"", b"\xff", b"not compressed at all, really" * 3])
def test_garbage_is_an_error(codec: int, garbage: bytes) -> None:
    with pytest.raises(CompressionError):
        decompress(codec, garbage)


@pytest.mark.parametrize("codec", CODECS[1:])
def test_trailing_garbage_is_an_error(codec: int) -> None:
    with pytest.raises(CompressionError):
        decompress(codec, compress(codec, b"payload" * 100) + b"\x01\x02\x03garbage")


def test_compression_error_is_a_value_error() -> None:
    assert issubclass(CompressionError, ValueError)


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(CompressionError):
        decompress(codec, b"data")
    with pytest.raises(CompressionError):
        compress(codec, b"data")


@pytest.mark.parametrize("codec", CODECS)
def test_size_cap_stops_a_compression_bomb(codec: int) -> None:
    bomb = compress(codec, bytes(4 * 1024 * 1024))
    with pytest.raises(CompressionError):
        decompress(codec, bomb, max_size=64 * 1024)


@pytest.mark.parametrize("codec", CODECS)
def test_size_cap_is_inclusive(codec: int) -> None:
    data = b"q" * 10000
    assert decompress(codec, compress(codec, data), max_size=10000) == data
    with pytest.raises(CompressionError):
        decompress(codec, compress(codec, data), max_size=9999)


def test_raw_snappy_length_preamble_is_checked_before_allocating() -> None:
    # A raw block that claims 2 GiB of output: refused from the preamble alone.
    claim = bytes([0x80, 0x80, 0x80, 0x80, 0x08]) + b"\x00" * 10
    with pytest.raises(CompressionError, match="cap"):
        decompress(compression.SNAPPY, claim)


def test_zstd_frame_claiming_a_huge_content_size_is_refused() -> None:
    data = bytes(2 * 1024 * 1024)
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(data)
    with pytest.raises(CompressionError):
        decompress(compression.ZSTD, frame, max_size=1024 * 1024)
