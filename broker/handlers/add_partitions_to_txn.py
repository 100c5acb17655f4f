"""AddPartitionsToTxn, versions 0-5.

v0-3 (clients): TransactionCoordinator.handleAddPartitionsToTransaction for one
transaction: "" -> INVALID_REQUEST for every partition; unknown topics or partitions get
UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED; otherwise one error for
all partitions: unknown id or producer id -> INVALID_PRODUCER_ID_MAPPING, a change in
flight -> CONCURRENT_TRANSACTIONS, another epoch -> PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
below v2), PrepareCommit/PrepareAbort -> CONCURRENT_TRANSACTIONS; else the partitions join
the transaction (Ongoing, made durable before the answer).
v4-5 (Kafka's broker-to-coordinator form, served as Kafka serves it with no authorizer):
several transactions, each either verified only (VerifyOnly: NONE for partitions in the
ongoing transaction, TRANSACTION_ABORTABLE for the others, or the producer's error) or
added; top-level error NONE.
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._txn import coordinator, for_version
from protocol.errors import ErrorCode
from protocol.messages.add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from protocol.schema import Message

API = ADD_PARTITIONS_TO_TXN
MIN_VERSION = 0
MAX_VERSION = 5
PRODUCER_FENCED_SINCE = 2
FIRST_BATCHED_VERSION = 4

_TopicPartition = tuple[str, int]


async def handle(ctx: RequestContext, request: Message) -> Message:
    if ctx.version >= FIRST_BATCHED_VERSION:
        results = []
        for txn in request.transactions:
            errors = await _one(
                ctx,
                txn.transactional_id,
                txn.producer_id,
                txn.producer_epoch,
                txn.topics,
                txn.verify_only,
            )
            results.append(
                Message(transactional_id=txn.transactional_id, topic_results=_by_topic(errors))
            )
        return Message(
            throttle_time_ms=0, error_code=ErrorCode.NONE, results_by_transaction=results
        )
    errors = await _one(
        ctx,
        request.v3_and_below_transactional_id,
        request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch,
        request.v3_and_below_topics,
        False,
    )
    return Message(throttle_time_ms=0, results_by_topic_v3_and_below=_by_topic(errors))


async def _one(
    ctx: RequestContext,
    txn_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: list[Message],
    verify_only: bool,
) -> dict[_TopicPartition, ErrorCode]:
    wanted = list(dict.fromkeys((t.name, p) for t in topics for p in t.partitions))
    if not txn_id:
        return dict.fromkeys(wanted, ErrorCode.INVALID_REQUEST)
    store = ctx.state.store
    unknown = [tp for tp in wanted if store.partition(*tp) is None]
    if unknown:
        return {
            tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if tp in unknown
            else ErrorCode.OPERATION_NOT_ATTEMPTED
            for tp in wanted
        }
    txns = coordinator(ctx)
    if verify_only:
        return {tp: txns.verify(txn_id, producer_id, producer_epoch, tp) for tp in wanted}
    error = await txns.add_partitions(txn_id, producer_id, producer_epoch, wanted)
    return dict.fromkeys(wanted, for_version(error, ctx.version, PRODUCER_FENCED_SINCE))


def _by_topic(errors: dict[_TopicPartition, ErrorCode]) -> list[Message]:
    topics: dict[str, list[Message]] = {}
    for (name, index), error in errors.items():
        topics.setdefault(name, []).append(
            Message(partition_index=index, partition_error_code=error)
        )
    return [Message(name=name, results_by_partition=parts) for name, parts in topics.items()]
