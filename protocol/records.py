"""RecordBatch v2 view: header fields, CRC-32C, and in-place patching; record contents.

The header view never touches the records; decode_records/scan_records (decompress and
parse Kafka's DefaultRecord format) and build_batch (a complete batch, for tests and tools)
follow below it.

Layout (Kafka's DefaultRecordBatch):

    0  int64  base_offset          8  int32 batch_length (bytes after this field)
    12 int32  partition_leader_epoch
    16 int8   magic (2)            17 uint32 crc (CRC-32C of bytes 21..end)
    21 int16  attributes           23 int32 last_offset_delta
    27 int64  base_timestamp       35 int64 max_timestamp
    43 int64  producer_id          51 int16 producer_epoch
    53 int32  base_sequence        57 int32 records_count
    61 records...

base_offset and partition_leader_epoch lie before the CRC'd range, so a broker can patch them
without recomputing the CRC (Kafka does exactly that on append).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import crc32c

from protocol import compression
from protocol.value_type import value_type

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # base_offset + batch_length
CRC_START = 21
MAGIC_OFFSET = 16

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
# DefaultRecordBatch.DELETE_HORIZON_FLAG_MASK: base_timestamp holds the delete horizon the log
# cleaner set on a batch with tombstones or a marker (KIP-534).
DELETE_HORIZON_BIT = 0x40

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")


class CorruptBatchError(ValueError):
    """The bytes cannot be a RecordBatch v2 (too short, bad length, bad magic)."""


class LoopBudgetExceeded(Exception):
    """Checking the batch would hold the event loop too long (not a corrupt batch: the
    caller checks it again without a budget, off the event loop)."""


class HeaderBudgetExceeded(LoopBudgetExceeded):
    """scan_records met more record headers than its ``max_headers``."""


@value_type(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, length prefix included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        """DefaultRecordBatch.deleteHorizonMs: set by the log cleaner, else None."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; sequences wrap at 2^31 as in Kafka."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        # DefaultRecordBatch.lastSequence: from last_offset_delta, not the record count, so
        # an empty batch the log cleaner kept (Kafka's writeEmptyHeader) keeps its sequence.
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Read the 61-byte header at ``pos``. Raises CorruptBatchError if it cannot be one."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptBatchError(f"batch shorter than {HEADER_SIZE} bytes")
    fields = _HEADER.unpack_from(buf, pos)
    header = BatchHeader(*fields)
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptBatchError(f"batch_length {header.batch_length} below the header size")
    return header


