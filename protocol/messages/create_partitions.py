"""CreatePartitions (key 37), versions 0-3, flexible from 2 (CreatePartitionsRequest/Response)."""

from protocol.schema import BOOL, INT16, INT32, STRING, Array, api, array, f

CREATE_PARTITIONS = api(
    37,
    "CreatePartitions",
    "0-3",
    "2+",
    request=(
        f(
            "topics",
            array(
                f("name", STRING),
                f("count", INT32),
                f("assignments", array(f("broker_ids", Array(INT32))), nullable="0+"),
            ),
        ),
        f("timeout_ms", INT32),
        f("validate_only", BOOL),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "results",
            array(
                f("name", STRING),
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+", default=None),
            ),
        ),
    ),
)
