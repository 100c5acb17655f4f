"""AlterUserScramCredentials (key 51), version 0, flexible (KIP-554).

The client sends the salted password (never the password); the broker keeps the salt, the
iterations and the stored and server keys derived from it (RFC 5802).
"""

from protocol.schema import BYTES, INT8, INT16, INT32, STRING, api, array, f

ALTER_USER_SCRAM_CREDENTIALS = api(
    51,
    "AlterUserScramCredentials",
    "0",
    "0+",
    request=(
        f("deletions", array(f("name", STRING), f("mechanism", INT8))),
        f(
            "upsertions",
            array(
                f("name", STRING),
                f("mechanism", INT8),
                f("iterations", INT32),
                f("salt", BYTES),
                f("salted_password", BYTES),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "results",
            array(
                f("user", STRING),
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+"),
            ),
        ),
    ),
)
