"""ShareGroupHeartbeat, version 1 (KIP-932 share groups; served with share.version >= 1).

As Kafka's KafkaApis.handleShareGroupHeartbeat: READ on the group (else
GROUP_AUTHORIZATION_FAILED), a member id of 1-36 characters (else INVALID_REQUEST, no
message), DESCRIBE on every subscribed topic (else TOPIC_AUTHORIZATION_FAILED); then
broker.coordinator.share.coordinator. An error answer has member epoch 0, interval 0 and no
member id, as Kafka's getErrorResponse. Checked against Kafka 4.4.0 with the same raw
conversation (errors, messages, epochs, describe order, share sessions).
"""

from __future__ import annotations

from broker.coordinator.share.coordinator import MAX_MEMBER_ID_LENGTH
from broker.core.request_context import RequestContext
from broker.core.state import SHARE_VERSION_FEATURE
from broker.handlers._groups import client_host
from broker.security.acl import DESCRIBE, GROUP, READ, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.share_group_heartbeat import SHARE_GROUP_HEARTBEAT
from protocol.schema import Message

API = SHARE_GROUP_HEARTBEAT
MIN_VERSION = 1
MAX_VERSION = 1
FEATURE = SHARE_VERSION_FEATURE


def _refused(error: ErrorCode, message: str | None = None) -> Message:
    return Message(
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
    )


def handle(ctx: RequestContext, request: Message) -> Message:
    if not ctx.authorized(READ, GROUP, request.group_id):
        return _refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not 0 < len(request.member_id) <= MAX_MEMBER_ID_LENGTH:
        # Kafka's answer carries the error code only (recorded from Kafka 4.4.0).
        return _refused(ErrorCode.INVALID_REQUEST)
    names = request.subscribed_topic_names
    if names and not all([ctx.authorized(DESCRIBE, TOPIC, n) for n in dict.fromkeys(names)]):
        return _refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    result = ctx.state.shares.heartbeat(
        request.group_id,
        request.member_id,
        request.member_epoch,
        request.rack_id,
        None if names is None else list(names),
        ctx.client_id or "",
        client_host(ctx),
    )
    # A member that left or was fenced released its records.
    ctx.state.shares.persist()
    if result.error != ErrorCode.NONE:
        return _refused(result.error, result.message)
    assignment = None
    if result.assignment is not None:
        assignment = Message(
            topic_partitions=[
                Message(topic_id=topic_id, partitions=sorted(parts))
                for topic_id, parts in sorted(result.assignment.items())
            ]
        )
    return Message(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=assignment,
    )
