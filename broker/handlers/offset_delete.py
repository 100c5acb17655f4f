"""OffsetDelete, version 0 (KIP-496).

Behaviour: deletes committed offsets of partitions the group does not subscribe to.
Unknown group GROUP_ID_NOT_FOUND; a non-empty group not using the consumer protocol
NON_EMPTY_GROUP; a partition of a subscribed topic GROUP_SUBSCRIBED_TO_TOPIC (86), decided
from the members' consumer-protocol subscriptions as Kafka does.
Authorization (with an authorizer): DELETE on the group (else GROUP_AUTHORIZATION_FAILED),
READ on each topic (else TOPIC_AUTHORIZATION_FAILED on its partitions).
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._groups import coordinator
from broker.security.acl import DELETE, GROUP, READ, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.offset_delete import OFFSET_DELETE
from protocol.schema import Message

API = OFFSET_DELETE
MIN_VERSION = 0
MAX_VERSION = 0


async def handle(ctx: RequestContext, request: Message) -> Message:
    if not ctx.authorized(DELETE, GROUP, request.group_id):
        return Message(
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, throttle_time_ms=0, topics=[]
        )
    # KafkaApis.handleOffsetDeleteRequest: READ on each topic, else TOPIC_AUTHORIZATION_FAILED.
    denied = {t.name for t in request.topics if not ctx.authorized(READ, TOPIC, t.name)}
    wanted = [
        (t.name, p.partition_index)
        for t in request.topics
        if t.name not in denied
        for p in t.partitions
    ]
    error, allowed_errors = await coordinator(ctx).delete_offsets(request.group_id, wanted)
    if error:
        return Message(error_code=error, throttle_time_ms=0, topics=[])
    results = iter(allowed_errors)
    errors = [
        ErrorCode.TOPIC_AUTHORIZATION_FAILED if t.name in denied else next(results)
        for t in request.topics
        for _ in t.partitions
    ]
    it = iter(errors)
    return Message(
        error_code=0,
        throttle_time_ms=0,
        topics=[
            Message(
                name=t.name,
                partitions=[
                    Message(partition_index=p.partition_index, error_code=next(it))
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )
