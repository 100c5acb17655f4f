"""InitProducerId, versions 0-5.

Without a transactional id: always a new producer id with epoch 0, never reused, even
across restarts (ids come from storage.producer_ids, which persists reserved blocks the
way Kafka's ProducerIdManager reserves blocks of 1000). Kafka does the same for an
idempotent producer that sends its current id and epoch (v3+): it gets a fresh id.

With a transactional id: broker.coordinator.transactions
(TransactionCoordinator.handleInitProducerId):
"" -> INVALID_REQUEST; a timeout <= 0 or above transaction.max.timeout.ms ->
INVALID_TRANSACTION_TIMEOUT; only one of producer id / epoch given -> INVALID_REQUEST; a new
id gets a new producer id with epoch 0, a known one its epoch bumped (KIP-360 re-init with
the current id and epoch, a retry of the last bump answered again); an open transaction
is fenced (epoch bump, aborted) and the answer is CONCURRENT_TRANSACTIONS, so the client
retries. PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH below v4 (KafkaApis).
With an authorizer, without a transactional id: IDEMPOTENT_WRITE on the cluster or WRITE on
some topic, else CLUSTER_AUTHORIZATION_FAILED (KafkaApis.handleInitProducerIdRequest,
KIP-679); with one: WRITE on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging

from broker.core.request_context import RequestContext
from broker.handlers._txn import coordinator, for_version, txn_elsewhere
from broker.security.acl import (
    CLUSTER,
    CLUSTER_NAME,
    IDEMPOTENT_WRITE,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)
from protocol.errors import ErrorCode
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.schema import Message

API = INIT_PRODUCER_ID
MIN_VERSION = 0
MAX_VERSION = 5
PRODUCER_FENCED_SINCE = 4

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: Message) -> Message:
    if request.transactional_id is not None:
        if request.transactional_id and not ctx.authorized(
            WRITE, TRANSACTIONAL_ID, request.transactional_id
        ):
            return Message(
                throttle_time_ms=0,
                error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                producer_id=-1,
                producer_epoch=-1,
            )
        if request.transactional_id and txn_elsewhere(ctx, request.transactional_id):
            return Message(
                throttle_time_ms=0,
                error_code=ErrorCode.NOT_COORDINATOR,
                producer_id=-1,
                producer_epoch=-1,
            )
        result = await coordinator(ctx).init_producer_id(
            request.transactional_id,
            request.transaction_timeout_ms,
            request.producer_id,
            request.producer_epoch,
        )
        if result.error:
            log.info(
                "InitProducerId for %r: %s (%s)",
                request.transactional_id,
                result.error.name,
                ctx.describe(),
            )
        return Message(
            throttle_time_ms=0,
            error_code=for_version(result.error, ctx.version, PRODUCER_FENCED_SINCE),
            producer_id=result.producer_id,
            producer_epoch=result.producer_epoch,
        )
    if not _may_write_idempotently(ctx):
        return Message(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            producer_id=-1,
            producer_epoch=-1,
        )
    producer_id = ctx.state.producer_ids.next_id()
    log.debug("producer id %d for %s", producer_id, ctx.describe())
    return Message(
        throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0
    )


def _may_write_idempotently(ctx: RequestContext) -> bool:
    """KafkaApis.handleInitProducerIdRequest (KIP-679): IDEMPOTENT_WRITE on the cluster, or
    WRITE on any topic."""
    authorizer = ctx.state.authorizer
    if authorizer is None or ctx.authorized(
        IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME, log_denied=False
    ):
        return True
    return authorizer.authorize_any(str(ctx.principal), ctx.host, WRITE, TOPIC)
