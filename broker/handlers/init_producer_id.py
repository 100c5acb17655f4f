"""InitProducerId, versions 0-5.

Without a transactional id: always a new producer id with epoch 0, never reused, even
across restarts (ids come from storage.producer_ids, which persists reserved blocks the
way Kafka's ProducerIdManager reserves blocks of 1000). Kafka does the same for an
idempotent producer that sends its current id and epoch (v3+): it gets a fresh id.

With a transactional id: transactions are not implemented yet. The answer is
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), which every client treats as fatal, so a
transactional producer fails at init_transactions() instead of hanging in retries.

With an authorizer: IDEMPOTENT_WRITE on the cluster or WRITE on some topic, else
CLUSTER_AUTHORIZATION_FAILED (KafkaApis.handleInitProducerIdRequest, KIP-679).
"""

from __future__ import annotations

import logging

from broker.dispatch import RequestContext
from broker.security.acl import CLUSTER, CLUSTER_NAME, IDEMPOTENT_WRITE, TOPIC, WRITE
from protocol.errors import ErrorCode
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.schema import Message

API = INIT_PRODUCER_ID
MIN_VERSION = 0
MAX_VERSION = 5

log = logging.getLogger(__name__)


def handle(ctx: RequestContext, request: Message) -> Message:
    if request.transactional_id is not None:
        log.warning(
            "refusing transactional id %r: transactions are not supported (%s)",
            request.transactional_id,
            ctx.describe(),
        )
        return Message(
            throttle_time_ms=0,
            error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            producer_id=-1,
            producer_epoch=-1,
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
