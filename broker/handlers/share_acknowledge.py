"""ShareAcknowledge, versions 1-2 (KIP-932 share groups; served with share.version >= 1).

As Kafka's KafkaApis.handleShareAcknowledgeRequest: a null group id INVALID_REQUEST, READ on
the group else GROUP_AUTHORIZATION_FAILED; the epoch must name the member's share session
(epoch 0: INVALID_SHARE_SESSION_EPOCH, no session: SHARE_SESSION_NOT_FOUND, another epoch:
INVALID_SHARE_SESSION_EPOCH); the session moves to its next epoch, and -1 closes it after
the acknowledgements, releasing what the member still holds. Each partition answers its
acknowledgement's error (INVALID_RECORD_STATE for records the member does not hold,
INVALID_REQUEST for malformed batches, TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_ID). v2
answers the lock duration (for RENEW).
"""

from __future__ import annotations

from broker.coordinator.share.sessions import FINAL_EPOCH, INITIAL_EPOCH, SessionError
from broker.core.request_context import RequestContext
from broker.core.state import SHARE_VERSION_FEATURE
from broker.handlers._share import acknowledge, error_response, no_leader, refused
from broker.security.acl import READ, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.share_acknowledge import SHARE_ACKNOWLEDGE
from protocol.schema import Message

API = SHARE_ACKNOWLEDGE
MIN_VERSION = 1
MAX_VERSION = 2
FEATURE = SHARE_VERSION_FEATURE


def _partition(index: int, error: ErrorCode) -> Message:
    return Message(
        partition_index=index, error_code=error, error_message=None, current_leader=no_leader()
    )


def handle(ctx: RequestContext, request: Message) -> Message:
    if (refusal := refused(ctx, request)) is not None:
        return refusal
    shares = ctx.state.shares
    shares.expire_members()
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    if epoch == INITIAL_EPOCH:
        return error_response(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    try:
        if epoch == FINAL_EPOCH:
            shares.sessions.existing(group_id, member_id, epoch)
        else:
            shares.sessions.advance(group_id, member_id, epoch, [], [])
    except SessionError as failed:
        return error_response(failed.error)
    store = ctx.state.store
    woken: list[tuple[str, int]] = []
    responses = []
    for topic in request.topics:
        info = store.topic_by_id(topic.topic_id)
        parts = []
        for p in topic.partitions:
            if info is None:
                parts.append(_partition(p.partition_index, ErrorCode.UNKNOWN_TOPIC_ID))
                continue
            if not ctx.authorized(READ, TOPIC, info.name):
                parts.append(_partition(p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            part = shares.partition(group_id, topic.topic_id, p.partition_index)
            if part is None:
                parts.append(_partition(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            error = acknowledge(
                shares, group_id, member_id, part, p.acknowledgement_batches, ctx.version
            )
            if part.has_available():
                woken.append((info.name, p.partition_index))
            parts.append(_partition(p.partition_index, error))
        responses.append(Message(topic_id=topic.topic_id, partitions=parts))
    if epoch == FINAL_EPOCH:
        for topic_id, index in shares.close_session(group_id, member_id):
            info = store.topic_by_id(topic_id)
            if info is not None:
                woken.append((info.name, index))
    shares.persist()
    for key in woken:
        ctx.state.fetch_purgatory.check_and_complete(key)
    return Message(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        acquisition_lock_timeout_ms=shares.record_lock_ms(group_id),
        responses=responses,
        node_endpoints=[],
    )
