"""The log cleaner's walk of a batch's records: each record's key, offset delta, whether it
has a value, and where its bytes lie, without building Record objects (the cleaner reads
every record of the log twice; objects would cost time and garbage-collector pauses that
the event loop would feel). ``splice`` writes kept records back as they were, their
timestamp delta re-based when the batch's base timestamp changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.records import CorruptBatchError, encode_varint, read_varint


@dataclass(slots=True)
class Walked:
    """Parallel lists, one entry per record."""

    starts: list[int]  # first byte of the record's length prefix
    bodies: list[int]  # first byte after the length prefix (the attributes)
    ts_ends: list[int]  # first byte after the timestamp delta
    ends: list[int]  # first byte after the record
    ts_deltas: list[int]
    offset_deltas: list[int]
    keys: list[bytes | None]
    has_value: list[bool]


def walk(data: bytes, count: int) -> Walked:
    """Every record of an (uncompressed) records section. Raises CorruptBatchError."""
    out = Walked([], [], [], [], [], [], [], [])
    rv = read_varint
    pos, end = 0, len(data)
    starts, bodies, ts_ends, ends = out.starts, out.bodies, out.ts_ends, out.ends
    ts_deltas, offset_deltas, keys, has_value = (
        out.ts_deltas,
        out.offset_deltas,
        out.keys,
        out.has_value,
    )
    # One- and two-byte varints inline (nearly every length and delta: a record under 8 KiB,
    # a batch under 8192 records), else read_varint. The cleaner walks every record of the
    # log twice; a call per field was most of its time.
    for _ in range(count):
        start = pos
        b = data[pos] if pos < end else 0x80
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < end and data[pos + 1] < 0x80:
            v = (b & 0x7F) | (data[pos + 1] << 7)
            length = (v >> 1) ^ -(v & 1)
            pos += 2
        else:
            length, pos = rv(data, pos, 5)
        body = pos
        rec_end = pos + length
        if length < 1 or rec_end > end:
            raise CorruptBatchError(f"record length {length} does not fit the batch")
        pos += 1  # attributes
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:
            v = (b & 0x7F) | (data[pos + 1] << 7)
            ts_delta = (v >> 1) ^ -(v & 1)
            pos += 2
        else:
            ts_delta, pos = rv(data, pos, 10)
        ts_end = pos
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            off_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:
            v = (b & 0x7F) | (data[pos + 1] << 7)
            off_delta = (v >> 1) ^ -(v & 1)
            pos += 2
        else:
            off_delta, pos = rv(data, pos, 5)
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:
            v = (b & 0x7F) | (data[pos + 1] << 7)
            klen = (v >> 1) ^ -(v & 1)
            pos += 2
        else:
            klen, pos = rv(data, pos, 5)
        key: bytes | None = None
        if klen >= 0:
            key = data[pos : pos + klen]
            pos += klen
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:
            v = (b & 0x7F) | (data[pos + 1] << 7)
            vlen = (v >> 1) ^ -(v & 1)
            pos += 2
        else:
            vlen, pos = rv(data, pos, 5)
        if pos > rec_end:
            raise CorruptBatchError("record fields run past its length")
        starts.append(start)
        bodies.append(body)
        ts_ends.append(ts_end)
        ends.append(rec_end)
        ts_deltas.append(ts_delta)
        offset_deltas.append(off_delta)
        keys.append(key)
        has_value.append(vlen >= 0)
        pos = rec_end
    if pos != end:
        raise CorruptBatchError(f"{end - pos} bytes follow the last of {count} records")
    return out


def keys_and_offset_deltas(data: bytes, count: int) -> tuple[list[bytes | None], list[int]]:
    """Each record's key and offset delta only (the offset map's pass): ``walk`` without the
    positions, timestamps and values. Raises CorruptBatchError."""
    keys: list[bytes | None] = []
    offset_deltas: list[int] = []
    rv = read_varint
    pos, end = 0, len(data)
    for _ in range(count):
        b = data[pos] if pos < end else 0x80
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < end and data[pos + 1] < 0x80:
            v = (b & 0x7F) | (data[pos + 1] << 7)
            length = (v >> 1) ^ -(v & 1)
            pos += 2
        else:
            length, pos = rv(data, pos, 5)
        rec_end = pos + length
        if length < 1 or rec_end > end:
            raise CorruptBatchError(f"record length {length} does not fit the batch")
        pos += 1  # attributes
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:
            pos += 2
        else:
            _, pos = rv(data, pos, 10)
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            off_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:
            v = (b & 0x7F) | (data[pos + 1] << 7)
            off_delta = (v >> 1) ^ -(v & 1)
            pos += 2
        else:
            off_delta, pos = rv(data, pos, 5)
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:
            v = (b & 0x7F) | (data[pos + 1] << 7)
            klen = (v >> 1) ^ -(v & 1)
            pos += 2
        else:
            klen, pos = rv(data, pos, 5)
        if klen >= 0:
            if pos + klen > rec_end:
                raise CorruptBatchError("record fields run past its length")
            keys.append(data[pos : pos + klen])
        else:
            keys.append(None)
        offset_deltas.append(off_delta)
        pos = rec_end
    if pos != end:
        raise CorruptBatchError(f"{end - pos} bytes follow the last of {count} records")
    return keys, offset_deltas


def splice(data: bytes, walked: Walked, kept: list[int], shift: int) -> bytes:
    """The records ``kept`` (indexes) as a records section; ``shift`` is subtracted from
    each timestamp delta (the new base timestamp minus the old)."""
    if shift == 0:
        return b"".join(data[walked.starts[i] : walked.ends[i]] for i in kept)
    parts: list[bytes] = []
    for i in kept:
        body = (
            data[walked.bodies[i] : walked.bodies[i] + 1]
            + encode_varint(walked.ts_deltas[i] - shift)
            + data[walked.ts_ends[i] : walked.ends[i]]
        )
        parts.append(encode_varint(len(body)))
        parts.append(body)
    return b"".join(parts)
