"""ElectLeaders (key 43), versions 0-2, flexible from 2 (ElectLeadersRequest/Response).

election_type (v1+, KIP-460): 0 = preferred replica, 1 = unclean.
"""

from protocol.schema import INT8, INT16, INT32, STRING, Array, api, array, f

ELECT_LEADERS = api(
    43,
    "ElectLeaders",
    "0-2",
    "2+",
    request=(
        f("election_type", INT8, "1+"),
        f(
            "topic_partitions",
            array(f("topic", STRING), f("partitions", Array(INT32))),
            nullable="0+",
        ),
        f("timeout_ms", INT32, default=60000),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16, "1+"),
        f(
            "replica_election_results",
            array(
                f("topic", STRING),
                f(
                    "partition_result",
                    array(
                        f("partition_id", INT32),
                        f("error_code", INT16),
                        f("error_message", STRING, nullable="0+"),
                    ),
                ),
            ),
        ),
    ),
)
