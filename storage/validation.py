"""Validation of one client batch before append, with the error codes Kafka 4.0 answers.

Kafka behaviour followed, in Kafka's own order (the first failing check decides the code):

1. ProduceRequest.validateRecords (KafkaApis, before the log is touched), iterating the
   partition's records with ByteBufferLogInputStream (``request_level`` failures: Kafka
   answers them with log_start_offset -1, and invalid acks do not override them):
   - under 12 bytes, under 17 bytes, or a batch_length running past the end: the iterator
     finds no batch -> INVALID_RECORD ("must have at least one record batch");
   - batch_length below 14 (the smallest legacy record) -> CORRUPT_MESSAGE;
   - magic byte outside 0..2 -> CORRUPT_MESSAGE ("Invalid magic found in record");
   - magic 0 or 1 -> INVALID_RECORD; zstd on Produce < v7 -> UNSUPPORTED_COMPRESSION_TYPE;
   - the bytes after the batch: the iterator checks a second batch's length (under 14:
     CORRUPT_MESSAGE) and magic (CORRUPT_MESSAGE) when it can read them, and a whole second
     batch -> INVALID_RECORD ("exactly one record batch per partition"). Fewer bytes than a
     whole batch are no batch: UnifiedLog.trimInvalidBytes drops them, and ``size`` says
     how many bytes to keep.
2. UnifiedLog.analyzeAndValidateRecords: base_offset != 0 -> INVALID_RECORD; size above
   max.message.bytes -> MESSAGE_TOO_LARGE; under 61 bytes or CRC mismatch -> CORRUPT_MESSAGE.
3. LogValidator.validateBatch: last_offset_delta < 0, records_count <= 0 or
   records_count != last_offset_delta + 1, a control batch, or a producer id without a
   base sequence -> INVALID_RECORD.
4. LogValidator's record iteration (depth="records" only): records that do not parse, a
   count that differs from records_count, or bytes left over -> INVALID_RECORD (Kafka's
   InvalidRecordException from DefaultRecord and DefaultRecordBatch's iterator). The walk
   also gathers ``scan`` (timestamps, keyless records, offset deltas) for
   storage.record_rules. Offset deltas other than 0, 1, 2, ... are accepted, as Kafka
   accepts them (record_rules rewrites a compressed batch that has them).

Deviations, each towards a specific non-retriable answer:
- Unknown codec ids 5-7 and compressed data that does not decompress: Kafka fails there
  with an internal exception (IllegalArgumentException / KafkaException), which clients see
  as UNKNOWN_SERVER_ERROR; we answer INVALID_RECORD. Unknown codecs are rejected at every
  depth, since nothing could ever read such a batch back.
- The per-record timestamp and compacted-topic key checks belong to storage.record_rules
  (they need topic configuration); acks and the Produce version to the handler.
"""

from __future__ import annotations

import struct

from protocol import compression
from protocol.errors import ErrorCode
from protocol.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    BatchHeader,
    CorruptBatchError,
    LoopBudgetExceeded,
    RecordsScan,
    compute_crc,
    parse_header,
    records_data,
    scan_records,
)
from protocol.uniform_records import scan_uniform
from protocol.value_type import value_type

DEPTHS = ("header", "records")

# Kafka's LegacyRecord.RECORD_OVERHEAD_V0: the smallest batch_length its iterator accepts.
_MIN_BATCH_LENGTH = 14
_LENGTH = struct.Struct(">i")
_ATTRIBUTES_OFFSET = 21


@value_type(frozen=True, slots=True)
class Validation:
    error: ErrorCode
    # Why, for the broker's log: Kafka sends no error_message for any of these checks.
    message: str | None
    header: BatchHeader | None
    # The failing check is ProduceRequest.validateRecords' (see the module docstring).
    request_level: bool = False
    # Bytes of the one batch; whatever follows it is no batch and is not stored.
    size: int = 0
    # Set at depth "records" on success.
    scan: RecordsScan | None = None

    @property
    def ok(self) -> bool:
        return self.error == ErrorCode.NONE


def _fail(error: ErrorCode, message: str, header: BatchHeader | None = None) -> Validation:
    return Validation(error, message, header)


def _refuse(error: ErrorCode, message: str) -> Validation:
    return Validation(error, message, None, request_level=True)


