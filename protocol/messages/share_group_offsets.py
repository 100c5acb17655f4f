"""The share-group offset admin APIs (KIP-932), flexible: DescribeShareGroupOffsets (key 90,
versions 0-1; v1 adds Lag, KIP-1226), AlterShareGroupOffsets (key 91, version 0),
DeleteShareGroupOffsets (key 92, version 0).

(DescribeShareGroupOffsets*, AlterShareGroupOffsets*, DeleteShareGroupOffsets*.json as
Kafka 4.4.0 serves them.)
"""

from protocol.schema import INT16, INT32, INT64, STRING, UUID, Array, api, array, f

DESCRIBE_SHARE_GROUP_OFFSETS = api(
    90,
    "DescribeShareGroupOffsets",
    "0-1",
    "0+",
    request=(
        f(
            "groups",
            array(
                f("group_id", STRING),
                f(
                    "topics",
                    array(f("topic_name", STRING), f("partitions", Array(INT32))),
                    nullable="0+",
                ),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "groups",
            array(
                f("group_id", STRING),
                f(
                    "topics",
                    array(
                        f("topic_name", STRING),
                        f("topic_id", UUID),
                        f(
                            "partitions",
                            array(
                                f("partition_index", INT32),
                                f("start_offset", INT64),
                                f("leader_epoch", INT32),
                                f("lag", INT64, "1+", default=-1),
                                f("error_code", INT16),
                                f("error_message", STRING, nullable="0+", default=None),
                            ),
                        ),
                    ),
                ),
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+", default=None),
            ),
        ),
    ),
)

ALTER_SHARE_GROUP_OFFSETS = api(
    91,
    "AlterShareGroupOffsets",
    "0",
    "0+",
    request=(
        f("group_id", STRING),
        f(
            "topics",
            array(
                f("topic_name", STRING),
                f("partitions", array(f("partition_index", INT32), f("start_offset", INT64))),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+", default=None),
        f(
            "responses",
            array(
                f("topic_name", STRING),
                f("topic_id", UUID),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("error_code", INT16),
                        f("error_message", STRING, nullable="0+", default=None),
                    ),
                ),
            ),
        ),
    ),
)

DELETE_SHARE_GROUP_OFFSETS = api(
    92,
    "DeleteShareGroupOffsets",
    "0",
    "0+",
    request=(
        f("group_id", STRING),
        f("topics", array(f("topic_name", STRING))),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+", default=None),
        f(
            "responses",
            array(
                f("topic_name", STRING),
                f("topic_id", UUID),
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+", default=None),
            ),
        ),
    ),
)
