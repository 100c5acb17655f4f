"""EndTxn, versions 0-5: v0-4 transactions v1, v5 transactions v2 (KIP-890 part 2).

TransactionCoordinator.endTransaction: unknown id or producer id ->
INVALID_PRODUCER_ID_MAPPING; another epoch -> PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below
v2); a change in flight -> CONCURRENT_TRANSACTIONS; Ongoing -> PrepareCommit/PrepareAbort
(durable), markers in every partition, pending group offsets committed or dropped,
CompleteCommit/CompleteAbort, then NONE; the same result again (a retry) -> NONE; other
states -> INVALID_TXN_STATE. Deviation: Kafka answers once the Prepare record is written and
writes the markers afterwards; here they are written before the answer (see
broker.coordinator.transactions).
v5 (TransactionCoordinator.endTransaction with TV2): the epoch is bumped at every end and the
markers carry the bumped epoch; a retry is a request whose epoch + 1 is the stored one (NONE
with the stored producer id and epoch after the same result, INVALID_TXN_STATE after the
other); an abort from Empty or after a completed transaction at the current epoch bumps the
epoch without markers; the answer carries the producer id and epoch to use next (-1/-1 with
an error).
Authorization (with an authorizer): WRITE on the transactional id, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._txn import coordinator, for_version, txn_elsewhere
from broker.security.acl import TRANSACTIONAL_ID, WRITE
from protocol.errors import ErrorCode
from protocol.messages.end_txn import END_TXN
from protocol.schema import Message

API = END_TXN
MIN_VERSION = 0
MAX_VERSION = 5
PRODUCER_FENCED_SINCE = 2
TV2_VERSION = 5


async def handle(ctx: RequestContext, request: Message) -> Message:
    if not ctx.authorized(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif txn_elsewhere(ctx, request.transactional_id):
        error = ErrorCode.NOT_COORDINATOR
    elif ctx.version >= TV2_VERSION:
        result = await coordinator(ctx).end_txn_v2(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            request.committed,
        )
        return Message(
            throttle_time_ms=0,
            error_code=result.error,
            producer_id=result.producer_id,
            producer_epoch=result.producer_epoch,
        )
    else:
        error = await coordinator(ctx).end_txn(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed
        )
    return Message(
        throttle_time_ms=0,
        error_code=for_version(error, ctx.version, PRODUCER_FENCED_SINCE),
        producer_id=-1,
        producer_epoch=-1,
    )
