"""CreateAcls (key 30), versions 0-3, flexible from 2 (codes as in describe_acls)."""

from protocol.schema import INT8, INT16, INT32, STRING, api, array, f

CREATE_ACLS = api(
    30,
    "CreateAcls",
    "0-3",
    "2+",
    request=(
        f(
            "creations",
            array(
                f("resource_type", INT8),
                f("resource_name", STRING),
                f("resource_pattern_type", INT8, versions="1+", default=3),
                f("principal", STRING),
                f("host", STRING),
                f("operation", INT8),
                f("permission_type", INT8),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("results", array(f("error_code", INT16), f("error_message", STRING, nullable="0+"))),
    ),
)
