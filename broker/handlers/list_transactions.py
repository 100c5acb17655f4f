"""ListTransactions, versions 0-1 (KIP-664; v1 adds the duration filter, KIP-994).

TransactionStateManager.listTransactionStates: every transactional id this coordinator
knows, filtered by state names (a name that is no state is returned in
unknown_state_filters and matches nothing), by producer ids, and (v1, filter >= 0) by
running time: only ids whose `now - transaction start` exceeds the filter (an id that never
started a transaction has start -1, so it passes, as in Kafka). Empty filters select all.
No deviations: Kafka's COORDINATOR_LOAD_IN_PROGRESS never happens here (the state log is
loaded before the listener opens).
"""

from __future__ import annotations

from broker.coordinator.transactions import wall_ms
from broker.core.request_context import RequestContext
from broker.handlers._txn import coordinator
from broker.security.acl import DESCRIBE, TRANSACTIONAL_ID
from protocol.errors import ErrorCode
from protocol.messages.list_transactions import LIST_TRANSACTIONS
from protocol.schema import Message
from storage.txn_state_log import STATE_NAMES

API = LIST_TRANSACTIONS
MIN_VERSION = 0
MAX_VERSION = 1

_STATES_BY_NAME = {name: state for state, name in STATE_NAMES.items()}


def handle(ctx: RequestContext, request: Message) -> Message:
    wanted_states = {_STATES_BY_NAME[n] for n in request.state_filters if n in _STATES_BY_NAME}
    unknown = [n for n in request.state_filters if n not in _STATES_BY_NAME]
    pids = set(request.producer_id_filters)
    duration = request.duration_filter if ctx.version >= 1 else -1
    now = wall_ms()
    states = [
        Message(
            transactional_id=meta.transactional_id,
            producer_id=meta.producer_id,
            transaction_state=STATE_NAMES[meta.state],
        )
        for meta in coordinator(ctx).txns.values()
        if (not pids or meta.producer_id in pids)
        and (not request.state_filters or meta.state in wanted_states)
        and (duration < 0 or now - meta.start_ms > duration)
        # KafkaApis.handleListTransactionsRequest lists only what the caller may DESCRIBE.
        and ctx.authorized(DESCRIBE, TRANSACTIONAL_ID, meta.transactional_id, log_denied=False)
    ]
    return Message(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        unknown_state_filters=unknown,
        transaction_states=states,
    )
