"""`minikafka dump`: print what is stored in partition directories, batch by batch.

    minikafka dump <data-dir | partition-dir> [--records]

A partition directory holds segment files named by the 20-digit offset of their first batch
(`00000000000000000000.log`, as Kafka names them); a data directory holds partition
directories. Segment files are plain RecordBatch v2 wire bytes, so this tool reads them
directly instead of through storage/: it must work on a directory storage refuses to open
(after a crash, a torn write, a bug), and it reports damage instead of repairing it.

Control batches are named (COMMIT/ABORT with the producer id, epoch and coordinator
epoch), and after the segments each partition lists its open transactions: producers whose
transactional batches no marker has closed yet, with the first offset that pins the last
stable offset (what `kafka-transactions.sh find-hanging` looks for).

Exit status: 0 when everything read back cleanly, 1 when something was wrong (bad CRC,
corrupt header, trailing partial batch, undecodable records, no partitions), 2 on a bad
path.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from protocol.compression import codec_name
from protocol.records import (
    HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    crc_ok,
    decode_records,
    iter_batches,
    parse_header,
)
from storage.segment import LOG_SUFFIX, parse_file_name

_SHOW_CHARS = 80


def segment_files(partition_dir: str | Path) -> list[Path]:
    """The `<20-digit offset>.log` files of a partition directory, in offset order."""
    found = []
    for path in Path(partition_dir).iterdir():
        base = parse_file_name(path.name, LOG_SUFFIX)
        if base is not None and path.is_file():
            found.append((base, path))
    return [path for _, path in sorted(found)]


def is_partition_dir(path: str | Path) -> bool:
    p = Path(path)
    return p.is_dir() and bool(segment_files(p))


def find_partition_dirs(path: str | Path) -> list[Path]:
    """``path`` itself if it is a partition directory, else its partition subdirectories."""
    p = Path(path)
    if is_partition_dir(p):
        return [p]
    return sorted(child for child in p.iterdir() if is_partition_dir(child))


@dataclass(frozen=True, slots=True)
class _Batch:
    position: int
    header: BatchHeader
    data: bytes


@dataclass(frozen=True, slots=True)
class _Damage:
    """Bytes at the end of a segment that are not a whole, parseable batch."""

    position: int
    message: str
    corrupt: bool  # False: merely a torn write at the end, which recovery truncates


def _scan_segment(data: bytes) -> Iterator[_Batch | _Damage]:
    pos = 0
    try:
        for pos, header in iter_batches(data):
            yield _Batch(pos, header, data[pos : pos + header.size])
            pos += header.size
    except CorruptBatchError as exc:
        yield _Damage(pos, f"corrupt batch header ({exc}); {len(data) - pos} bytes not read", True)
        return
    rest = len(data) - pos
    if rest == 0:
        return
    if rest < HEADER_SIZE:
        yield _Damage(pos, f"trailing partial batch header: {rest} bytes", False)
        return
    try:
        header = parse_header(data, pos)
    except CorruptBatchError as exc:
        yield _Damage(pos, f"corrupt batch header ({exc}); {rest} bytes not read", True)
        return
    yield _Damage(pos, f"trailing partial batch: {rest} of {header.size} bytes", False)


def iter_partition_batches(partition_dir: str | Path) -> Iterator[tuple[BatchHeader, bytes]]:
    """Every whole batch of every segment, in offset order, as (header, batch bytes).

    A trailing partial batch (a torn write) is skipped, as recovery would truncate it; a
    header that cannot be a batch raises CorruptBatchError.
    """
    for path in segment_files(partition_dir):
        for item in _scan_segment(path.read_bytes()):
            if isinstance(item, _Batch):
                yield item.header, item.data
            elif item.corrupt:
                raise CorruptBatchError(f"{path} at {item.position}: {item.message}")


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOW_CHARS else text[: _SHOW_CHARS - 3] + "..."


def _ts(millis: int) -> str:
    """Epoch millis as stored, and as people read them (ISO 8601, UTC)."""
    if millis < 0:
        return f"{millis} (none)"  # RecordBatch.NO_TIMESTAMP
    try:
        when = datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return f"{millis} (out of range)"
    return f"{millis} ({when.isoformat(timespec='milliseconds').replace('+00:00', 'Z')})"


def _batch_line(h: BatchHeader, good_crc: bool) -> str:
    seq = f"{h.base_sequence}..{h.last_sequence}" if h.base_sequence >= 0 else "-"
    flags = "".join(
        flag
        for flag, on in (
            (" txn", h.is_transactional),
            (" control", h.is_control),
            (" log-append-time", h.log_append_time),
        )
        if on
    )
    return (
        f"offset {h.base_offset}..{h.last_offset} pid {h.producer_id} epoch {h.producer_epoch}"
        f" seq {seq} codec {codec_name(h.compression)} count {h.records_count}"
        f" ts {_ts(h.base_timestamp)}..{_ts(h.max_timestamp)} size {h.size}"
        f" crc {'ok' if good_crc else 'BAD'}{flags}"
    )


# ControlRecordType: key int16 version + int16 type; EndTransactionMarker value: int16
# version + int32 coordinator epoch.
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}


def _control_line(batch: _Batch) -> str:
    h = batch.header
    try:
        (record,) = decode_records(batch.data, h)
        assert record.key is not None and record.value is not None
        kind = int.from_bytes(record.key[2:4], "big", signed=True)
        coordinator_epoch = int.from_bytes(record.value[2:6], "big", signed=True)
    except (CorruptBatchError, ValueError, AssertionError):
        return "control record not decodable"
    name = _CONTROL_TYPES.get(kind, f"control type {kind}")
    return (
        f"{name} pid {h.producer_id} epoch {h.producer_epoch} coordinator epoch {coordinator_epoch}"
    )


def _track_txn(open_txns: dict[int, int], h: BatchHeader) -> None:
    """ProducerAppendInfo: a transactional batch opens the producer's transaction (first
    offset kept), a marker closes it."""
    if not h.is_transactional:
        return
    if h.is_control:
        open_txns.pop(h.producer_id, None)
    else:
        open_txns.setdefault(h.producer_id, h.base_offset)


def _print_records(batch: _Batch, out: TextIO) -> bool:
    h = batch.header
    try:
        records = decode_records(batch.data, h)
    except CorruptBatchError as exc:
        print(f"      records not decodable: {exc}", file=out)
        return False
    for r in records:
        print(
            f"      offset {h.base_offset + r.offset_delta}"
            f" ts {_ts(h.base_timestamp + r.timestamp_delta)}"
            f" key {_show(r.key)} value {_show(r.value)} headers {_show(list(r.headers))}",
            file=out,
        )
    return True


def dump_partition(partition_dir: Path, *, records: bool, out: TextIO) -> bool:
    """Print one partition; return True when everything read back cleanly."""
    clean = True
    open_txns: dict[int, int] = {}
    print(f"partition {partition_dir.name} ({partition_dir})", file=out)
    for path in segment_files(partition_dir):
        data = path.read_bytes()
        print(f"  segment {path.name} ({len(data)} bytes)", file=out)
        for item in _scan_segment(data):
            if isinstance(item, _Damage):
                print(f"    at {item.position}: {item.message}", file=out)
                clean = False
                continue
            good = crc_ok(item.data, item.header)
            clean = clean and good
            print(f"    {_batch_line(item.header, good)}", file=out)
            _track_txn(open_txns, item.header)
            if item.header.is_control:
                print(f"      {_control_line(item)}", file=out)
            elif records:
                clean = _print_records(item, out) and clean
    if open_txns:
        listed = ", ".join(f"pid {p} since offset {o}" for p, o in sorted(open_txns.items()))
        print(f"  open transactions: {listed}", file=out)
    return clean


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="minikafka dump",
        description="Print the record batches stored in a data or partition directory.",
    )
    parser.add_argument("path", type=Path, help="data directory or partition directory")
    parser.add_argument("--records", action="store_true", help="also print every record")
    args = parser.parse_args(argv)
    path: Path = args.path
    if not path.is_dir():
        print(f"minikafka dump: {path} is not a directory", file=sys.stderr)
        return 2
    partitions = find_partition_dirs(path)
    if not partitions:
        print(f"minikafka dump: no partition directories in {path}", file=sys.stderr)
        return 1
    clean = True
    try:
        for partition_dir in partitions:
            clean = dump_partition(partition_dir, records=args.records, out=sys.stdout) and clean
        sys.stdout.flush()
    except BrokenPipeError:
        # `minikafka dump DIR | head`: the reader has what it wanted. Point stdout at
        # /dev/null so the interpreter's final flush does not fail again, and exit quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