def validate_batch(
    batch: memoryview | bytes | bytearray,
    *,
    max_message_bytes: int,
    allow_zstd: bool,
    depth: str,
    max_headers: int | None = None,
    max_walked: int | None = None,
) -> Validation:
    """Check the records field of one partition in a Produce request (magic-2 clients).

    ``allow_zstd`` is False for Produce below v7. ``depth`` "header" never decompresses;
    "records" also decodes every record. On success ``header`` is the parsed header.
    ``max_headers``: HeaderBudgetExceeded once the records hold more headers (the caller
    then validates the batch again off the event loop). ``max_walked``: LoopBudgetExceeded
    instead of walking more records than that one by one (records of one shape are read
    by a compiled pattern, about eight times faster, and do not count).
    """
    if depth not in DEPTHS:
        raise ValueError(f"depth must be one of {DEPTHS}, not {depth!r}")
    n = len(batch)
    no_batch = "the records field must hold exactly one record batch, found none"
    if n < LOG_OVERHEAD:
        return _refuse(ErrorCode.INVALID_RECORD, no_batch)
    (batch_length,) = _LENGTH.unpack_from(batch, 8)
    if batch_length < _MIN_BATCH_LENGTH:
        return _refuse(ErrorCode.CORRUPT_MESSAGE, f"batch_length {batch_length} is too small")
    if n <= MAGIC_OFFSET:
        return _refuse(ErrorCode.INVALID_RECORD, no_batch)
    magic = batch[MAGIC_OFFSET]
    if magic > 2:  # Java reads the byte signed: 0x80-0xff are negative, also invalid
        return _refuse(ErrorCode.CORRUPT_MESSAGE, f"invalid magic {magic}")
    size = batch_length + LOG_OVERHEAD
    if size > n:
        return _refuse(ErrorCode.INVALID_RECORD, f"{no_batch} (batch of {size} bytes, {n} given)")
    if magic != 2:
        return _refuse(ErrorCode.INVALID_RECORD, f"magic {magic}: only magic 2 batches accepted")
    if size > _ATTRIBUTES_OFFSET + 1:
        codec = batch[_ATTRIBUTES_OFFSET + 1] & 0x07
        if codec == compression.ZSTD and not allow_zstd:
            return _refuse(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs Produce version 7 or later"
            )
    refused = _check_no_second_batch(batch, size)
    if refused is not None:
        return refused
    batch = memoryview(batch)[:size]
    if size < HEADER_SIZE:
        # Only the base offset can still be read; Kafka checks it before size and CRC.
        base_offset = struct.unpack_from(">q", batch, 0)[0]
        if base_offset != 0:
            return _fail(ErrorCode.INVALID_RECORD, f"base_offset is {base_offset}, not 0")
        return _fail(ErrorCode.CORRUPT_MESSAGE, f"batch of {size} bytes is below the header size")
    try:
        header = parse_header(batch)
    except CorruptBatchError as exc:  # unreachable after the checks above; kept as a guard
        return _fail(ErrorCode.CORRUPT_MESSAGE, str(exc))
    checked = _validate_parsed(batch, header, max_message_bytes, depth, max_headers, max_walked)
    # (Built directly: dataclasses.replace costs more than the rest of a small batch's
    # header checks.)
    return Validation(
        checked.error, checked.message, checked.header, checked.request_level, size, checked.scan
    )


def _check_no_second_batch(batch: memoryview | bytes | bytearray, size: int) -> Validation | None:
    """ByteBufferLogInputStream.nextBatch on the bytes after the first batch."""
    rest = len(batch) - size
    if rest < LOG_OVERHEAD:
        return None
    (length,) = _LENGTH.unpack_from(batch, size + 8)
    if length < _MIN_BATCH_LENGTH:
        return _refuse(ErrorCode.CORRUPT_MESSAGE, f"second batch_length {length} is too small")
    if rest <= MAGIC_OFFSET:
        return None
    magic = batch[size + MAGIC_OFFSET]
    if magic > 2:
        return _refuse(ErrorCode.CORRUPT_MESSAGE, f"invalid magic {magic} in a second batch")
    if rest >= length + LOG_OVERHEAD:
        return _refuse(
            ErrorCode.INVALID_RECORD,
            "the records field must hold exactly one record batch, found a second one",
        )
    # Not a whole batch: Kafka's iterator stops there and UnifiedLog.trimInvalidBytes drops it.
    return None


def _validate_parsed(
    batch: memoryview | bytes | bytearray,
    header: BatchHeader,
    max_message_bytes: int,
    depth: str,
    max_headers: int | None,
    max_walked: int | None = None,
) -> Validation:
    if header.base_offset != 0:
        return _fail(
            ErrorCode.INVALID_RECORD, f"base_offset is {header.base_offset}, not 0", header
        )
    if header.size > max_message_bytes:
        return _fail(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"batch of {header.size} bytes exceeds max.message.bytes {max_message_bytes}",
            header,
        )
    crc = compute_crc(batch)
    if crc != header.crc:
        return _fail(
            ErrorCode.CORRUPT_MESSAGE,
            f"CRC mismatch: stored {header.crc:#010x}, computed {crc:#010x}",
            header,
        )
    if header.compression not in compression.CODEC_IDS:
        return _fail(
            ErrorCode.INVALID_RECORD, f"unknown compression codec id {header.compression}", header
        )
    if header.last_offset_delta < 0:
        return _fail(
            ErrorCode.INVALID_RECORD,
            f"invalid offset range: last_offset_delta {header.last_offset_delta}",
            header,
        )
    if header.records_count <= 0:
        return _fail(
            ErrorCode.INVALID_RECORD, f"invalid records_count {header.records_count}", header
        )
    if header.records_count != header.last_offset_delta + 1:
        return _fail(
            ErrorCode.INVALID_RECORD,
            f"records_count {header.records_count} does not match last_offset_delta "
            f"{header.last_offset_delta}",
            header,
        )
    if header.is_control:
        return _fail(ErrorCode.INVALID_RECORD, "clients may not write control batches", header)
    if header.producer_id >= 0 and header.base_sequence < 0:
        return _fail(
            ErrorCode.INVALID_RECORD,
            f"producer id {header.producer_id} with base_sequence {header.base_sequence}",
            header,
        )
    if depth == "records":
        return _validate_records(batch, header, max_headers, max_walked)
    return Validation(ErrorCode.NONE, None, header)


def _validate_records(
    batch: memoryview | bytes | bytearray,
    header: BatchHeader,
    max_headers: int | None,
    max_walked: int | None = None,
) -> Validation:
    try:
        data = records_data(batch, header)
        # Records of one shape are read by a compiled pattern (protocol.uniform_records),
        # the rest walked one by one; both give the same answer.
        scan = scan_uniform(data, header.records_count)
        if scan is None:
            if max_walked is not None and header.records_count > max_walked:
                raise LoopBudgetExceeded(f"{header.records_count} records to walk one by one")
            scan = scan_records(data, header.records_count, max_headers)
    except CorruptBatchError as exc:
        return _fail(ErrorCode.INVALID_RECORD, f"malformed records: {exc}", header)
    return Validation(ErrorCode.NONE, None, header, scan=scan)
