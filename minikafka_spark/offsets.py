"""Offset specifications and their resolution against the cluster, as Spark's Kafka connector.

Spark's JSON forms (JsonUtils): `assign` is `{"topic":[0,1]}`; offsets are
`{"topic":{"0":23,"1":-2}}` where -2 means earliest and -1 latest; timestamps are
`{"topic":{"0":1700000000000}}`. KafkaOffsetReaderAdmin resolves them with Admin.listOffsets
(earliest, latest at the consumer's isolation level, offsets for timestamps); KafkaSourceOffset
is what the checkpoint holds, `{"topic":{"0":123}}`, and is what the stream reader's offsets
look like here too.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from minikafka_spark.options import OptionError, SourceOptions

EARLIEST = -2
LATEST = -1
TopicPartitionKey = tuple[str, int]
PartitionOffsets = dict[TopicPartitionKey, int]
_ADMIN_TIMEOUT_S = 30.0


def parse_assign(raw: str) -> list[TopicPartitionKey]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError(f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {raw}') from exc
    if not isinstance(value, dict) or not value:
        raise OptionError(f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {raw}')
    result: list[TopicPartitionKey] = []
    for topic, partitions in value.items():
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in partitions
        ):
            raise OptionError(f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {raw}')
        result.extend((topic, p) for p in partitions)
    return result


def parse_partition_numbers(raw: str, what: str) -> PartitionOffsets:
    """`{"topic":{"0":n}}` -> {(topic, 0): n}."""
    example = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError(f"Expected e.g. {example} for {what}, got {raw}") from exc
    if not isinstance(value, dict):
        raise OptionError(f"Expected e.g. {example} for {what}, got {raw}")
    result: PartitionOffsets = {}
    for topic, partitions in value.items():
        if not isinstance(partitions, dict):
            raise OptionError(f"Expected e.g. {example} for {what}, got {raw}")
        for partition, number in partitions.items():
            if not isinstance(number, int) or isinstance(number, bool):
                raise OptionError(f"Expected e.g. {example} for {what}, got {raw}")
            try:
                result[(topic, int(partition))] = number
            except ValueError as exc:
                raise OptionError(f"Expected e.g. {example} for {what}, got {raw}") from exc
    return result


def to_json_dict(offsets: Mapping[TopicPartitionKey, int]) -> dict[str, dict[str, int]]:
    """KafkaSourceOffset's JSON shape, partitions in order (JsonUtils.partitionOffsets)."""
    result: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(partition)] = offset
    return result


def from_json_dict(value: Mapping[str, Mapping[str, int]]) -> PartitionOffsets:
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in value.items()
        for partition, offset in partitions.items()
    }


@dataclass(frozen=True)
class OffsetRange:
    """What one Spark task reads: [from_offset, until_offset) of one partition
    (Spark's KafkaOffsetRange)."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return max(0, self.until_offset - self.from_offset)


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Spark's KafkaOffsetRangeCalculator.getRanges: empty ranges dropped; with minPartitions
    above the number of ranges, large ranges are cut into about size / total * minPartitions
    consecutive pieces (ranges whose share rounds to one piece stay whole and are left out of
    the proportion), so a task reads a piece of a partition instead of all of it."""
    kept = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(kept) >= min_partitions:
        return kept

    def part_count(size: int, total: int, parts: int) -> int:
        # Java's Math.round: half rounds up (Python's round would go to the even number).
        return max(math.floor(size / total * parts + 0.5), 1)

    total = sum(r.size for r in kept)
    unsplit = [r for r in kept if part_count(r.size, total, min_partitions) == 1]
    split_total = total - sum(r.size for r in unsplit)
    split_min = max(min_partitions - len(unsplit), 1)
    result: list[OffsetRange] = []
    for r in kept:
        parts = 1 if r in unsplit else part_count(r.size, split_total, split_min)
        remaining, start = r.size, r.from_offset
        for part in range(parts):
            # Integer division; the last piece takes what rounding left over.
            piece = remaining // (parts - part)
            remaining -= piece
            end = min(start + piece, r.until_offset)
            result.append(OffsetRange(r.topic, r.partition, start, end))
            start = end
    return [r for r in result if r.size > 0]


