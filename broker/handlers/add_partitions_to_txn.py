"""AddPartitionsToTxn, versions 0-5.

v0-3 (clients): TransactionCoordinator.handleAddPartitionsToTransaction for one
transaction: "" -> INVALID_REQUEST for every partition; unknown topics or partitions get
UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED; otherwise one error for
all partitions: unknown id or producer id -> INVALID_PRODUCER_ID_MAPPING, a change in
flight -> CONCURRENT_TRANSACTIONS, another epoch -> PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
below v2), PrepareCommit/PrepareAbort -> CONCURRENT_TRANSACTIONS; else the partitions join
the transaction (Ongoing, made durable before the answer).
v4-5 (Kafka's broker-to-coordinator form): several transactions, each either verified only
(VerifyOnly: NONE for partitions in the ongoing transaction, TRANSACTION_ABORTABLE for the
others, or the producer's error) or added; top-level error NONE.
Authorization, as KafkaApis.handleAddPartitionsToTxnRequest: v4+ come only from brokers and
need CLUSTER_ACTION on the cluster (else the top-level CLUSTER_AUTHORIZATION_FAILED and no
results), nothing else; v0-3 need WRITE on the transactional id, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED everywhere, and WRITE on each topic, else
TOPIC_AUTHORIZATION_FAILED there (always for an internal topic, which a client may never add),
UNKNOWN_TOPIC_OR_PARTITION for unknown partitions and OPERATION_NOT_ATTEMPTED for the rest.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._txn import coordinator, for_version, txn_elsewhere
from broker.security.acl import (
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)
from protocol.errors import ErrorCode
from protocol.messages.add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from protocol.schema import Message

API = ADD_PARTITIONS_TO_TXN
MIN_VERSION = 0
MAX_VERSION = 5
PRODUCER_FENCED_SINCE = 2
FIRST_BATCHED_VERSION = 4

_TopicPartition = tuple[str, int]
# Kafka's Topic.INTERNAL_TOPICS.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


async def handle(ctx: RequestContext, request: Message) -> Message:
    if ctx.version >= FIRST_BATCHED_VERSION:
        if not ctx.authorized(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return Message(
                throttle_time_ms=0,
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                results_by_transaction=[],
            )
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
    from_client = ctx.version < FIRST_BATCHED_VERSION
    if from_client and not ctx.authorized(WRITE, TRANSACTIONAL_ID, txn_id):
        return dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if txn_elsewhere(ctx, txn_id):
        return dict.fromkeys(wanted, ErrorCode.NOT_COORDINATOR)
    # KafkaApis.handleAddPartitionsToTxnRequest: a client's request needs WRITE on each
    # topic (checked once per topic); any denied or unknown partition fails the whole
    # transaction, the others then not attempted.
    names = dict.fromkeys(name for name, _ in wanted)
    writable = (
        {t for t in names if t not in INTERNAL_TOPICS and ctx.authorized(WRITE, TOPIC, t)}
        if from_client
        else set(names)
    )
    store = ctx.state.store
    failed: dict[_TopicPartition, ErrorCode] = {}
    for tp in wanted:
        if tp[0] not in writable:
            failed[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif store.partition(*tp) is None:
            failed[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if failed:
        return {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
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
