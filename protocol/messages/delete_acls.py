"""DeleteAcls (key 31), versions 0-3, flexible from 2 (codes as in describe_acls)."""

from protocol.schema import INT8, INT16, INT32, STRING, api, array, f

DELETE_ACLS = api(
    31,
    "DeleteAcls",
    "0-3",
    "2+",
    request=(
        f(
            "filters",
            array(
                f("resource_type_filter", INT8),
                f("resource_name_filter", STRING, nullable="0+"),
                f("pattern_type_filter", INT8, versions="1+", default=3),
                f("principal_filter", STRING, nullable="0+"),
                f("host_filter", STRING, nullable="0+"),
                f("operation", INT8),
                f("permission_type", INT8),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "filter_results",
            array(
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+"),
                f(
                    "matching_acls",
                    array(
                        f("error_code", INT16),
                        f("error_message", STRING, nullable="0+"),
                        f("resource_type", INT8),
                        f("resource_name", STRING),
                        f("pattern_type", INT8, versions="1+", default=3),
                        f("principal", STRING),
                        f("host", STRING),
                        f("operation", INT8),
                        f("permission_type", INT8),
                    ),
                ),
            ),
        ),
    ),
)
