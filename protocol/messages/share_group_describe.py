"""ShareGroupDescribe (key 77), version 1, flexible (KIP-932 share groups).

(ShareGroupDescribeRequest/Response.json; version 0 was Kafka 4.0's early access.)
"""

from protocol.schema import BOOL, INT16, INT32, STRING, UUID, Array, Struct, api, array, f

_ASSIGNMENT = Struct(
    f(
        "topic_partitions",
        array(f("topic_id", UUID), f("topic_name", STRING), f("partitions", Array(INT32))),
    )
)

SHARE_GROUP_DESCRIBE = api(
    77,
    "ShareGroupDescribe",
    "1",
    "0+",
    request=(
        f("group_ids", Array(STRING)),
        f("include_authorized_operations", BOOL),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "groups",
            array(
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+", default=None),
                f("group_id", STRING),
                f("group_state", STRING),
                f("group_epoch", INT32),
                f("assignment_epoch", INT32),
                f("assignor_name", STRING),
                f(
                    "members",
                    array(
                        f("member_id", STRING),
                        f("rack_id", STRING, nullable="0+", default=None),
                        f("member_epoch", INT32),
                        f("client_id", STRING),
                        f("client_host", STRING),
                        f("subscribed_topic_names", Array(STRING)),
                        f("assignment", _ASSIGNMENT),
                    ),
                ),
                f("authorized_operations", INT32, default=-2147483648),
            ),
        ),
    ),
)
