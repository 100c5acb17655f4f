"""JoinGroup (key 11), versions 2-9, flexible from 6 (JoinGroupRequest/Response.json).

Kafka 4.0 serves 2-9 (KIP-896 removed 0-1); the fields of v0-1 are described anyway so the
description reads like Kafka's JSON.
"""

from protocol.schema import BOOL, BYTES, INT16, INT32, STRING, api, array, f

JOIN_GROUP = api(
    11,
    "JoinGroup",
    "2-9",
    "6+",
    request=(
        f("group_id", STRING),
        f("session_timeout_ms", INT32),
        f("rebalance_timeout_ms", INT32, "1+", default=-1),
        f("member_id", STRING),
        f("group_instance_id", STRING, "5+", nullable="5+", default=None),
        f("protocol_type", STRING),
        f("protocols", array(f("name", STRING), f("metadata", BYTES))),
        f("reason", STRING, "8+", nullable="8+", default=None),
    ),
    response=(
        f("throttle_time_ms", INT32, "2+"),
        f("error_code", INT16),
        f("generation_id", INT32, default=-1),
        f("protocol_type", STRING, "7+", nullable="7+", default=None),
        f("protocol_name", STRING, nullable="7+"),
        f("leader", STRING),
        f("skip_assignment", BOOL, "9+"),
        f("member_id", STRING),
        f(
            "members",
            array(
                f("member_id", STRING),
                f("group_instance_id", STRING, "5+", nullable="5+", default=None),
                f("metadata", BYTES),
            ),
        ),
    ),
)
