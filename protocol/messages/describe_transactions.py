"""DescribeTransactions (key 65), version 0, flexible (DescribeTransactionsRequest/
Response.json)."""

from protocol.schema import INT16, INT32, INT64, STRING, Array, api, array, f

DESCRIBE_TRANSACTIONS = api(
    65,
    "DescribeTransactions",
    "0",
    "0+",
    request=(f("transactional_ids", Array(STRING)),),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "transaction_states",
            array(
                f("error_code", INT16),
                f("transactional_id", STRING),
                f("transaction_state", STRING),
                f("transaction_timeout_ms", INT32),
                f("transaction_start_time_ms", INT64),
                f("producer_id", INT64),
                f("producer_epoch", INT16),
                f("topics", array(f("topic", STRING), f("partitions", Array(INT32)))),
            ),
        ),
    ),
)
