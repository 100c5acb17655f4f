"""DescribeGroups (key 15), versions 0-6, flexible from 5 (DescribeGroupsRequest/Response.json)."""

from protocol.schema import BOOL, BYTES, INT16, INT32, STRING, Array, api, array, f

DESCRIBE_GROUPS = api(
    15,
    "DescribeGroups",
    "0-6",
    "5+",
    request=(
        f("groups", Array(STRING)),
        f("include_authorized_operations", BOOL, "3+"),
    ),
    response=(
        f("throttle_time_ms", INT32, "1+"),
        f(
            "groups",
            array(
                f("error_code", INT16),
                f("error_message", STRING, "6+", nullable="6+", default=None),
                f("group_id", STRING),
                f("group_state", STRING),
                f("protocol_type", STRING),
                f("protocol_data", STRING),
                f(
                    "members",
                    array(
                        f("member_id", STRING),
                        f("group_instance_id", STRING, "4+", nullable="4+", default=None),
                        f("client_id", STRING),
                        f("client_host", STRING),
                        f("member_metadata", BYTES),
                        f("member_assignment", BYTES),
                    ),
                ),
                f("authorized_operations", INT32, "3+", default=-2147483648),
            ),
        ),
    ),
)
