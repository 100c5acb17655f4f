"""ShareGroupHeartbeat (key 76), version 1, flexible (KIP-932 share groups).

Version 0 was Kafka 4.0's early access and is gone since 4.1; 4.4 serves 1 only.
(ShareGroupHeartbeatRequest/Response.json.)
"""

from protocol.schema import INT16, INT32, STRING, UUID, Array, Struct, api, array, f

_TOPIC_PARTITIONS = (f("topic_id", UUID), f("partitions", Array(INT32)))

SHARE_GROUP_HEARTBEAT = api(
    76,
    "ShareGroupHeartbeat",
    "1",
    "0+",
    request=(
        f("group_id", STRING),
        f("member_id", STRING),
        f("member_epoch", INT32),
        f("rack_id", STRING, nullable="0+", default=None),
        f("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+", default=None),
        f("member_id", STRING, nullable="0+", default=None),
        f("member_epoch", INT32),
        f("heartbeat_interval_ms", INT32),
        f(
            "assignment",
            Struct(f("topic_partitions", array(*_TOPIC_PARTITIONS))),
            nullable="0+",
            default=None,
        ),
    ),
)
