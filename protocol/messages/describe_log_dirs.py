"""DescribeLogDirs (key 35), versions 1-4, flexible from 2 (DescribeLogDirsRequest/Response).

Kafka 4.0 serves 1-4; v5 (is_cordoned) came later and is not described.
"""

from protocol.schema import BOOL, INT16, INT32, INT64, STRING, Array, api, array, f

DESCRIBE_LOG_DIRS = api(
    35,
    "DescribeLogDirs",
    "1-4",
    "2+",
    request=(
        f(
            "topics",
            array(f("topic", STRING), f("partitions", Array(INT32))),
            nullable="0+",
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16, "3+"),
        f(
            "results",
            array(
                f("error_code", INT16),
                f("log_dir", STRING),
                f(
                    "topics",
                    array(
                        f("name", STRING),
                        f(
                            "partitions",
                            array(
                                f("partition_index", INT32),
                                f("partition_size", INT64),
                                f("offset_lag", INT64),
                                f("is_future_key", BOOL),
                            ),
                        ),
                    ),
                ),
                f("total_bytes", INT64, "4+", default=-1),
                f("usable_bytes", INT64, "4+", default=-1),
            ),
        ),
    ),
)
