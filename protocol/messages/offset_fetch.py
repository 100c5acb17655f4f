"""OffsetFetch (key 9), versions 1-9, flexible from 6 (OffsetFetchRequest/Response.json).

v2+: null topics = every partition the group committed. v8+ batches groups; v9 adds the
KIP-848 member id/epoch. Kafka 4.0 serves 1-9; v10 (topic ids) is not described.
"""

from protocol.schema import BOOL, INT16, INT32, INT64, STRING, Array, api, array, f

_PARTITION_V8 = (
    f("partition_index", INT32, "8+"),
    f("committed_offset", INT64, "8+"),
    f("committed_leader_epoch", INT32, "8+", default=-1),
    f("metadata", STRING, "8+", nullable="8+"),
    f("error_code", INT16, "8+"),
)

OFFSET_FETCH = api(
    9,
    "OffsetFetch",
    "1-9",
    "6+",
    request=(
        f("group_id", STRING, "0-7"),
        f(
            "topics",
            array(f("name", STRING, "0-7"), f("partition_indexes", Array(INT32), "0-7")),
            "0-7",
            nullable="2-7",
        ),
        f(
            "groups",
            array(
                f("group_id", STRING, "8+"),
                f("member_id", STRING, "9+", nullable="9+", default=None),
                f("member_epoch", INT32, "9+", default=-1),
                f(
                    "topics",
                    array(f("name", STRING, "8+"), f("partition_indexes", Array(INT32), "8+")),
                    "8+",
                    nullable="8+",
                ),
            ),
            "8+",
        ),
        f("require_stable", BOOL, "7+"),
    ),
    response=(
        f("throttle_time_ms", INT32, "3+"),
        f(
            "topics",
            array(
                f("name", STRING, "0-7"),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32, "0-7"),
                        f("committed_offset", INT64, "0-7"),
                        f("committed_leader_epoch", INT32, "5-7", default=-1),
                        f("metadata", STRING, "0-7", nullable="0-7"),
                        f("error_code", INT16, "0-7"),
                    ),
                    "0-7",
                ),
            ),
            "0-7",
        ),
        f("error_code", INT16, "2-7"),
        f(
            "groups",
            array(
                f("group_id", STRING, "8+"),
                f(
                    "topics",
                    array(f("name", STRING, "8+"), f("partitions", array(*_PARTITION_V8), "8+")),
                    "8+",
                ),
                f("error_code", INT16, "8+"),
            ),
            "8+",
        ),
    ),
)
