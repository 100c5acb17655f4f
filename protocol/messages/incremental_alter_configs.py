"""IncrementalAlterConfigs (key 44), versions 0-1, flexible from 1 (KIP-339).

config_operation: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (AlterConfigOp.OpType).
"""

from protocol.schema import BOOL, INT8, INT16, INT32, STRING, api, array, f

INCREMENTAL_ALTER_CONFIGS = api(
    44,
    "IncrementalAlterConfigs",
    "0-1",
    "1+",
    request=(
        f(
            "resources",
            array(
                f("resource_type", INT8),
                f("resource_name", STRING),
                f(
                    "configs",
                    array(
                        f("name", STRING),
                        f("config_operation", INT8),
                        f("value", STRING, nullable="0+"),
                    ),
                ),
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
