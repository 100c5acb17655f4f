"""SaslHandshake (key 17), versions 0-1, never flexible (KIP-43, KIP-152).

v0: the SASL tokens that follow travel as bare size-prefixed frames; v1: in SaslAuthenticate.
"""

from protocol.schema import INT16, STRING, Array, api, f

SASL_HANDSHAKE = api(
    17,
    "SaslHandshake",
    "0-1",
    "none",
    request=(f("mechanism", STRING),),
    response=(
        f("error_code", INT16),
        f("mechanisms", Array(STRING)),
    ),
)