class OffsetResolver:
    """Driver-side look-ups through one Admin client (Spark's KafkaOffsetReaderAdmin)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        config: dict[str, str | int | float | bool] = {
            "bootstrap.servers": options.bootstrap_servers,
            "client.id": f"{options.group_id_prefix}-{uuid.uuid4()}-driver",
        }
        config.update(_admin_params(options.client_params))
        self.admin = AdminClient(config)
        self.isolation = (
            IsolationLevel.READ_COMMITTED
            if options.read_committed
            else IsolationLevel.READ_UNCOMMITTED
        )

    def partitions(self) -> list[TopicPartitionKey]:
        subscription = self.options.subscription
        if subscription.kind == "assign":
            return sorted(subscription.assigned)
        metadata = self.admin.list_topics(timeout=_ADMIN_TIMEOUT_S)
        found: list[TopicPartitionKey] = []
        for name, topic in metadata.topics.items():
            if topic.error is not None or not subscription.matches(name):
                continue
            found.extend((name, p) for p in topic.partitions)
        return sorted(found)

    def _list(self, specs: Mapping[TopicPartitionKey, OffsetSpec]) -> PartitionOffsets:
        if not specs:
            return {}
        request = {TopicPartition(t, p): spec for (t, p), spec in specs.items()}
        futures = self.admin.list_offsets(
            request, isolation_level=self.isolation, request_timeout=_ADMIN_TIMEOUT_S
        )
        result: PartitionOffsets = {}
        for tp, future in futures.items():
            try:
                result[(tp.topic, tp.partition)] = future.result().offset
            except KafkaException as exc:
                raise RuntimeError(
                    f"ListOffsets failed for {tp.topic}-{tp.partition}: {exc}"
                ) from exc
        return result

    def earliest(self, partitions: Iterable[TopicPartitionKey]) -> PartitionOffsets:
        return self._list({tp: OffsetSpec.earliest() for tp in partitions})  # type: ignore[no-untyped-call]

    def latest(self, partitions: Iterable[TopicPartitionKey]) -> PartitionOffsets:
        # At the consumer's isolation level: read_committed gets the last stable offset, as
        # KafkaOffsetReaderAdmin's listOffsets with the configured isolation level.
        return self._list({tp: OffsetSpec.latest() for tp in partitions})  # type: ignore[no-untyped-call]

    def for_timestamps(self, timestamps: Mapping[TopicPartitionKey, int]) -> PartitionOffsets:
        """-1 where no record has a timestamp at or after the one asked for."""
        return self._list({tp: OffsetSpec.for_timestamp(ts) for tp, ts in timestamps.items()})

    # -- the starting and ending points Spark's options describe ----------------------------

    def starting(self, partitions: list[TopicPartitionKey], default: int) -> PartitionOffsets:
        o = self.options
        if o.starting_timestamp is not None:
            stamps = dict.fromkeys(
                partitions, _timestamp(o.starting_timestamp, "startingTimestamp")
            )
            return self._by_timestamp(stamps, strict=o.starting_timestamp_strategy == "error")
        if o.starting_by_timestamp is not None:
            stamps = parse_partition_numbers(o.starting_by_timestamp, "startingOffsetsByTimestamp")
            _require_all(stamps, partitions, "startingOffsetsByTimestamp")
            return self._by_timestamp(stamps, strict=o.starting_timestamp_strategy == "error")
        return self._specified(o.starting, partitions, default, "startingOffsets")

    def ending(self, partitions: list[TopicPartitionKey]) -> PartitionOffsets:
        o = self.options
        if o.ending_timestamp is not None:
            stamps = dict.fromkeys(partitions, _timestamp(o.ending_timestamp, "endingTimestamp"))
            return self._by_timestamp(stamps, strict=False)
        if o.ending_by_timestamp is not None:
            stamps = parse_partition_numbers(o.ending_by_timestamp, "endingOffsetsByTimestamp")
            _require_all(stamps, partitions, "endingOffsetsByTimestamp")
            return self._by_timestamp(stamps, strict=False)
        return self._specified(o.ending, partitions, LATEST, "endingOffsets")

    def _specified(
        self, raw: str | None, partitions: list[TopicPartitionKey], default: int, what: str
    ) -> PartitionOffsets:
        keyword = (raw or "").strip().lower()
        if raw is None or keyword in ("earliest", "latest"):
            wanted = default if raw is None else (EARLIEST if keyword == "earliest" else LATEST)
            return self.earliest(partitions) if wanted == EARLIEST else self.latest(partitions)
        offsets = parse_partition_numbers(raw, what)
        _require_all(offsets, partitions, what)
        earliest = self.earliest(tp for tp, o in offsets.items() if o == EARLIEST)
        latest = self.latest(tp for tp, o in offsets.items() if o == LATEST)
        return {tp: earliest.get(tp, latest.get(tp, o)) for tp, o in offsets.items()}

    def _by_timestamp(
        self, stamps: Mapping[TopicPartitionKey, int], strict: bool
    ) -> PartitionOffsets:
        found = self.for_timestamps(stamps)
        missing = [tp for tp, offset in found.items() if offset < 0]
        if missing and strict:
            # startingOffsetsByTimestampStrategy=error (Spark's default): fail the query.
            raise RuntimeError(
                "No offset matched from request of topic-partition "
                f"{missing[0][0]}-{missing[0][1]} and timestamp {stamps[missing[0]]}."
            )
        latest = self.latest(missing)
        return {tp: (offset if offset >= 0 else latest[tp]) for tp, offset in found.items()}


def _timestamp(raw: str, what: str) -> int:
    try:
        return int(raw)
    except ValueError as exc:
        raise OptionError(f"{what} must be a number of milliseconds, got '{raw}'") from exc


def _require_all(
    given: Mapping[TopicPartitionKey, int], partitions: list[TopicPartitionKey], what: str
) -> None:
    # KafkaOffsetReaderAdmin.fetchSpecificOffsets0's assertion.
    if set(given) != set(partitions):
        raise OptionError(
            f"If {what} contains specific offsets, you must specify all TopicPartitions.\n"
            f"Use -1 for latest, -2 for earliest.\n"
            f"Specified: {sorted(given)} Assigned: {sorted(partitions)}"
        )


def _admin_params(params: Mapping[str, str]) -> dict[str, str]:
    # Consumer-only settings make librdkafka's Admin client warn or fail; only connection and
    # security settings apply to it.
    consumer_only = {
        "group.id",
        "isolation.level",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "max.partition.fetch.bytes",
        "fetch.wait.max.ms",
        "session.timeout.ms",
    }
    return {k: v for k, v in params.items() if k not in consumer_only}


def rate_limit(
    start: Mapping[TopicPartitionKey, int], end: Mapping[TopicPartitionKey, int], limit: int
) -> PartitionOffsets:
    """At most `limit` offsets in all, shared in proportion to each partition's backlog
    (KafkaMicroBatchStream.rateLimit): a share below 1 rounds up so that a small partition
    still moves, others round down."""
    sizes = {tp: end[tp] - start.get(tp, end[tp]) for tp in end}
    total = sum(size for size in sizes.values() if size > 0)
    if total <= limit:
        return dict(end)
    result: PartitionOffsets = {}
    for tp, until in end.items():
        begin = start.get(tp)
        if begin is None or sizes[tp] <= 0:
            result[tp] = until
            continue
        share = limit * (sizes[tp] / total)
        step = math.ceil(share) if share < 1 else math.floor(share)
        result[tp] = min(until, begin + step)
    return result
