"""DescribeClientQuotas (key 48), versions 0-1, flexible from 1 (KIP-546).

match_type: 0 = exact name, 1 = default entity, 2 = any specified name.
"""

from protocol.schema import BOOL, FLOAT64, INT8, INT16, INT32, STRING, api, array, f

DESCRIBE_CLIENT_QUOTAS = api(
    48,
    "DescribeClientQuotas",
    "0-1",
    "1+",
    request=(
        f(
            "components",
            array(
                f("entity_type", STRING),
                f("match_type", INT8),
                f("match", STRING, nullable="0+"),
            ),
        ),
        f("strict", BOOL),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+"),
        f(
            "entries",
            array(
                f(
                    "entity",
                    array(f("entity_type", STRING), f("entity_name", STRING, nullable="0+")),
                ),
                f("values", array(f("key", STRING), f("value", FLOAT64))),
            ),
            nullable="0+",
        ),
    ),
)
