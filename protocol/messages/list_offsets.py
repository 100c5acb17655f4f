"""ListOffsets (key 2), versions 1-10, flexible from 6 (ListOffsetsRequest/Response.json).

Kafka 4.0 serves 1-10 (KIP-896 removed v0, whose answer was a list of old-style offsets).
Special timestamps: -2 earliest, -1 latest, -3 max timestamp (v7+), -4 earliest local (v8+),
-5 latest tiered (v9+). v10 adds timeout_ms (for tiered-storage lookups).
"""

from protocol.schema import INT8, INT16, INT32, INT64, STRING, Array, api, array, f

LIST_OFFSETS = api(
    2,
    "ListOffsets",
    "1-10",
    "6+",
    request=(
        f("replica_id", INT32, default=-1),
        f("isolation_level", INT8, "2+"),
        f(
            "topics",
            array(
                f("name", STRING),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("current_leader_epoch", INT32, "4+", default=-1),
                        f("timestamp", INT64),
                        f("max_num_offsets", INT32, "0", default=1),
                    ),
                ),
            ),
        ),
        f("timeout_ms", INT32, "10+"),
    ),
    response=(
        f("throttle_time_ms", INT32, "2+"),
        f(
            "topics",
            array(
                f("name", STRING),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("error_code", INT16),
                        f("old_style_offsets", Array(INT64), "0"),
                        f("timestamp", INT64, "1+", default=-1),
                        f("offset", INT64, "1+", default=-1),
                        f("leader_epoch", INT32, "4+", default=-1),
                    ),
                ),
            ),
        ),
    ),
)
