"""SaslAuthenticate, versions 0-2 (advertised on every listener, as Kafka 4.0).

Behaviour: the exchange itself runs in broker.net.sasl_session; this handler sees only
a SaslAuthenticate outside one (PLAINTEXT/SSL listeners, or after authentication) and
answers as Kafka's KafkaApis.handleSaslAuthenticateRequest: ILLEGAL_SASL_STATE,
"SaslAuthenticate request received after successful authentication".
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.sasl_authenticate import SASL_AUTHENTICATE
from protocol.schema import Message

API = SASL_AUTHENTICATE
MIN_VERSION = 0
MAX_VERSION = 2


def handle(ctx: RequestContext, request: Message) -> Message:
    return Message(
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"",
        session_lifetime_ms=0,
    )
