"""DescribeUserScramCredentials (key 50), version 0, flexible (KIP-554).

users null or empty describes every user; mechanism 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512.
"""

from protocol.schema import INT8, INT16, INT32, STRING, api, array, f

DESCRIBE_USER_SCRAM_CREDENTIALS = api(
    50,
    "DescribeUserScramCredentials",
    "0",
    "0+",
    request=(f("users", array(f("name", STRING)), nullable="0+"),),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+"),
        f(
            "results",
            array(
                f("user", STRING),
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+"),
                f(
                    "credential_infos",
                    array(f("mechanism", INT8), f("iterations", INT32)),
                ),
            ),
        ),
    ),
)
