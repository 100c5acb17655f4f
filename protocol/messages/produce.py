"""Produce (key 0), versions 0-12, flexible from 9 (ProduceRequest/Response.json).

v0-2 are described (same layout as v3 without transactional_id) because Kafka 4.0 still
advertises them for old librdkafka; the broker answers them UNSUPPORTED_VERSION.
v13 (topic ids) came after Kafka 4.0 and is not described.
"""

from protocol.schema import INT16, INT32, INT64, RECORDS, STRING, Struct, api, array, f

PRODUCE = api(
    0,
    "Produce",
    "0-12",
    "9+",
    request=(
        f("transactional_id", STRING, "3+", nullable="3+", default=None),
        f("acks", INT16),
        f("timeout_ms", INT32),
        f(
            "topic_data",
            array(
                f("name", STRING),
                f(
                    "partition_data",
                    array(f("index", INT32), f("records", RECORDS, nullable="0+")),
                ),
            ),
        ),
    ),
    response=(
        f(
            "responses",
            array(
                f("name", STRING),
                f(
                    "partition_responses",
                    array(
                        f("index", INT32),
                        f("error_code", INT16),
                        f("base_offset", INT64),
                        f("log_append_time_ms", INT64, "2+", default=-1),
                        f("log_start_offset", INT64, "5+", default=-1),
                        f(
                            "record_errors",
                            array(
                                f("batch_index", INT32, "8+"),
                                f(
                                    "batch_index_error_message",
                                    STRING,
                                    "8+",
                                    nullable="8+",
                                    default=None,
                                ),
                            ),
                            "8+",
                        ),
                        f("error_message", STRING, "8+", nullable="8+", default=None),
                        f(
                            "current_leader",
                            Struct(
                                f("leader_id", INT32, "10+", default=-1),
                                f("leader_epoch", INT32, "10+", default=-1),
                            ),
                            "10+",
                            tag=0,
                        ),
                    ),
                ),
            ),
        ),
        f("throttle_time_ms", INT32, "1+"),
        f(
            "node_endpoints",
            array(
                f("node_id", INT32, "10+"),
                f("host", STRING, "10+"),
                f("port", INT32, "10+"),
                f("rack", STRING, "10+", nullable="10+", default=None),
            ),
            "10+",
            tag=0,
        ),
    ),
)
