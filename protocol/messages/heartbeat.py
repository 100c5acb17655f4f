"""Heartbeat (key 12), versions 0-4, flexible from 4 (HeartbeatRequest/Response.json)."""

from protocol.schema import INT16, INT32, STRING, api, f

HEARTBEAT = api(
    12,
    "Heartbeat",
    "0-4",
    "4+",
    request=(
        f("group_id", STRING),
        f("generation_id", INT32),
        f("member_id", STRING),
        f("group_instance_id", STRING, "3+", nullable="3+", default=None),
    ),
    response=(
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
    ),
)
