"""AddOffsetsToTxn, versions 0-4.

TransactionCoordinator.handleAddPartitionsToTransaction with the group's offsets partition
(``__consumer_offsets``-``abs(groupId.hashCode) % offsets.topic.num.partitions``): the same
checks and errors as AddPartitionsToTxn v0-3 (PRODUCER_FENCED as INVALID_PRODUCER_EPOCH below
v2); "" -> INVALID_REQUEST. The group's TxnOffsetCommit offsets then wait for the transaction's end.
Authorization (with an authorizer): WRITE on the transactional id, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._txn import coordinator, for_version, txn_elsewhere
from broker.security.acl import GROUP, READ, TRANSACTIONAL_ID, WRITE
from protocol.errors import ErrorCode
from protocol.messages.add_offsets_to_txn import ADD_OFFSETS_TO_TXN
from protocol.schema import Message

API = ADD_OFFSETS_TO_TXN
MIN_VERSION = 0
MAX_VERSION = 4
PRODUCER_FENCED_SINCE = 2


async def handle(ctx: RequestContext, request: Message) -> Message:
    if not request.transactional_id:
        error = ErrorCode.INVALID_REQUEST
    elif not ctx.authorized(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.authorized(READ, GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif txn_elsewhere(ctx, request.transactional_id):
        error = ErrorCode.NOT_COORDINATOR
    else:
        error = await coordinator(ctx).add_offsets(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            request.group_id,
            offsets_partitions=ctx.state.config.offsets_topic_num_partitions,
        )
    return Message(
        throttle_time_ms=0, error_code=for_version(error, ctx.version, PRODUCER_FENCED_SINCE)
    )
