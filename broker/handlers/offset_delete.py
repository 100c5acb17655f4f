"""OffsetDelete, version 0 (KIP-496).

Behaviour: deletes committed offsets of partitions the group does not subscribe to.
Unknown group GROUP_ID_NOT_FOUND; a non-empty group not using the consumer protocol
NON_EMPTY_GROUP; a partition of a subscribed topic GROUP_SUBSCRIBED_TO_TOPIC (86), decided
from the members' consumer-protocol subscriptions as Kafka does.
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._groups import coordinator
from protocol.messages.offset_delete import OFFSET_DELETE
from protocol.schema import Message

API = OFFSET_DELETE
MIN_VERSION = 0
MAX_VERSION = 0


async def handle(ctx: RequestContext, request: Message) -> Message:
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    error, errors = await coordinator(ctx).delete_offsets(request.group_id, wanted)
    if error:
        return Message(error_code=error, throttle_time_ms=0, topics=[])
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
