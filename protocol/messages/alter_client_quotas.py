"""AlterClientQuotas (key 49), versions 0-1, flexible from 1 (KIP-546)."""

from protocol.schema import BOOL, FLOAT64, INT16, INT32, STRING, api, array, f

_ENTITY = array(f("entity_type", STRING), f("entity_name", STRING, nullable="0+"))

ALTER_CLIENT_QUOTAS = api(
    49,
    "AlterClientQuotas",
    "0-1",
    "1+",
    request=(
        f(
            "entries",
            array(
                f("entity", _ENTITY),
                f(
                    "ops",
                    array(f("key", STRING), f("value", FLOAT64), f("remove", BOOL)),
                ),
            ),
        ),
        f("validate_only", BOOL),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "entries",
            array(
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+"),
                f("entity", _ENTITY),
            ),
        ),
    ),
)
