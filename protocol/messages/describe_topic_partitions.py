"""DescribeTopicPartitions (key 75), version 0, flexible (KIP-966).

Paginated topic metadata: ``response_partition_limit`` caps the partitions per answer and
``next_cursor`` says where to continue.
"""

from protocol.schema import BOOL, INT16, INT32, STRING, UUID, Array, Struct, api, array, f

_CURSOR = (f("topic_name", STRING), f("partition_index", INT32))

DESCRIBE_TOPIC_PARTITIONS = api(
    75,
    "DescribeTopicPartitions",
    "0",
    "0+",
    request=(
        f("topics", array(f("name", STRING))),
        f("response_partition_limit", INT32, default=2000),
        f("cursor", Struct(*_CURSOR), nullable="0+", default=None),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "topics",
            array(
                f("error_code", INT16),
                f("name", STRING, nullable="0+"),
                f("topic_id", UUID),
                f("is_internal", BOOL),
                f(
                    "partitions",
                    array(
                        f("error_code", INT16),
                        f("partition_index", INT32),
                        f("leader_id", INT32),
                        f("leader_epoch", INT32, default=-1),
                        f("replica_nodes", Array(INT32)),
                        f("isr_nodes", Array(INT32)),
                        f("eligible_leader_replicas", Array(INT32), nullable="0+", default=None),
                        f("last_known_elr", Array(INT32), nullable="0+", default=None),
                        f("offline_replicas", Array(INT32)),
                    ),
                ),
                f("topic_authorized_operations", INT32, default=-2147483648),
            ),
        ),
        f("next_cursor", Struct(*_CURSOR), nullable="0+", default=None),
    ),
)
