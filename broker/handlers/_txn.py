"""What the transaction handlers share: Kafka's per-version error rewrites (KafkaApis), and
in a simulated cluster whether the request reached its transactional id's coordinator."""

from __future__ import annotations

from broker.coordinator.transactions import TransactionCoordinator
from broker.core.request_context import RequestContext
from broker.handlers._leadership import GROUP_KEY, TRANSACTION_KEY, not_coordinator
from protocol.errors import ErrorCode


def coordinator(ctx: RequestContext) -> TransactionCoordinator:
    return ctx.state.transactions


def txn_elsewhere(ctx: RequestContext, txn_id: str) -> bool:
    """Another node coordinates ``txn_id``: the request gets NOT_COORDINATOR, as Kafka's
    TransactionCoordinator answers off the leader of the id's __transaction_state partition."""
    cluster = ctx.state.cluster
    return cluster is not None and not_coordinator(ctx, cluster, TRANSACTION_KEY, txn_id)


def group_elsewhere(ctx: RequestContext, group_id: str) -> bool:
    """Another node coordinates the group (TxnOffsetCommit goes to the group's coordinator)."""
    cluster = ctx.state.cluster
    return cluster is not None and not_coordinator(ctx, cluster, GROUP_KEY, group_id)


def for_version(error: ErrorCode, version: int, fenced_since: int) -> ErrorCode:
    """PRODUCER_FENCED is new in each API's version ``fenced_since``; older clients get
    INVALID_PRODUCER_EPOCH (KafkaApis: InitProducerId < 4, EndTxn / AddPartitionsToTxn /
    AddOffsetsToTxn < 2)."""
    if error == ErrorCode.PRODUCER_FENCED and version < fenced_since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
