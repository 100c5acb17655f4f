"""SaslAuthenticate (key 36), versions 0-2, flexible from 2 (KIP-152; v1 adds the session
lifetime of KIP-368 re-authentication)."""

from protocol.schema import BYTES, INT16, INT64, STRING, api, f

SASL_AUTHENTICATE = api(
    36,
    "SaslAuthenticate",
    "0-2",
    "2+",
    request=(f("auth_bytes", BYTES),),
    response=(
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+"),
        f("auth_bytes", BYTES),
        f("session_lifetime_ms", INT64, versions="1+"),
    ),
)
