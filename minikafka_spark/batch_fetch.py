"""includeProducerMetadata: read one offset range with Fetch requests of our own, so that each
record comes with its batch's producer id, epoch and sequence.

No Kafka client library hands those fields to its application (librdkafka and kafka-python
drop them with the batch header), so this reader speaks the protocol itself with the
project's `protocol` package: Metadata for the partition's leader, then Fetch v12 (the last
version that names topics) at the source's isolation level. Under read_committed it drops
aborted transactions' batches the way Kafka's consumer does (FetchCollector /
CompletedFetch.nextFetchedRecord: aborted producers are taken from the response's
aborted_transactions as their first offset is passed, and released by their ABORT marker).
Control batches are never rows. Only PLAINTEXT listeners are supported on this path.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from minikafka_spark.columns import RowBatchBuilder
from minikafka_spark.offsets import OffsetRange
from minikafka_spark.options import OptionError, SourceOptions
from minikafka_spark.partition_reader import ARROW_BATCH_ROWS, DataLossError, data_loss_message
from protocol import codec
from protocol.header import RequestHeader, decode_response_header, encode_request_header
from protocol.messages.fetch import FETCH
from protocol.messages.metadata import METADATA
from protocol.primitives import Reader
from protocol.records import decode_records, iter_batches
from protocol.schema import Api, Message

FETCH_VERSION = 12
METADATA_VERSION = 12
_OFFSET_OUT_OF_RANGE = 1
_RETRIABLE = {3, 5, 6, 7, 13, 56, 74, 75}  # unknown partition, leader moves, timeouts, epochs
_PARTITION_MAX_BYTES = 4 * 1024 * 1024
_ABORT_MARKER = 0


class _Connection:
    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.ids = itertools.count(1)

    def close(self) -> None:
        self.sock.close()

    def request(self, api: Api, version: int, body: Message) -> Any:
        correlation_id = next(self.ids)
        out = bytearray()
        header = RequestHeader(api.key, version, correlation_id, "minikafka-spark")
        encode_request_header(out, header, api.request_header_version(version))
        out += codec.encode_request(api, version, body)
        self.sock.sendall(struct.pack(">i", len(out)) + out)
        (length,) = struct.unpack(">i", self._read(4))
        reader = Reader(self._read(length))
        if decode_response_header(reader, api.response_header_version(version)) != correlation_id:
            raise ConnectionError("response out of order")
        return codec.decode(api.response, version, api.is_flexible(version), reader)

    def _read(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks += chunk
        return bytes(chunks)


def _check_plaintext(options: SourceOptions) -> None:
    protocol = options.client_params.get("security.protocol", "PLAINTEXT").upper()
    if protocol != "PLAINTEXT":
        raise OptionError(
            f"includeProducerMetadata supports PLAINTEXT listeners only, not {protocol}"
        )


def _leader(options: SourceOptions, rng: OffsetRange, timeout_s: float) -> tuple[str, int]:
    last_error: Exception | None = None
    for server in options.bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            conn = _Connection(host.strip("[]"), int(port), timeout_s)
        except OSError as exc:
            last_error = exc
            continue
        try:
            answer = conn.request(
                METADATA,
                METADATA_VERSION,
                Message(
                    topics=[Message(topic_id=b"\0" * 16, name=rng.topic)],
                    allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False,
                ),
            )
        finally:
            conn.close()
        brokers = {b.node_id: (b.host, b.port) for b in answer.brokers}
        for topic in answer.topics:
            for partition in topic.partitions:
                if partition.partition_index == rng.partition and partition.leader_id in brokers:
                    return brokers[partition.leader_id]
        last_error = RuntimeError(f"no leader for {rng.topic}-{rng.partition}")
    raise RuntimeError(f"cannot find the leader of {rng.topic}-{rng.partition}: {last_error}")


def read_range_with_producer_metadata(
    options: SourceOptions, rng: OffsetRange
) -> Iterator[pa.RecordBatch]:
    _check_plaintext(options)
    timeout_s = options.poll_timeout_ms / 1000
    builder = RowBatchBuilder(options.include_headers, include_producer_metadata=True)
    isolation = 1 if options.read_committed else 0
    group_id = f"{options.group_id_prefix}-producer-metadata"
    next_offset = rng.from_offset
    aborted: list[tuple[int, int]] = []  # (first_offset, producer_id) not yet reached
    aborted_producers: set[int] = set()
    deadline = time.monotonic() + timeout_s
    conn: _Connection | None = None
    try:
        while next_offset < rng.until_offset:
            if conn is None:
                conn = _Connection(*_leader(options, rng, timeout_s), timeout_s)
            answer = conn.request(FETCH, FETCH_VERSION, _fetch_request(rng, next_offset, isolation))
            partition = answer.responses[0].partitions[0]
            if partition.error_code == _OFFSET_OUT_OF_RANGE:
                earliest = partition.log_start_offset
                if next_offset >= earliest >= 0:
                    raise RuntimeError(f"offset {next_offset} is past the end of {rng.topic}")
                if options.fail_on_data_loss:
                    raise DataLossError(
                        data_loss_message(rng, next_offset, rng.until_offset, group_id)
                    )
                next_offset = earliest if earliest >= 0 else rng.until_offset
                continue
            if partition.error_code in _RETRIABLE:
                conn.close()
                conn = None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Fetch kept failing with error {partition.error_code}")
                continue
            if partition.error_code != 0:
                raise RuntimeError(
                    f"Fetch of {rng.topic}-{rng.partition} failed: error {partition.error_code}"
                )
            for txn in partition.aborted_transactions or ():
                aborted.append((txn.first_offset, txn.producer_id))
            aborted.sort()
            moved = _append_batches(
                builder,
                rng,
                bytes(partition.records or b""),
                next_offset,
                aborted,
                aborted_producers,
            )
            if moved > next_offset:
                next_offset = moved
                deadline = time.monotonic() + timeout_s
            elif _end_reached(partition, next_offset, isolation, rng):
                next_offset = rng.until_offset
            elif time.monotonic() > deadline:
                raise TimeoutError(
                    f"Cannot fetch record for offset {next_offset} of {rng.topic}-"
                    f"{rng.partition} in {options.poll_timeout_ms} milliseconds"
                )
            if len(builder) >= ARROW_BATCH_ROWS:
                yield builder.take()
    finally:
        if conn is not None:
            conn.close()
    if len(builder):
        yield builder.take()


def _end_reached(partition: Any, offset: int, isolation: int, rng: OffsetRange) -> bool:
    end = partition.last_stable_offset if isolation == 1 else partition.high_watermark
    return bool(end >= rng.until_offset and offset >= end)


def _fetch_request(rng: OffsetRange, offset: int, isolation: int) -> Message:
    return Message(
        cluster_id=None,
        replica_id=-1,
        replica_state=Message(replica_id=-1, replica_epoch=-1),
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=_PARTITION_MAX_BYTES,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=[
            Message(
                topic=rng.topic,
                topic_id=b"\0" * 16,
                partitions=[
                    Message(
                        partition=rng.partition,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=_PARTITION_MAX_BYTES,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def _append_batches(
    builder: RowBatchBuilder,
    rng: OffsetRange,
    records: bytes,
    next_offset: int,
    aborted: list[tuple[int, int]],
    aborted_producers: set[int],
) -> int:
    """Adds the visible records of a Fetch answer; returns the next offset to fetch."""
    for pos, header in iter_batches(records):
        if header.next_offset <= next_offset:
            continue  # a batch the answer starts with, read before
        if header.base_offset >= rng.until_offset:
            return rng.until_offset
        while aborted and aborted[0][0] <= header.last_offset:
            aborted_producers.add(aborted.pop(0)[1])
        if header.is_control:
            raw = records[pos : pos + header.size]
            key = decode_records(raw, header)[0].key
            if (
                key is not None
                and len(key) >= 4
                and struct.unpack(">h", key[2:4])[0] == _ABORT_MARKER
            ):
                aborted_producers.discard(header.producer_id)
            next_offset = header.next_offset
            continue
        if header.is_transactional and header.producer_id in aborted_producers:
            next_offset = header.next_offset
            continue
        raw = records[pos : pos + header.size]
        for record in decode_records(raw, header):
            offset = header.base_offset + record.offset_delta
            if offset < next_offset or offset >= rng.until_offset:
                continue
            if header.log_append_time:
                stamp, kind = header.max_timestamp, 1
            else:
                stamp, kind = header.base_timestamp + record.timestamp_delta, 0
            sequence = (
                (header.base_sequence + record.offset_delta) & 0x7FFFFFFF
                if header.base_sequence >= 0
                else -1
            )
            builder.add(
                record.key,
                record.value,
                rng.topic,
                rng.partition,
                offset,
                stamp,
                kind,
                record.headers,
                (header.producer_id, header.producer_epoch, sequence),
            )
        next_offset = min(header.next_offset, rng.until_offset)
    return next_offset
