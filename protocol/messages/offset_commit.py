"""OffsetCommit (key 8), versions 2-9, flexible from 8 (OffsetCommitRequest/Response.json).

Kafka 4.0 serves 2-9; v10 (topic ids) came later and is not described.
"""

from protocol.schema import INT16, INT32, INT64, STRING, api, array, f

OFFSET_COMMIT = api(
    8,
    "OffsetCommit",
    "2-9",
    "8+",
    request=(
        f("group_id", STRING),
        # A generation id for classic groups, a member epoch for KIP-848 groups; -1 (with an
        # empty member id) for a simple consumer that commits without joining.
        f("generation_id_or_member_epoch", INT32, "1+", default=-1),
        f("member_id", STRING, "1+"),
        f("group_instance_id", STRING, "7+", nullable="7+", default=None),
        f("retention_time_ms", INT64, "2-4", default=-1),
        f(
            "topics",
            array(
                f("name", STRING),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("committed_offset", INT64),
                        f("committed_leader_epoch", INT32, "6+", default=-1),
                        f("committed_metadata", STRING, nullable="0+"),
                    ),
                ),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32, "3+"),
        f(
            "topics",
            array(
                f("name", STRING),
                f("partitions", array(f("partition_index", INT32), f("error_code", INT16))),
            ),
        ),
    ),
)
