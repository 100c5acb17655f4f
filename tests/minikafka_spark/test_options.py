"""Option parsing and offset arithmetic of the Spark data source, without Spark: Spark's
Kafka connector's names, defaults and refusals (KafkaSourceProvider), and its rate limit
(KafkaMicroBatchStream.rateLimit)."""

from __future__ import annotations

import pytest

from minikafka_spark.offsets import (
    OffsetRange,
    parse_assign,
    parse_partition_numbers,
    rate_limit,
    split_ranges,
)
from minikafka_spark.options import OptionError, sink_options, source_options

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_exactly_one_subscription_strategy_is_required() -> None:
    with pytest.raises(OptionError, match="subscribe, subscribePattern, assign"):
        source_options(BASE, streaming=False)
    # Spark's words, with its lower-case option keys.
    with pytest.raises(
        OptionError, match="Only one of the following options can be specified for Kafka source"
    ):
        source_options({**BASE, "subscribe": "a", "subscribePattern": "a.*"}, streaming=False)


def test_option_names_are_case_insensitive_but_kafka_settings_keep_their_case() -> None:
    o = source_options(
        {
            **BASE,
            "SUBSCRIBE": "a,b",
            "failondataloss": "false",
            "kafka.isolation.level": "read_committed",
        },
        streaming=True,
    )
    assert o.subscription.topics == ("a", "b")
    assert o.fail_on_data_loss is False
    assert o.read_committed
    assert o.client_params == {"isolation.level": "read_committed"}


def test_defaults_are_spark_s() -> None:
    o = source_options({**BASE, "subscribe": "a"}, streaming=False)
    assert (o.fail_on_data_loss, o.include_headers, o.include_producer_metadata) == (
        True,
        False,
        False,
    )
    assert o.group_id_prefix == "spark-kafka-relation"
    assert source_options({**BASE, "subscribe": "a"}, True).group_id_prefix == (
        "spark-kafka-source"
    )
    assert o.consumer_config("executor")["enable.auto.commit"] is False


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"startingOffsets": "latest"}, False, "starting offset can't be latest"),
        ({"endingOffsets": "earliest"}, False, "ending offset can't be earliest"),
        ({"endingOffsets": "latest"}, True, "Ending offset not valid in streaming"),
        ({"kafka.auto.offset.reset": "earliest"}, False, "auto.offset.reset"),
        ({"kafka.enable.auto.commit": "true"}, False, "enable.auto.commit"),
        ({"kafka.value.deserializer": "x"}, False, "value.deserializer"),
        ({"maxOffsetsPerTrigger": "0"}, True, "must be a positive integer"),
        ({"failOnDataLoss": "maybe"}, True, "must be true or false"),
        ({"minPartitions": "0"}, False, "minPartitions must be positive"),
        ({"minPartitions": "many"}, True, "minPartitions"),
    ],
)
def test_source_refuses_what_spark_refuses(
    options: dict[str, str], streaming: bool, message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        source_options({**BASE, "subscribe": "a", **options}, streaming)


def test_bootstrap_servers_are_required() -> None:
    with pytest.raises(OptionError, match=r"kafka\.bootstrap\.servers"):
        source_options({"subscribe": "a"}, streaming=False)
    with pytest.raises(OptionError, match=r"kafka\.bootstrap\.servers"):
        sink_options({"topic": "a"})


def test_subscribe_pattern_matches_whole_topic_names_as_java_s_matcher() -> None:
    sub = source_options({**BASE, "subscribePattern": "events-.*"}, False).subscription
    assert sub.matches("events-1")
    assert not sub.matches("old-events-1")


def test_json_forms_of_assign_and_offsets() -> None:
    assert parse_assign('{"a":[0,1],"b":[2]}') == [("a", 0), ("a", 1), ("b", 2)]
    assert parse_partition_numbers('{"a":{"0":23,"1":-2}}', "startingOffsets") == {
        ("a", 0): 23,
        ("a", 1): -2,
    }
    for bad in ("[1]", '{"a":{"x":1}}', '{"a":{"0":"1"}}', "not json"):
        with pytest.raises(OptionError):
            parse_partition_numbers(bad, "startingOffsets")


def test_sink_is_idempotent_unless_told_otherwise_and_exactly_once_needs_no_fixed_id() -> None:
    o = sink_options({**BASE, "topic": "t"})
    config = o.producer_config()
    assert (config["enable.idempotence"], config["acks"]) == (True, "all")
    assert not o.exactly_once
    with pytest.raises(OptionError, match=r"transactional\.id"):
        sink_options({**BASE, "exactlyOnce": "true", "kafka.transactional.id": "x"})


def test_rate_limit_shares_the_limit_in_proportion_to_each_backlog() -> None:
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 100}
    end = {("t", 0): 900, ("t", 1): 100, ("t", 2): 100}
    assert rate_limit(start, end, 100) == {("t", 0): 90, ("t", 1): 10, ("t", 2): 100}
    # A share below one offset rounds up so that a small backlog still moves.
    assert rate_limit({("t", 0): 0, ("t", 1): 0}, {("t", 0): 10_000, ("t", 1): 1}, 10) == {
        ("t", 0): 9,
        ("t", 1): 1,
    }
    assert rate_limit(start, end, 10_000) == end


def test_min_partitions_splits_as_spark_s_offset_range_calculator() -> None:
    a, b, c = OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 0, 50), OffsetRange("t", 2, 7, 7)
    assert split_ranges([a, b, c], None) == [a, b]  # empty ranges dropped
    assert split_ranges([a, b], 2) == [a, b]
    # KafkaOffsetRangeCalculatorSuite's case: 100 and 50 offsets in 3 tasks, 2 + 1.
    assert split_ranges([a, b], 3) == [
        OffsetRange("t", 0, 0, 50),
        OffsetRange("t", 0, 50, 100),
        b,
    ]
    # The last piece takes what integer division left over.
    assert split_ranges([OffsetRange("t", 0, 0, 10)], 3) == [
        OffsetRange("t", 0, 0, 3),
        OffsetRange("t", 0, 3, 6),
        OffsetRange("t", 0, 6, 10),
    ]
    # A share of 2.5 pieces rounds up, as Java's Math.round (Python's round gives 2).
    halves = split_ranges([OffsetRange("t", 0, 0, 50), OffsetRange("t", 1, 0, 50)], 5)
    assert [(r.partition, r.from_offset, r.until_offset) for r in halves] == [
        (0, 0, 16),
        (0, 16, 33),
        (0, 33, 50),
        (1, 0, 16),
        (1, 16, 33),
        (1, 33, 50),
    ]
