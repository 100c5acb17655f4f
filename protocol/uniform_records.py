"""The record walk of a batch whose records all share one shape, done by the regex engine.

Validation (``scan_records``) must read every record of a Produce batch, as Kafka's
DefaultRecord.readFrom does: in Python that walk costs about 1.7 us per record, the largest
single cost of a Produce request (issue 19's profile). Most producers write batches whose
records differ only in their timestamps and values: the same attributes, no headers, a key
of one length (or none), a value of one length, offset deltas 0, 1, 2, ... For such a batch
one record is a regular language, and a compiled pattern reads the records in C: each
record's length prefix must equal the length its fields add up to (one alternative per
length of its two varint deltas), every field must end inside its record. ``findall``
returns the matches' timestamp and offset deltas; the matches must tile the section
exactly (as many as records_count, their lengths adding up to the section's, which for
non-overlapping matches means each starts where the one before it ended), and the offset
deltas must be exactly 0, 1, 2, ...

A batch that is not like that (another shape, headers, long or non-canonical varints,
offsets out of order, corruption) is walked the ordinary way, so this path accepts only
what the walk accepts, with the same summary. A shape's pattern is compiled (about a
millisecond) the second time in a row it is seen, and only a few are kept.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

from protocol.records import CorruptBatchError, RecordsScan, encode_varint, read_varint

__all__ = ["scan_uniform"]

# Compiled patterns kept (least recently used dropped).
MAX_PATTERNS = 32

# Varints of one to three bytes: timestamp deltas within about 12 days of the batch's base
# timestamp, offset deltas below 2**20. Longer ones go the ordinary way.
_VARINTS = (
    rb"[\x00-\x7f]",
    rb"[\x80-\xff][\x00-\x7f]",
    rb"[\x80-\xff]{2}[\x00-\x7f]",
)

# Byte -> zigzag value + 64 for one-byte timestamp deltas: the order of the values, so the
# smallest and largest delta of a batch are min() and max() of translated bytes.
_ONE_BYTE_RANK = bytes(((b >> 1) ^ -(b & 1)) + 64 if b < 0x80 else 0 for b in range(256))

Shape = tuple[int, int, int]  # attributes, key length, value length (-1: null)

Compiled = tuple[re.Pattern[bytes], int, int]

_patterns: OrderedDict[Shape, Compiled | None] = OrderedDict()
_last_shape: list[Shape | None] = [None]
# The event loop and validation threads share the cache.
_lock = threading.Lock()
# Offset deltas 0, 1, 2, ... as varints, one after the other (grown on demand).
_sequential = bytearray()
_sequential_count = [0]
# _offsets' answers for the record counts seen first (batches mostly have a few sizes).
_offsets_by_count: dict[int, bytes] = {}


def _compile(attributes: int, key_len: int, value_len: int) -> Compiled | None:
    """The pattern of one record of this shape (its one group: the record's length prefix,
    attributes and two deltas), the bytes every record has besides that group, and the
    length prefix's size (None: the records' lengths would not all have a prefix of one
    size, so this path does not take the shape)."""
    key = re.escape(encode_varint(key_len)) + (rb".{%d}" % key_len if key_len > 0 else b"")
    value = re.escape(encode_varint(value_len)) + (rb".{%d}" % value_len if value_len > 0 else b"")
    # key length and key, value length and value, header count (0)
    rest = len(encode_varint(key_len)) + max(key_len, 0) + len(encode_varint(value_len))
    rest += max(value_len, 0) + 1
    prefix = len(encode_varint(rest + 3))
    if len(encode_varint(rest + 7)) != prefix:
        return None
    attr = re.escape(bytes([attributes]))
    choices = []
    for ts_bytes, ts in enumerate(_VARINTS, start=1):
        for offset_bytes, offset in enumerate(_VARINTS, start=1):
            length = encode_varint(1 + ts_bytes + offset_bytes + rest)
            choices.append(re.escape(length) + attr + ts + offset)
    record = b"(" + b"|".join(choices) + b")" + key + value + b"\\x00"
    return re.compile(record, re.DOTALL), rest, prefix


def _first_shape(data: bytes) -> Shape | None:
    """The first record's shape (the header count is checked by the pattern)."""
    try:
        length, pos = read_varint(data, 0, 5)
        attributes = data[pos]
        _, pos = read_varint(data, pos + 1, 10)
        _, pos = read_varint(data, pos, 5)
        key_len, pos = read_varint(data, pos, 5)
        pos += max(key_len, 0)
        value_len, pos = read_varint(data, pos, 5)
    except (CorruptBatchError, IndexError):
        return None
    if length < 1 or key_len < -1 or value_len < -1:
        return None
    return attributes, key_len, value_len


