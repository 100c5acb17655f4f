"""Fetch (key 1), versions 4-17, flexible from 12 (FetchRequest/Response.json).

Kafka 4.0 serves 4-17 (KIP-896 removed 0-3); v13+ names topics by id.
"""

from protocol.schema import (
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UUID,
    Array,
    Struct,
    api,
    array,
    f,
)

FETCH = api(
    1,
    "Fetch",
    "4-17",
    "12+",
    request=(
        f("cluster_id", STRING, "12+", nullable="12+", tag=0, default=None),
        f("replica_id", INT32, "0-14", default=-1),
        f(
            "replica_state",
            Struct(
                f("replica_id", INT32, "15+", default=-1),
                f("replica_epoch", INT64, "15+", default=-1),
            ),
            "15+",
            tag=1,
        ),
        f("max_wait_ms", INT32),
        f("min_bytes", INT32),
        f("max_bytes", INT32, "3+", default=0x7FFFFFFF),
        f("isolation_level", INT8, "4+"),
        f("session_id", INT32, "7+"),
        f("session_epoch", INT32, "7+", default=-1),
        f(
            "topics",
            array(
                f("topic", STRING, "0-12"),
                f("topic_id", UUID, "13+"),
                f(
                    "partitions",
                    array(
                        f("partition", INT32),
                        f("current_leader_epoch", INT32, "9+", default=-1),
                        f("fetch_offset", INT64),
                        f("last_fetched_epoch", INT32, "12+", default=-1),
                        f("log_start_offset", INT64, "5+", default=-1),
                        f("partition_max_bytes", INT32),
                        f("replica_directory_id", UUID, "17+", tag=0),
                    ),
                ),
            ),
        ),
        f(
            "forgotten_topics_data",
            array(
                f("topic", STRING, "7-12"),
                f("topic_id", UUID, "13+"),
                f("partitions", Array(INT32), "7+"),
            ),
            "7+",
        ),
        f("rack_id", STRING, "11+"),
    ),
    response=(
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16, "7+"),
        f("session_id", INT32, "7+"),
        f(
            "responses",
            array(
                f("topic", STRING, "0-12"),
                f("topic_id", UUID, "13+"),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("error_code", INT16),
                        f("high_watermark", INT64),
                        f("last_stable_offset", INT64, "4+", default=-1),
                        f("log_start_offset", INT64, "5+", default=-1),
                        f(
                            "diverging_epoch",
                            Struct(
                                f("epoch", INT32, "12+", default=-1),
                                f("end_offset", INT64, "12+", default=-1),
                            ),
                            "12+",
                            tag=0,
                        ),
                        f(
                            "current_leader",
                            Struct(
                                f("leader_id", INT32, "12+", default=-1),
                                f("leader_epoch", INT32, "12+", default=-1),
                            ),
                            "12+",
                            tag=1,
                        ),
                        f(
                            "snapshot_id",
                            Struct(
                                f("end_offset", INT64, default=-1), f("epoch", INT32, default=-1)
                            ),
                            "12+",
                            tag=2,
                        ),
                        f(
                            "aborted_transactions",
                            array(f("producer_id", INT64, "4+"), f("first_offset", INT64, "4+")),
                            "4+",
                            nullable="4+",
                        ),
                        f("preferred_read_replica", INT32, "11+", default=-1),
                        f("records", RECORDS, nullable="0+"),
                    ),
                ),
            ),
        ),
        f(
            "node_endpoints",
            array(
                f("node_id", INT32, "16+"),
                f("host", STRING, "16+"),
                f("port", INT32, "16+"),
                f("rack", STRING, "16+", nullable="16+", default=None),
            ),
            "16+",
            tag=0,
        ),
    ),
)
