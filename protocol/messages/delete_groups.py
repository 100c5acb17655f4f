"""DeleteGroups (key 42), versions 0-2, flexible from 2 (DeleteGroupsRequest/Response.json)."""

from protocol.schema import INT16, INT32, STRING, Array, api, array, f

DELETE_GROUPS = api(
    42,
    "DeleteGroups",
    "0-2",
    "2+",
    request=(f("groups_names", Array(STRING)),),
    response=(
        f("throttle_time_ms", INT32),
        f("results", array(f("group_id", STRING), f("error_code", INT16))),
    ),
)
