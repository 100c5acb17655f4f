"""ListTransactions (key 66), versions 0-1, flexible (ListTransactionsRequest/Response.json).

v1 adds DurationFilter (KIP-994).
"""

from protocol.schema import INT16, INT32, INT64, STRING, Array, api, array, f

LIST_TRANSACTIONS = api(
    66,
    "ListTransactions",
    "0-1",
    "0+",
    request=(
        f("state_filters", Array(STRING)),
        f("producer_id_filters", Array(INT64)),
        f("duration_filter", INT64, "1+", default=-1),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("unknown_state_filters", Array(STRING)),
        f(
            "transaction_states",
            array(
                f("transactional_id", STRING),
                f("producer_id", INT64),
                f("transaction_state", STRING),
            ),
        ),
    ),
)
