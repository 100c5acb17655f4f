"""FindCoordinator, versions 0-6 (v4+ batches keys).

Behaviour: a single broker coordinates everything, so every key gets this broker's node id
and the advertised address of the listener the request came in on. Transaction keys
(key_type 1) get this broker too, so a transactional client learns about missing
transaction support from InitProducerId's fatal error instead of retrying here forever.
Share-group keys (key_type 2) get INVALID_REQUEST, as Kafka 4.0 without share groups
enabled. error_message as Kafka's KafkaApis.handleFindCoordinatorRequest: v1-3 carry
Errors.message() ("NONE" on success, the error's text otherwise); v4+ leave each
coordinator's at its default, "". An unknown key type fails the whole request with
INVALID_REQUEST and its message for every key (CoordinatorType.forId throws).
With an authorizer a group key needs DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED
(per key from v4, the whole answer before).
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.security.acl import DESCRIBE, GROUP
from protocol.errors import ErrorCode
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.schema import Message

API = FIND_COORDINATOR
MIN_VERSION = 0
MAX_VERSION = 6

GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2
# Errors.message() of the codes answered here (Errors.java: the exception's default text).
MESSAGES = {
    ErrorCode.NONE: "NONE",
    ErrorCode.INVALID_REQUEST: (
        "This most likely occurs because of a request being malformed by the client library "
        "or the message was sent to an incompatible broker. See the broker logs for more "
        "details."
    ),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
}


def handle(ctx: RequestContext, request: Message) -> Message:
    key_type = request.key_type
    if key_type not in (GROUP_KEY, TRANSACTION_KEY, SHARE_KEY):
        return _whole_request_error(ctx, request, ErrorCode.INVALID_REQUEST)
    if key_type == GROUP_KEY and not all(
        ctx.authorized(DESCRIBE, GROUP, key) for key in _keys(ctx, request)
    ):
        # Kafka answers per key from v4; a single denied key fails the older request.
        if ctx.version < 4:
            return _whole_request_error(ctx, request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return _per_key(ctx, request)
    listener = ctx.listener
    error = ErrorCode.NONE if key_type != SHARE_KEY else ErrorCode.INVALID_REQUEST
    node, host, port = (ctx.state.node_id, listener.advertised_host, listener.advertised_port)
    if error:
        node, host, port = -1, "", -1  # Kafka's Node.noNode()
    if ctx.version >= 4:
        return Message(
            throttle_time_ms=0,
            coordinators=[
                Message(
                    key=key, node_id=node, host=host, port=port, error_code=error, error_message=""
                )
                for key in request.coordinator_keys
            ],
        )
    return Message(
        throttle_time_ms=0,
        error_code=error,
        error_message=MESSAGES[error],
        node_id=node,
        host=host,
        port=port,
    )


def _whole_request_error(ctx: RequestContext, request: Message, error: ErrorCode) -> Message:
    """FindCoordinatorRequest.getErrorResponse: the error and its message, no node."""
    if ctx.version >= 4:
        return Message(
            throttle_time_ms=0,
            coordinators=[
                Message(
                    key=key,
                    node_id=-1,
                    host="",
                    port=-1,
                    error_code=error,
                    error_message=MESSAGES[error],
                )
                for key in request.coordinator_keys
            ],
        )
    return Message(
        throttle_time_ms=0,
        error_code=error,
        error_message=MESSAGES[error],
        node_id=-1,
        host="",
        port=-1,
    )


def _keys(ctx: RequestContext, request: Message) -> list[str]:
    return list(request.coordinator_keys) if ctx.version >= 4 else [request.key]


def _per_key(ctx: RequestContext, request: Message) -> Message:
    """v4+ with an authorizer: each group key this broker or GROUP_AUTHORIZATION_FAILED."""
    listener = ctx.listener
    out = []
    for key in request.coordinator_keys:
        if ctx.authorized(DESCRIBE, GROUP, key, log_denied=False):
            out.append(
                Message(
                    key=key,
                    node_id=ctx.state.node_id,
                    host=listener.advertised_host,
                    port=listener.advertised_port,
                    error_code=ErrorCode.NONE,
                    error_message="",
                )
            )
        else:
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
            out.append(
                Message(
                    key=key,
                    node_id=-1,
                    host="",
                    port=-1,
                    error_code=error,
                    error_message=MESSAGES[error],
                )
            )
    return Message(throttle_time_ms=0, coordinators=out)
