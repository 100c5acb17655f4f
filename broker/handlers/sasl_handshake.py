"""SaslHandshake, versions 0-1 (advertised on every listener, as Kafka 4.0).

Behaviour: this handler sees only what the SASL layer does not take
(broker.net.sasl_session): a handshake on a PLAINTEXT or SSL listener, or on an
authenticated connection whose client cannot re-authenticate. Kafka's KafkaApis answers
those ILLEGAL_SASL_STATE with no mechanisms (handleSaslHandshakeRequest); so do we.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.sasl_handshake import SASL_HANDSHAKE
from protocol.schema import Message

API = SASL_HANDSHAKE
MIN_VERSION = 0
MAX_VERSION = 1


def handle(ctx: RequestContext, request: Message) -> Message:
    return Message(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
