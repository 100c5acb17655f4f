"""EndTxn, versions 0-4 (transactions v1).

TransactionCoordinator.endTransaction: unknown id or producer id ->
INVALID_PRODUCER_ID_MAPPING; another epoch -> PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below
v2); a change in flight -> CONCURRENT_TRANSACTIONS; Ongoing -> PrepareCommit/PrepareAbort
(durable), markers in every partition, pending group offsets committed or dropped,
CompleteCommit/CompleteAbort, then NONE; the same result again (a retry) -> NONE; other
states -> INVALID_TXN_STATE. Deviation: Kafka answers once the Prepare record is written and
writes the markers afterwards; here they are written before the answer (see
broker.transactions).
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._txn import coordinator, for_version
from protocol.messages.end_txn import END_TXN
from protocol.schema import Message

API = END_TXN
MIN_VERSION = 0
MAX_VERSION = 4
PRODUCER_FENCED_SINCE = 2


async def handle(ctx: RequestContext, request: Message) -> Message:
    error = await coordinator(ctx).end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch, request.committed
    )
    return Message(
        throttle_time_ms=0,
        error_code=for_version(error, ctx.version, PRODUCER_FENCED_SINCE),
        producer_id=-1,
        producer_epoch=-1,
    )
