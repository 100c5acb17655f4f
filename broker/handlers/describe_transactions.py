"""DescribeTransactions, version 0 (KIP-664).

TransactionCoordinator.handleDescribeTransactions, per transactional id in request order:
"" -> INVALID_REQUEST; unknown (or expired) -> TRANSACTIONAL_ID_NOT_FOUND; else the state's
name as Kafka spells it (Empty, Ongoing, PrepareCommit, ...), timeout, start time (-1 until
the first transaction; kept after it ends, as Kafka's txnStartTimestamp), producer id and
epoch and the partitions of the transaction (group offsets included as
__consumer_offsets-<n>; none once it completed), grouped by topic in the order added.
Authorization (with an authorizer), as KafkaApis.handleDescribeTransactionsRequest: DESCRIBE
on each transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED; topics the caller may
not DESCRIBE are left out of the partitions listed.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._txn import coordinator
from broker.security.acl import DESCRIBE, TOPIC, TRANSACTIONAL_ID
from protocol.errors import ErrorCode
from protocol.messages.describe_transactions import DESCRIBE_TRANSACTIONS
from protocol.schema import Message
from storage.txn_state_log import STATE_NAMES

API = DESCRIBE_TRANSACTIONS
MIN_VERSION = 0
MAX_VERSION = 0


def _error(txn_id: str, error: ErrorCode) -> Message:
    return Message(
        error_code=error,
        transactional_id=txn_id,
        transaction_state="",
        transaction_timeout_ms=0,
        transaction_start_time_ms=-1,
        producer_id=-1,
        producer_epoch=-1,
        topics=[],
    )


def _describe(ctx: RequestContext, txn_id: str) -> Message:
    if txn_id == "":
        return _error(txn_id, ErrorCode.INVALID_REQUEST)
    if not ctx.authorized(DESCRIBE, TRANSACTIONAL_ID, txn_id):
        # KafkaApis.handleDescribeTransactionsRequest: DESCRIBE on the transactional id.
        return _error(txn_id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    meta = coordinator(ctx).txns.get(txn_id)
    if meta is None:
        return _error(txn_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    by_topic: dict[str, list[int]] = {}
    for topic, index in meta.partitions:
        by_topic.setdefault(topic, []).append(index)
    return Message(
        error_code=ErrorCode.NONE,
        transactional_id=txn_id,
        transaction_state=STATE_NAMES[meta.state],
        transaction_timeout_ms=meta.timeout_ms,
        transaction_start_time_ms=meta.start_ms,
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        topics=[
            Message(topic=t, partitions=p)
            for t, p in by_topic.items()
            if ctx.authorized(DESCRIBE, TOPIC, t)
        ],
    )


def handle(ctx: RequestContext, request: Message) -> Message:
    return Message(
        throttle_time_ms=0,
        transaction_states=[_describe(ctx, txn_id) for txn_id in request.transactional_ids],
    )