def _offsets(count: int) -> bytes:
    """The offset deltas 0 .. count - 1 as one run of varints."""
    known = _offsets_by_count.get(count)
    if known is not None:
        return known
    with _lock:
        while _sequential_count[0] < count:
            _sequential.extend(encode_varint(_sequential_count[0]))
            _sequential_count[0] += 1
        # zigzag(i) = 2i: one byte below 64, two below 8192, three below 2**20.
        size = count if count <= 64 else 64 + 2 * (min(count, 8192) - 64)
        if count > 8192:
            size += 3 * (count - 8192)
        run = bytes(_sequential[:size])
        if len(_offsets_by_count) < MAX_PATTERNS:
            _offsets_by_count[count] = run
    return run


def scan_uniform(data: bytes, count: int) -> RecordsScan | None:
    """scan_records' answer for a batch of identically shaped records, or None when the
    batch is not one (or its shape is new): the caller walks the records then."""
    if count < 2 or count >= 1 << 20:
        return None
    shape = _first_shape(data)
    if shape is None:
        return None
    with _lock:
        if shape in _patterns:
            compiled = _patterns[shape]
            _patterns.move_to_end(shape)
        elif _last_shape[0] != shape:
            _last_shape[0] = shape
            return None
        else:
            compiled = _compile(*shape)
            _patterns[shape] = compiled
            if len(_patterns) > MAX_PATTERNS:
                _patterns.popitem(last=False)
    if compiled is None:
        return None
    pattern, rest, prefix = compiled
    heads = pattern.findall(data)
    if len(heads) != count:
        return None
    joined = b"".join(heads)
    # Non-overlapping matches adding up to the whole section tile it exactly.
    if len(joined) + count * rest != len(data):
        return None
    stamps = _one_byte_stamps(joined, count, prefix)
    if stamps is not None:
        ranks = stamps.translate(_ONE_BYTE_RANK)
        low, high = min(ranks) - 64, max(ranks) - 64
    else:
        bounds = _decode_heads(heads, prefix)
        if bounds is None:
            return None
        low, high = bounds
    keyless = tuple(range(count)) if shape[1] < 0 else ()
    return RecordsScan(low, high, keyless, True, 0, uniform=True)


def _one_byte_stamps(joined: bytes, count: int, prefix: int) -> bytes | None:
    """The timestamp deltas when every one is a single byte and the offset deltas are 0, 1,
    2, ...: read at fixed places (headers of one size per offset-delta size), all in C.

    Reading at the places that layout gives is safe: up to the first header that differs
    from it everything lines up, and that header either has a timestamp delta whose first
    byte carries the continuation bit, or an offset delta other than the expected one.
    """
    if count <= 64:
        # One segment (the usual batch): the deltas are two strided slices.
        size = prefix + 3
        if len(joined) != count * size:
            return None
        one = joined[prefix + 1 :: size]
        if max(one) >= 0x80 or joined[prefix + 2 :: size] != _offsets(count):
            return None
        return one
    stamps = []
    offsets = bytearray()
    start = first = 0
    for last, offset_bytes in ((64, 1), (8192, 2), (1 << 20, 3)):
        n = min(count, last) - first
        if n <= 0:
            break
        size = prefix + 2 + offset_bytes
        end = start + n * size
        segment = joined[start:end]
        stamps.append(segment[prefix + 1 :: size])
        run = bytearray(n * offset_bytes)
        for k in range(offset_bytes):
            run[k::offset_bytes] = segment[prefix + 2 + k :: size]
        offsets += run
        start, first = end, first + n
    if start != len(joined):
        return None
    one = b"".join(stamps)
    if len(one) != count or max(one) >= 0x80 or offsets != _offsets(count):
        return None
    return one


def _decode_heads(heads: list[bytes], prefix: int) -> tuple[int, int] | None:
    """Smallest and largest timestamp delta, read header by header (some delta is longer
    than a byte); None when the offset deltas are not 0, 1, 2, ..."""
    low = high = 0
    for index, head in enumerate(heads):
        delta, pos = read_varint(head, prefix + 1, 10)
        offset, _ = read_varint(head, pos, 5)
        if offset != index:
            return None
        if index == 0 or delta < low:
            low = delta
        if index == 0 or delta > high:
            high = delta
    return low, high
