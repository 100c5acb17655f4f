"""LeaveGroup (key 13), versions 0-5, flexible from 4 (LeaveGroupRequest/Response.json).

v3+ batches members (KIP-345: an admin can remove static members by instance id).
"""

from protocol.schema import INT16, INT32, STRING, api, array, f

LEAVE_GROUP = api(
    13,
    "LeaveGroup",
    "0-5",
    "4+",
    request=(
        f("group_id", STRING),
        f("member_id", STRING, "0-2"),
        f(
            "members",
            array(
                f("member_id", STRING, "3+"),
                f("group_instance_id", STRING, "3+", nullable="3+", default=None),
                f("reason", STRING, "5+", nullable="5+", default=None),
            ),
            "3+",
        ),
    ),
    response=(
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
        f(
            "members",
            array(
                f("member_id", STRING, "3+"),
                f("group_instance_id", STRING, "3+", nullable="3+"),
                f("error_code", INT16, "3+"),
            ),
            "3+",
        ),
    ),
)
