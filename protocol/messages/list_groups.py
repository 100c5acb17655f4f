"""ListGroups (key 16), versions 0-5, flexible from 3 (ListGroupsRequest/Response.json).

v4 adds a state filter (KIP-518), v5 a type filter (KIP-848: "classic" / "consumer").
"""

from protocol.schema import INT16, INT32, STRING, Array, api, array, f

LIST_GROUPS = api(
    16,
    "ListGroups",
    "0-5",
    "3+",
    request=(
        f("states_filter", Array(STRING), "4+"),
        f("types_filter", Array(STRING), "5+"),
    ),
    response=(
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
        f(
            "groups",
            array(
                f("group_id", STRING),
                f("protocol_type", STRING),
                f("group_state", STRING, "4+"),
                f("group_type", STRING, "5+"),
            ),
        ),
    ),
)
