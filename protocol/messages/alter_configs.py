"""AlterConfigs (key 33), versions 0-2, flexible from 2 (AlterConfigsRequest/Response.json)."""

from protocol.schema import BOOL, INT8, INT16, INT32, STRING, api, array, f

ALTER_CONFIGS = api(
    33,
    "AlterConfigs",
    "0-2",
    "2+",
    request=(
        f(
            "resources",
            array(
                f("resource_type", INT8),
                f("resource_name", STRING),
                f("configs", array(f("name", STRING), f("value", STRING, nullable="0+"))),
            ),
        ),
        f("validate_only", BOOL),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "responses",
            array(
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+"),
                f("resource_type", INT8),
                f("resource_name", STRING),
            ),
        ),
    ),
)
