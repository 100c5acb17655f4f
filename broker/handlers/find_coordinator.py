"""FindCoordinator, versions 0-6 (v4+ batches keys).

Behaviour: a single broker coordinates everything, so every key gets this broker's node id
and the advertised address of the listener the request came in on. Transaction keys
(key_type 1) get this broker too, so a transactional client learns about missing
transaction support from InitProducerId's fatal error instead of retrying here forever.
Deviation: share-group keys (key_type 2) get INVALID_REQUEST (no share groups).
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.schema import Message

API = FIND_COORDINATOR
MIN_VERSION = 0
MAX_VERSION = 6


def handle(ctx: RequestContext, request: Message) -> Message:
    listener = ctx.listener
    error = ErrorCode.NONE if request.key_type in (0, 1) else ErrorCode.INVALID_REQUEST
    node, host, port = (ctx.state.node_id, listener.advertised_host, listener.advertised_port)
    if error:
        node, host, port = -1, "", -1
    if ctx.version >= 4:
        return Message(
            throttle_time_ms=0,
            coordinators=[
                Message(
                    key=key,
                    node_id=node,
                    host=host,
                    port=port,
                    error_code=error,
                    error_message=None,
                )
                for key in request.coordinator_keys
            ],
        )
    return Message(
        throttle_time_ms=0,
        error_code=error,
        error_message=None,
        node_id=node,
        host=host,
        port=port,
    )
