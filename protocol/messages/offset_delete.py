"""OffsetDelete (key 47), version 0, not flexible (OffsetDeleteRequest/Response.json, KIP-496)."""

from protocol.schema import INT16, INT32, STRING, api, array, f

OFFSET_DELETE = api(
    47,
    "OffsetDelete",
    "0",
    "none",
    request=(
        f("group_id", STRING),
        f(
            "topics",
            array(f("name", STRING), f("partitions", array(f("partition_index", INT32)))),
        ),
    ),
    response=(
        f("error_code", INT16),
        f("throttle_time_ms", INT32),
        f(
            "topics",
            array(
                f("name", STRING),
                f(
                    "partitions",
                    array(f("partition_index", INT32), f("error_code", INT16)),
                ),
            ),
        ),
    ),
)