def read_magic(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    if len(buf) - pos <= MAGIC_OFFSET:
        raise CorruptBatchError("too short to carry a magic byte")
    return buf[pos + MAGIC_OFFSET]


def compute_crc(batch: bytes | bytearray | memoryview) -> int:
    """CRC-32C over attributes..end, the value Kafka stores at byte 17."""
    return int(crc32c.crc32c(memoryview(batch)[CRC_START:]))


def crc_ok(batch: bytes | bytearray | memoryview, header: BatchHeader | None = None) -> bool:
    stored = header.crc if header is not None else _UINT32.unpack_from(batch, 17)[0]
    return compute_crc(batch) == stored


def write_crc(batch: bytearray) -> None:
    _UINT32.pack_into(batch, 17, compute_crc(batch))


def set_base_offset(batch: bytearray | memoryview, base_offset: int, pos: int = 0) -> None:
    _BASE_OFFSET.pack_into(batch, pos, base_offset)


def set_partition_leader_epoch(batch: bytearray | memoryview, epoch: int, pos: int = 0) -> None:
    _INT32.pack_into(batch, pos + 12, epoch)


# Attribute bits Kafka's DefaultRecordBatch.computeAttributes writes back (codec, timestamp
# type, transactional, control, delete horizon); anything else is dropped by a rewrite.
_KNOWN_ATTRIBUTES = (
    COMPRESSION_MASK | TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT | DELETE_HORIZON_BIT
)


def set_timestamp_type_and_max(batch: bytearray, log_append_time: bool, timestamp: int) -> bool:
    """Kafka's DefaultRecordBatch.setMaxTimestamp: set the timestamp-type bit and max_timestamp.

    Nothing changes (and the CRC is not recomputed) when both already hold; otherwise the
    attributes are recomputed from the known bits and the CRC rewritten. Returns whether the
    batch changed.
    """
    attributes = _INT16.unpack_from(batch, 21)[0]
    current = _INT64.unpack_from(batch, 35)[0]
    if bool(attributes & TIMESTAMP_TYPE_BIT) == log_append_time and current == timestamp:
        return False
    attributes &= _KNOWN_ATTRIBUTES & ~TIMESTAMP_TYPE_BIT
    if log_append_time:
        attributes |= TIMESTAMP_TYPE_BIT
    _INT16.pack_into(batch, 21, attributes)
    _INT64.pack_into(batch, 35, timestamp)
    write_crc(batch)
    return True


def iter_batches(
    buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each whole batch in ``buf[pos:end]``.

    Stops silently at a trailing partial batch; raises CorruptBatchError on a header that
    cannot be one. CRCs are not checked here (callers decide when that cost is worth it).
    """
    stop = len(buf) if end is None else end
    while stop - pos >= HEADER_SIZE:
        header = parse_header(buf, pos)
        if pos + header.size > stop:
            return
        yield pos, header
        pos += header.size


# --- Record contents (Kafka's DefaultRecord) -------------------------------------------------
#
# Inside a batch (after decompression) each record is:
#
#     length varint (bytes after this field)    attributes int8 (unused, 0)
#     timestamp_delta varlong                   offset_delta varint
#     key_length varint, key                    value_length varint, value
#     headers_count varint, then per header: key_length varint, utf-8 key,
#                                            value_length varint, value
#
# All varints are zigzag-encoded (protobuf style). A negative key/value length means null;
# Kafka's DefaultRecord.readFrom reads any negative length as null, and so do we.

_DEFAULT_MAX_UNCOMPRESSED = 64 * 1024 * 1024


@value_type(frozen=True, slots=True)
class Record:
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    attributes: int = 0


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` zigzag-encoded as a varint (valid for the whole int64 range)."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def encode_varint(value: int) -> bytes:
    out = bytearray()
    write_varint(out, value)
    return bytes(out)


def read_varint(buf: bytes, pos: int, max_bytes: int = 10) -> tuple[int, int]:
    """Decode a zigzag varint at ``pos``; return (value, next position).

    ``max_bytes`` is 5 for Kafka's varint (int32) and 10 for varlong; longer encodings are
    rejected as Kafka's ByteUtils does. Raises CorruptBatchError if truncated or too long.
    """
    try:
        b = buf[pos]
        if b < 0x80:  # one-byte fast path: most lengths and deltas
            return (b >> 1) ^ -(b & 1), pos + 1
        result = b & 0x7F
        shift = 7
        end = pos + max_bytes
        pos += 1
        while True:
            if pos >= end:
                raise CorruptBatchError("varint is too long")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return (result >> 1) ^ -(result & 1), pos
            shift += 7
    except IndexError:
        raise CorruptBatchError("truncated varint") from None


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(1)  # zigzag(-1)
    else:
        write_varint(out, len(data))
        out += data


def encode_record(record: Record) -> bytes:
    body = bytearray()
    body.append(record.attributes & 0xFF)
    write_varint(body, record.timestamp_delta)
    write_varint(body, record.offset_delta)
    _write_bytes(body, record.key)
    _write_bytes(body, record.value)
    write_varint(body, len(record.headers))
    for name, value in record.headers:
        # surrogateescape round-trips header keys that were not valid UTF-8 on input.
        _write_bytes(body, name.encode("utf-8", "surrogateescape"))
        _write_bytes(body, value)
    out = bytearray()
    write_varint(out, len(body))
    out += body
    return bytes(out)


def encode_records(records: Iterable[Record]) -> bytes:
    """The uncompressed records section of a batch."""
    return b"".join(encode_record(r) for r in records)


def parse_records(data: bytes, count: int) -> list[Record]:
    """Parse exactly ``count`` records filling all of ``data`` (already decompressed).

    Mirrors the checks of Kafka's DefaultRecord.readFrom and DefaultRecordBatch's record
    iterator: each record must consume exactly its declared length, there must be
    ``count`` of them, and nothing may follow the last one. Raises CorruptBatchError.
    """
    return _walk_records(data, count, True)[0]


@value_type(frozen=True, slots=True)
class RecordsScan:
    """What append validation needs from a batch's records, gathered in one walk."""

    min_timestamp_delta: int
    max_timestamp_delta: int
    # Positions of the records without a key (refused on compacted topics).
    keyless: tuple[int, ...]
    # Offset deltas are exactly 0, 1, 2, ... (Kafka rewrites a compressed batch otherwise).
    sequential_offsets: bool
    # Record headers in all.
    headers: int = 0
    # Read by protocol.uniform_records' pattern rather than walked (not part of the answer).
    uniform: bool = field(default=False, compare=False)


def scan_records(data: bytes, count: int, max_headers: int | None = None) -> RecordsScan:
    """parse_records' checks without building Records, and a summary of what was seen.

    About three times faster than parse_records: what append validation needs. With
    ``max_headers``, raises HeaderBudgetExceeded once the records declare more headers in
    all (each costs a Python step, like a record; the batch header tells only the records).
    """
    return _walk_records(data, count, False, max_headers)[1]


def _walk_records(
    data: bytes, count: int, build: bool, max_headers: int | None = None
) -> tuple[list[Record], RecordsScan]:
    # Hot loop (validation decodes every record of a batch): the one-byte varint case is
    # inlined, since nearly every length and delta fits in one byte.
    if count < 0:
        raise CorruptBatchError(f"negative records_count {count}")
    records: list[Record] = []
    keyless: list[int] = []
    sequential = True
    min_ts = max_ts = 0
    rv = read_varint
    pos = 0
    end = len(data)
    headers_max = (1 << 62) if max_headers is None else max_headers
    headers_seen = 0
    for index in range(count):
        if pos >= end:
            raise CorruptBatchError(f"records_count is {count} but the data holds only {index}")
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < end and data[pos + 1] < 0x80:  # two bytes: records of 64 B-8 KiB
            b = (b & 0x7F) | (data[pos + 1] << 7)
            length = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            length, pos = rv(data, pos, 5)
        rec_end = pos + length
        if length < 1 or rec_end > end:
            raise CorruptBatchError(f"record length {length} does not fit the batch")
        attributes = data[pos]
        pos += 1
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            ts_delta, pos = rv(data, pos, 10)
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            off_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            off_delta, pos = rv(data, pos, 5)
        if index == 0:
            min_ts = max_ts = ts_delta
        elif ts_delta < min_ts:
            min_ts = ts_delta
        elif ts_delta > max_ts:
            max_ts = ts_delta
        if off_delta != index:
            sequential = False
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            klen, pos = rv(data, pos, 5)
        key: bytes | None = None
        if klen < 0:
            keyless.append(index)
        else:
            if pos + klen > rec_end:
                raise CorruptBatchError("record key runs past the record")
            if build:
                key = data[pos : pos + klen]
            pos += klen
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:  # two bytes: values of 64 B-8 KiB
            b = (b & 0x7F) | (data[pos + 1] << 7)
            vlen = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            vlen, pos = rv(data, pos, 5)
        value: bytes | None = None
        if vlen >= 0:
            if pos + vlen > rec_end:
                raise CorruptBatchError("record value runs past the record")
            if build:
                value = data[pos : pos + vlen]
            pos += vlen
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            hcount = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            hcount, pos = rv(data, pos, 5)
        # Each header needs at least 2 bytes; Kafka rejects counts the record cannot hold.
        if hcount < 0 or hcount > rec_end - pos:
            raise CorruptBatchError(f"invalid header count {hcount}")
        if hcount:
            headers_seen += hcount
            if headers_seen > headers_max:
                raise HeaderBudgetExceeded(f"more than {max_headers} record headers")
        headers: list[tuple[str, bytes | None]] = []
        for _h in range(hcount):
            hklen, pos = rv(data, pos, 5)
            if hklen < 0 or pos + hklen > rec_end:
                raise CorruptBatchError(f"invalid header key length {hklen}")
            hkey = data[pos : pos + hklen].decode("utf-8", "surrogateescape") if build else ""
            pos += hklen
            hvlen, pos = rv(data, pos, 5)
            hval: bytes | None = None
            if hvlen >= 0:
                if pos + hvlen > rec_end:
                    raise CorruptBatchError("header value runs past the record")
                hval = data[pos : pos + hvlen]
                pos += hvlen
            if build:
                headers.append((hkey, hval))
        if pos != rec_end:
            raise CorruptBatchError(
                f"record declared {length} bytes but its fields took {length + pos - rec_end}"
            )
        if build:
            records.append(Record(off_delta, ts_delta, key, value, tuple(headers), attributes))
    if pos != end:
        raise CorruptBatchError(f"{end - pos} bytes follow the last of {count} records")
    return records, RecordsScan(min_ts, max_ts, tuple(keyless), sequential, headers_seen)


def records_data(
    batch: bytes | bytearray | memoryview,
    header: BatchHeader | None = None,
    *,
    max_size: int = _DEFAULT_MAX_UNCOMPRESSED,
) -> bytes:
    """The batch's records section, decompressed. Raises CorruptBatchError."""
    if header is None:
        header = parse_header(batch)
    if header.magic != 2:
        raise CorruptBatchError(f"magic {header.magic} is not a v2 record batch")
    if len(batch) < header.size:
        raise CorruptBatchError(f"batch of {header.size} bytes truncated to {len(batch)}")
    body = memoryview(batch)[HEADER_SIZE : header.size]
    codec = header.compression
    if codec == 0:
        return bytes(body)
    try:
        return compression.decompress(codec, body, max_size)
    except compression.CompressionError as exc:
        raise CorruptBatchError(str(exc)) from exc


def decode_records(
    batch: bytes | bytearray | memoryview,
    header: BatchHeader | None = None,
    *,
    max_size: int = _DEFAULT_MAX_UNCOMPRESSED,
) -> list[Record]:
    """Decompress and parse every record of one batch. Raises CorruptBatchError.

    ``max_size`` caps the decompressed size (a defence against compression bombs).
    """
    if header is None:
        header = parse_header(batch)
    return parse_records(records_data(batch, header, max_size=max_size), header.records_count)


def build_batch(
    records: Sequence[Record] | Sequence[tuple[bytes | None, bytes | None]],
    *,
    base_offset: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    codec: int = 0,
    transactional: bool = False,
    control: bool = False,
    base_timestamp: int | None = None,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A complete, CRC-valid RecordBatch v2 (for tests, tools and benchmarks).

    (key, value) tuples become records with offset deltas 0..n-1 and timestamp delta 0.
    The records section is always compressed when ``codec`` is set, even when that does
    not shrink it (unlike librdkafka, which then sends it uncompressed).
    """
    items: Sequence[Record | tuple[bytes | None, bytes | None]] = records
    recs = [
        r if isinstance(r, Record) else Record(i, 0, r[0], r[1], ()) for i, r in enumerate(items)
    ]
    if base_timestamp is None:
        # The one clock read in protocol/: a convenience for callers building test data.
        base_timestamp = int(time.time() * 1000)
    body = compression.compress(codec, encode_records(recs))
    attributes = codec & COMPRESSION_MASK
    if transactional:
        attributes |= TRANSACTIONAL_BIT
    if control:
        attributes |= CONTROL_BIT
    last_offset_delta = recs[-1].offset_delta if recs else -1
    max_ts = base_timestamp + max((r.timestamp_delta for r in recs), default=0)
    buf = bytearray(HEADER_SIZE)
    _HEADER.pack_into(
        buf,
        0,
        base_offset,
        HEADER_SIZE - LOG_OVERHEAD + len(body),
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        len(recs),
    )
    buf += body
    write_crc(buf)
    return bytes(buf)


# Control records (Kafka's ControlRecordType, EndTransactionMarker): key int16 version 0 +
# int16 type; an end-transaction marker's value is int16 version 0 + int32 coordinator epoch.
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    commit: bool
    coordinator_epoch: int


def build_end_txn_marker(
    producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, timestamp: int
) -> bytes:
    """MemoryRecords.withEndTransactionMarker: one control record, transactional and control
    bits set, uncompressed, no sequence (-1), the transaction's producer id and epoch."""
    kind = CONTROL_COMMIT if commit else CONTROL_ABORT
    record = Record(0, 0, _CONTROL_KEY.pack(0, kind), _MARKER_VALUE.pack(0, coordinator_epoch), ())
    return build_batch(
        [record],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        transactional=True,
        control=True,
        base_timestamp=timestamp,
    )


def parse_end_txn_marker(
    batch: bytes | bytearray | memoryview, header: BatchHeader
) -> EndTxnMarker | None:
    """The COMMIT/ABORT marker a control batch holds; None for other control records."""
    records = decode_records(bytes(batch), header)
    if not records or records[0].key is None or len(records[0].key) < _CONTROL_KEY.size:
        return None
    _, kind = _CONTROL_KEY.unpack_from(records[0].key)
    if kind not in (CONTROL_ABORT, CONTROL_COMMIT):
        return None
    value = records[0].value or b""
    epoch = _MARKER_VALUE.unpack_from(value)[1] if len(value) >= _MARKER_VALUE.size else -1
    return EndTxnMarker(kind == CONTROL_COMMIT, epoch)


def encode_batch(header: BatchHeader, body: bytes | bytearray) -> bytes:
    """A complete batch of ``header``'s fields around the records section ``body`` (already
    compressed as the header's attributes say); batch_length and CRC computed here."""
    buf = bytearray(HEADER_SIZE)
    _HEADER.pack_into(
        buf,
        0,
        header.base_offset,
        HEADER_SIZE - LOG_OVERHEAD + len(body),
        header.partition_leader_epoch,
        2,
        0,
        header.attributes,
        header.last_offset_delta,
        header.base_timestamp,
        header.max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        header.records_count,
    )
    buf += body
    write_crc(buf)
    return bytes(buf)
