"""AddPartitionsToTxn (key 24), versions 0-5, flexible from 3 (AddPartitionsToTxnRequest/
Response.json).

v0-3 come from clients (one transaction); v4+ are Kafka's broker-to-coordinator form
(batched transactions, VerifyOnly, a top-level error code).
"""

from protocol.schema import BOOL, INT16, INT32, INT64, STRING, Array, api, array, f

_TOPIC = (f("name", STRING), f("partitions", Array(INT32)))
_TOPIC_RESULT = (
    f("name", STRING),
    f(
        "results_by_partition",
        array(f("partition_index", INT32), f("partition_error_code", INT16)),
    ),
)

ADD_PARTITIONS_TO_TXN = api(
    24,
    "AddPartitionsToTxn",
    "0-5",
    "3+",
    request=(
        f(
            "transactions",
            array(
                f("transactional_id", STRING, "4+"),
                f("producer_id", INT64, "4+"),
                f("producer_epoch", INT16, "4+"),
                f("verify_only", BOOL, "4+", default=False),
                f("topics", array(*_TOPIC), "4+"),
            ),
            "4+",
        ),
        f("v3_and_below_transactional_id", STRING, "0-3"),
        f("v3_and_below_producer_id", INT64, "0-3"),
        f("v3_and_below_producer_epoch", INT16, "0-3"),
        f("v3_and_below_topics", array(*_TOPIC), "0-3"),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16, "4+"),
        f(
            "results_by_transaction",
            array(
                f("transactional_id", STRING, "4+"),
                f("topic_results", array(*_TOPIC_RESULT), "4+"),
            ),
            "4+",
        ),
        f("results_by_topic_v3_and_below", array(*_TOPIC_RESULT), "0-3"),
    ),
)
