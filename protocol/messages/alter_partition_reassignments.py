"""AlterPartitionReassignments (key 45), version 0, flexible (KIP-455).

replicas null cancels a pending reassignment of the partition.
"""

from protocol.schema import INT16, INT32, STRING, Array, api, array, f

ALTER_PARTITION_REASSIGNMENTS = api(
    45,
    "AlterPartitionReassignments",
    "0",
    "0+",
    request=(
        f("timeout_ms", INT32, default=60000),
        f(
            "topics",
            array(
                f("name", STRING),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("replicas", Array(INT32), nullable="0+", default=None),
                    ),
                ),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+"),
        f(
            "responses",
            array(
                f("name", STRING),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("error_code", INT16),
                        f("error_message", STRING, nullable="0+"),
                    ),
                ),
            ),
        ),
    ),
)
