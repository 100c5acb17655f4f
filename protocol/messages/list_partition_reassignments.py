"""ListPartitionReassignments (key 46), version 0, flexible (KIP-455).

topics null lists every ongoing reassignment.
"""

from protocol.schema import INT16, INT32, STRING, Array, api, array, f

LIST_PARTITION_REASSIGNMENTS = api(
    46,
    "ListPartitionReassignments",
    "0",
    "0+",
    request=(
        f("timeout_ms", INT32, default=60000),
        f(
            "topics",
            array(f("name", STRING), f("partition_indexes", Array(INT32))),
            nullable="0+",
            default=None,
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+"),
        f(
            "topics",
            array(
                f("name", STRING),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("replicas", Array(INT32)),
                        f("adding_replicas", Array(INT32)),
                        f("removing_replicas", Array(INT32)),
                    ),
                ),
            ),
        ),
    ),
)
