"""ConsumerGroupHeartbeat (key 68), versions 0-1, flexible (KIP-848).

v1 adds SubscribedTopicRegex and makes the client generate its member id (KIP-1082).
(ConsumerGroupHeartbeatRequest/Response.json of Kafka 4.0.)
"""

from protocol.schema import INT16, INT32, STRING, UUID, Array, Struct, api, array, f

_TOPIC_PARTITIONS = (f("topic_id", UUID), f("partitions", Array(INT32)))

CONSUMER_GROUP_HEARTBEAT = api(
    68,
    "ConsumerGroupHeartbeat",
    "0-1",
    "0+",
    request=(
        f("group_id", STRING),
        f("member_id", STRING),
        f("member_epoch", INT32),
        f("instance_id", STRING, nullable="0+", default=None),
        f("rack_id", STRING, nullable="0+", default=None),
        f("rebalance_timeout_ms", INT32, default=-1),
        f("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
        f("subscribed_topic_regex", STRING, "1+", nullable="1+", default=None),
        f("server_assignor", STRING, nullable="0+", default=None),
        f("topic_partitions", array(*_TOPIC_PARTITIONS), nullable="0+", default=None),
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
