"""OffsetForLeaderEpoch (key 23), versions 2-4, flexible from 4
(OffsetForLeaderEpochRequest/Response.json).

Kafka 4.0 serves 2-4 (KIP-896 removed 0-1). Consumers send replica_id -1 (v3+; -2, the
default, means "not given") to validate their position after a leader change (KIP-320).
"""

from protocol.schema import INT16, INT32, INT64, STRING, api, array, f

OFFSET_FOR_LEADER_EPOCH = api(
    23,
    "OffsetForLeaderEpoch",
    "2-4",
    "4+",
    request=(
        f("replica_id", INT32, "3+", default=-2),
        f(
            "topics",
            array(
                f("topic", STRING),
                f(
                    "partitions",
                    array(
                        f("partition", INT32),
                        f("current_leader_epoch", INT32, "2+", default=-1),
                        f("leader_epoch", INT32),
                    ),
                ),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32, "2+"),
        f(
            "topics",
            array(
                f("topic", STRING),
                f(
                    "partitions",
                    array(
                        f("error_code", INT16),
                        f("partition", INT32),
                        f("leader_epoch", INT32, "1+", default=-1),
                        f("end_offset", INT64, default=-1),
                    ),
                ),
            ),
        ),
    ),
)
