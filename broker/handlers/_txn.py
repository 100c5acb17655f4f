"""What the transaction handlers share: Kafka's per-version error rewrites (KafkaApis)."""

from __future__ import annotations

from broker.coordinator.transactions import TransactionCoordinator
from broker.core.request_context import RequestContext
from protocol.errors import ErrorCode


def coordinator(ctx: RequestContext) -> TransactionCoordinator:
    return ctx.state.transactions


def for_version(error: ErrorCode, version: int, fenced_since: int) -> ErrorCode:
    """PRODUCER_FENCED is new in each API's version ``fenced_since``; older clients get
    INVALID_PRODUCER_EPOCH (KafkaApis: InitProducerId < 4, EndTxn / AddPartitionsToTxn /
    AddOffsetsToTxn < 2)."""
    if error == ErrorCode.PRODUCER_FENCED and version < fenced_since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
