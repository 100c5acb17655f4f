"""WriteTxnMarkers, version 1 (Kafka 4.0 serves only v1).

Kafka's coordinator sends it to partition leaders; on one node the coordinator writes its
markers itself (broker.coordinator.transactions), so this API serves admin tools:
`kafka-transactions.sh abort` (Admin.abortTransaction) ends a hanging transaction with the
producer id and epoch DescribeProducers reported. As KafkaApis.handleWriteTxnMarkersRequest:
for each marker and partition, a partition that is not online here ->
UNKNOWN_TOPIC_OR_PARTITION; otherwise a COMMIT/ABORT control batch appended with
ProducerAppendInfo.appendEndTxnMarker's checks (an epoch older than the producer's ->
INVALID_PRODUCER_EPOCH, an older coordinator epoch -> TRANSACTION_COORDINATOR_FENCED); an
ABORT of an open transaction adds a .txnindex entry and releases the last stable offset.
A __consumer_offsets-<n> partition commits or drops the producer's pending transactional
offsets of the groups it holds. The answer has one entry per producer id (Kafka's response
is built from a map keyed by producer id), partitions in request order. The markers are
fsynced before the answer (Kafka appends them with acks=-1) and wake fetches parked on
those partitions. The coordinator's state is left alone, as in Kafka.
Deviation: the whole request's markers are answered together.
Authorization (with an authorizer), as KafkaApis.handleWriteTxnMarkersRequest: ALTER on the
cluster (an admin aborting a hanging transaction) or CLUSTER_ACTION (a coordinator), else
every partition answers CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging

from broker.coordinator.transactions import GROUP_OFFSETS_TOPIC, wall_ms
from broker.core.request_context import RequestContext
from broker.handlers._txn import coordinator
from broker.security.acl import ALTER, CLUSTER, CLUSTER_ACTION, CLUSTER_NAME
from protocol.errors import ErrorCode
from protocol.messages.write_txn_markers import WRITE_TXN_MARKERS
from protocol.schema import Message
from storage.partition_log import PartitionLog

API = WRITE_TXN_MARKERS
MIN_VERSION = 1
MAX_VERSION = 1

log = logging.getLogger(__name__)


async def _write(
    ctx: RequestContext, marker: Message, topic: str, index: int, written: list[PartitionLog]
) -> ErrorCode:
    commit = bool(marker.transaction_result)
    if topic == GROUP_OFFSETS_TOPIC:
        count = ctx.state.config.offsets_topic_num_partitions
        if not 0 <= index < count:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return await coordinator(ctx).offsets_marker(marker.producer_id, index, commit, count)
    plog = ctx.state.store.partition(topic, index)
    if plog is None or plog.offline is not None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    result = plog.append_marker(
        marker.producer_id,
        marker.producer_epoch,
        marker.coordinator_epoch,
        commit=commit,
        now_ms=wall_ms(),
    )
    if result.error == ErrorCode.NONE:
        written.append(plog)
        log.info(
            "%s marker for producer id %d epoch %d written to %s at offset %d",
            "COMMIT" if commit else "ABORT",
            marker.producer_id,
            marker.producer_epoch,
            plog.name,
            result.base_offset,
        )
    return result.error


async def handle(ctx: RequestContext, request: Message) -> Message:
    results: dict[int, dict[str, list[Message]]] = {}
    written: list[PartitionLog] = []
    # KafkaApis.handleWriteTxnMarkersRequest: ALTER (denial not logged), else CLUSTER_ACTION
    # on the cluster; else every partition answers CLUSTER_AUTHORIZATION_FAILED.
    allowed = ctx.authorized(ALTER, CLUSTER, CLUSTER_NAME, log_denied=False) or ctx.authorized(
        CLUSTER_ACTION, CLUSTER, CLUSTER_NAME
    )
    for marker in request.markers:
        topics = results.setdefault(marker.producer_id, {})
        for topic in marker.topics:
            for index in topic.partition_indexes:
                error = (
                    await _write(ctx, marker, topic.name, index, written)
                    if allowed
                    else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                )
                topics.setdefault(topic.name, []).append(
                    Message(partition_index=index, error_code=error)
                )
    if written:
        ctx.state.notify_appended(written)
        await ctx.state.flusher.flush(written)
    return Message(
        markers=[
            Message(
                producer_id=pid,
                topics=[Message(name=name, partitions=parts) for name, parts in topics.items()],
            )
            for pid, topics in results.items()
        ]
    )
