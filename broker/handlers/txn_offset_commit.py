"""TxnOffsetCommit, versions 0-5 (v5: transactions v2).

As Kafka's group coordinator (OffsetMetadataManager.validateTransactionalOffsetCommit, then
the transactional append to the offsets partition):
- unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION for it;
- the group: "" -> INVALID_GROUP_ID; unknown with generation >= 0 -> ILLEGAL_GENERATION
  (< 0 creates a simple group); Dead -> COORDINATOR_NOT_AVAILABLE; v3+ member id / instance
  id / generation checked when given (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
  ILLEGAL_GENERATION: KIP-447 zombie fencing); without them accepted in any state;
- the transaction (KIP-890 verification of the group's offsets partition): unknown
  producer id -> INVALID_PRODUCER_ID_MAPPING, another epoch -> PRODUCER_FENCED mapped to
  INVALID_PRODUCER_EPOCH (the offsets partition's epoch check), Prepare states ->
  CONCURRENT_TRANSACTIONS, AddOffsetsToTxn not done -> TRANSACTION_ABORTABLE mapped to
  INVALID_TXN_STATE below v5 (as Produce); v5 adds the offsets partition to the transaction
  itself (KIP-890 part 2, AddPartitionsToTxnManager's addPartition operation: Empty or a
  completed transaction becomes Ongoing) instead of verifying it;
- metadata over 4096 bytes -> OFFSET_METADATA_TOO_LARGE.
Accepted offsets are kept with the transaction (durable before the answer) and become the
group's committed offsets only when the transaction commits; an abort drops them.
OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for them meanwhile.
Authorization (with an authorizer): WRITE on the transactional id, then READ on the group
(each answered on every partition), READ on each topic (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from broker.coordinator.groups.coordinator import OFFSET_METADATA_MAX_BYTES
from broker.coordinator.transactions import GROUP_OFFSETS_TOPIC, partition_for
from broker.core.request_context import RequestContext
from broker.handlers._groups import offset_commit_answer
from broker.handlers._txn import coordinator, group_elsewhere
from broker.security.acl import GROUP, READ, TOPIC, TRANSACTIONAL_ID, WRITE
from protocol.errors import ErrorCode
from protocol.messages.txn_offset_commit import TXN_OFFSET_COMMIT
from protocol.schema import Message
from storage.txn_state_log import PendingOffset

API = TXN_OFFSET_COMMIT
MIN_VERSION = 0
MAX_VERSION = 5
IMPLICIT_ADD_VERSION = 5

# ReplicaManager's mapping of verification errors for an append to a partition.
_APPEND_ERRORS = {
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.TRANSACTION_ABORTABLE: ErrorCode.INVALID_TXN_STATE,
}


async def handle(ctx: RequestContext, request: Message) -> Message:
    errors: dict[tuple[str, int], int] = {}
    valid: list[PendingOffset] = []
    store = ctx.state.store
    # KafkaApis.handleTxnOffsetCommitRequest: WRITE on the transactional id, READ on the
    # group (each failure answered on every partition), READ on each topic.
    whole = None
    if not ctx.authorized(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        whole = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.authorized(READ, GROUP, request.group_id):
        whole = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif group_elsewhere(ctx, request.group_id):
        whole = ErrorCode.NOT_COORDINATOR
    for topic in request.topics:
        topic_denied = whole is None and not ctx.authorized(READ, TOPIC, topic.name)
        for part in topic.partitions:
            key = (topic.name, part.partition_index)
            if whole is not None:
                errors[key] = whole
                continue
            if topic_denied:
                errors[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if store.partition(*key) is None:
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            valid.append(
                PendingOffset(
                    request.group_id,
                    topic.name,
                    part.partition_index,
                    part.committed_offset,
                    part.committed_leader_epoch,
                    part.committed_metadata,
                )
            )
    if valid:
        error = await _check(ctx, request)
        accepted = []
        for item in valid:
            size = len(item.metadata.encode()) if item.metadata is not None else 0
            if error:
                errors[(item.topic, item.partition)] = error
            elif size > OFFSET_METADATA_MAX_BYTES:
                errors[(item.topic, item.partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted.append(item)
        if accepted:
            stored = await coordinator(ctx).add_pending_offsets(request.transactional_id, accepted)
            for item in accepted:
                errors[(item.topic, item.partition)] = stored
    return offset_commit_answer(request, errors)


async def _check(ctx: RequestContext, request: Message) -> int:
    streams_error = ctx.state.streams.validate_commit(
        request.group_id, request.member_id, request.generation_id, ctx.version, txn=True
    )
    group_error = (
        ctx.state.groups.validate_txn_commit(
            request.group_id, request.member_id, request.group_instance_id, request.generation_id
        )
        if streams_error is None
        else streams_error
    )
    if group_error:
        return group_error
    count = ctx.state.config.offsets_topic_num_partitions
    partition = (GROUP_OFFSETS_TOPIC, partition_for(request.group_id, count))
    if ctx.version >= IMPLICIT_ADD_VERSION:
        error = await coordinator(ctx).add_implicitly(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            [partition],
            (request.group_id,),
        )
        return ErrorCode.INVALID_PRODUCER_EPOCH if error == ErrorCode.PRODUCER_FENCED else error
    error = coordinator(ctx).verify(
        request.transactional_id, request.producer_id, request.producer_epoch, partition
    )
    return _APPEND_ERRORS.get(error, error)
