"""SyncGroup (key 14), versions 0-5, flexible from 4 (SyncGroupRequest/Response.json)."""

from protocol.schema import BYTES, INT16, INT32, STRING, api, array, f

SYNC_GROUP = api(
    14,
    "SyncGroup",
    "0-5",
    "4+",
    request=(
        f("group_id", STRING),
        f("generation_id", INT32),
        f("member_id", STRING),
        f("group_instance_id", STRING, "3+", nullable="3+", default=None),
        f("protocol_type", STRING, "5+", nullable="5+", default=None),
        f("protocol_name", STRING, "5+", nullable="5+", default=None),
        f("assignments", array(f("member_id", STRING), f("assignment", BYTES))),
    ),
    response=(
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
        f("protocol_type", STRING, "5+", nullable="5+", default=None),
        f("protocol_name", STRING, "5+", nullable="5+", default=None),
        f("assignment", BYTES),
    ),
)
