"""storage.record_rules: LogValidator's per-record rules and rewrites, called directly."""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.records import (
    Record,
    build_batch,
    compute_crc,
    parse_header,
    scan_records,
    write_crc,
)
from storage.record_rules import TopicRules, check_records, rewrite_batch

NOW = 1_800_000_000_000
LONG_MAX = 2**63 - 1
RULES = TopicRules("t-0", False, False, LONG_MAX, 3_600_000)


def _batch(deltas: list[int], base: int = NOW, codec: int = 0) -> bytearray:
    records = [Record(i, d, b"k", b"v", ()) for i, d in enumerate(deltas)]
    return bytearray(build_batch(records, base_timestamp=base, codec=codec))


def test_depth_header_reads_records_only_when_the_header_is_out_of_bounds() -> None:
    batch = _batch([0, 5])
    header = parse_header(batch)
    verdict = check_records(batch, header, None, RULES, NOW)
    assert verdict.error == ErrorCode.NONE and verdict.max_timestamp is None
    future = _batch([0, 2 * 3_600_000])
    verdict = check_records(future, parse_header(future), None, RULES, NOW)
    assert verdict.error == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in verdict.record_errors] == [1]


def test_timestamp_arithmetic_wraps_as_java_longs() -> None:
    # base + delta overflows: Kafka's long wraps to a very negative timestamp; now - ts
    # overflows too and reads as far "ahead", so after.max.ms refuses it.
    batch = _batch([0, 10], base=0)
    batch[27:35] = (LONG_MAX - 5).to_bytes(8, "big")
    write_crc(batch)
    header = parse_header(batch)
    scan = scan_records(bytes(batch[61:]), 2)
    verdict = check_records(batch, header, scan, RULES, NOW)
    assert verdict.error == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in verdict.record_errors] == [0, 1]
    assert str(-(2**63) + 4) in verdict.record_errors[1][1]


def test_accepted_batch_gets_the_largest_record_timestamp_and_a_fresh_crc() -> None:
    batch = _batch([3, 9, 1])
    batch[35:43] = (NOW).to_bytes(8, "big")  # a producer's wrong max_timestamp
    header = parse_header(batch)
    scan = scan_records(bytes(batch[61:]), 3)
    verdict = check_records(batch, header, scan, RULES, NOW + 100)
    out, new_header = rewrite_batch(batch, header, scan, verdict, RULES, NOW + 100)
    assert new_header.max_timestamp == NOW + 9 and new_header.crc == compute_crc(out)


def test_log_append_time_topic_stamps_the_clock() -> None:
    rules = TopicRules("t-0", False, True, LONG_MAX, 3_600_000)
    batch = _batch([0, 1])
    header = parse_header(batch)
    verdict = check_records(batch, header, None, rules, NOW)
    out, new_header = rewrite_batch(batch, header, None, verdict, rules, NOW + 7)
    assert new_header.log_append_time and new_header.max_timestamp == NOW + 7
    assert new_header.crc == compute_crc(out)
