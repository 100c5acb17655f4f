"""FindCoordinator, versions 0-6 (v4+ batches keys).

Behaviour: a single broker coordinates everything, so every key gets this broker's node id
and the advertised address of the listener the request came in on. Transaction keys
(key_type 1) get this broker too, so a transactional client learns about missing
transaction support from InitProducerId's fatal error instead of retrying here forever.
In a simulated cluster a key gets the leader of its __consumer_offsets or
__transaction_state partition (COORDINATOR_NOT_AVAILABLE when it has none). Share-group keys
(key_type 2) get INVALID_REQUEST, as Kafka 4.0 without share groups
enabled. error_message as Kafka's KafkaApis.handleFindCoordinatorRequest: v1-3 carry
Errors.message() ("NONE" on success, the error's text otherwise); v4+ leave each
coordinator's at its default, "". An unknown key type fails the whole request with
INVALID_REQUEST and its message for every key (CoordinatorType.forId throws).
With an authorizer (KafkaApis.getCoordinator): a group key needs DESCRIBE on the group, else
GROUP_AUTHORIZATION_FAILED; a transaction key DESCRIBE on the transactional id, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (per key from v4, with Kafka's empty message; the
whole answer, with Errors.message(), before); a share key from v6 CLUSTER_ACTION on the
cluster, else CLUSTER_AUTHORIZATION_FAILED for the whole request.
"""

from __future__ import annotations

from broker.cluster.state import NO_LEADER, Cluster
from broker.core.request_context import RequestContext
from broker.handlers._leadership import coordinator_node
from broker.security.acl import (
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    DESCRIBE,
    GROUP,
    TRANSACTIONAL_ID,
)
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
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}


class _WholeRequestError(Exception):
    def __init__(self, error: ErrorCode) -> None:
        self.error = error


def _key_error(ctx: RequestContext, key_type: int, key: str) -> ErrorCode:
    """KafkaApis.getCoordinator's checks, in its order, for one key."""
    if key_type == GROUP_KEY and not ctx.authorized(DESCRIBE, GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION_KEY and not ctx.authorized(DESCRIBE, TRANSACTIONAL_ID, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if key_type == SHARE_KEY:
        # Kafka checks CLUSTER_ACTION (v6+; a denial fails the whole request) before it
        # finds share groups disabled.
        if ctx.version >= 6 and not ctx.authorized(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            raise _WholeRequestError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return ErrorCode.INVALID_REQUEST
    return ErrorCode.NONE


def handle(ctx: RequestContext, request: Message) -> Message:
    key_type = request.key_type
    if key_type not in (GROUP_KEY, TRANSACTION_KEY, SHARE_KEY):
        return _whole_request_error(ctx, request, ErrorCode.INVALID_REQUEST)
    try:
        errors = [_key_error(ctx, key_type, key) for key in _keys(ctx, request)]
    except _WholeRequestError as failed:
        return _whole_request_error(ctx, request, failed.error)
    if key_type == GROUP_KEY and ctx.state.offsets_topic is not None and not all(errors):
        # Kafka creates __consumer_offsets at the first FindCoordinator for a group.
        ctx.state.offsets_topic.ensure()
    if key_type == TRANSACTION_KEY and ctx.state.txn_state_topic is not None and not all(errors):
        # ... and __transaction_state at the first one for a transactional id.
        ctx.state.txn_state_topic.ensure()
    listener = ctx.listener
    here = (ctx.state.node_id, listener.advertised_host, listener.advertised_port)
    no_node = (-1, "", -1)  # Kafka's Node.noNode()
    cluster = ctx.state.cluster
    if cluster is not None:
        errors = [
            error or _coordinator_error(cluster, key_type, key)
            for key, error in zip(_keys(ctx, request), errors, strict=True)
        ]
    if ctx.version >= 4:
        coordinators = []
        for key, error in zip(request.coordinator_keys, errors, strict=True):
            if cluster is not None and not error:
                node = coordinator_node(cluster, key_type, key)
                node, host, port = (node, *cluster.endpoint(node, listener))
            else:
                node, host, port = no_node if error else here
            coordinators.append(
                Message(
                    key=key, node_id=node, host=host, port=port, error_code=error, error_message=""
                )
            )
        return Message(throttle_time_ms=0, coordinators=coordinators)
    [error] = errors
    if error:
        return _whole_request_error(ctx, request, error)
    node, host, port = here
    if cluster is not None:
        node = coordinator_node(cluster, key_type, request.key)
        host, port = cluster.endpoint(node, listener)
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


def _coordinator_error(cluster: Cluster, key_type: int, key: str) -> ErrorCode:
    # KafkaApis.getCoordinator: a coordinator partition without a leader answers
    # COORDINATOR_NOT_AVAILABLE.
    if coordinator_node(cluster, key_type, key) == NO_LEADER:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NONE
