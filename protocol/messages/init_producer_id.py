"""InitProducerId (key 22), versions 0-5, flexible from 2 (InitProducerIdRequest/Response.json).

Kafka 4.0 serves 0-5; v6 (KIP-939 two-phase commit) came later and is not described.
"""

from protocol.schema import INT16, INT32, INT64, STRING, api, f

INIT_PRODUCER_ID = api(
    22,
    "InitProducerId",
    "0-5",
    "2+",
    request=(
        f("transactional_id", STRING, nullable="0+"),
        f("transaction_timeout_ms", INT32),
        f("producer_id", INT64, "3+", default=-1),
        f("producer_epoch", INT16, "3+", default=-1),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("producer_id", INT64, default=-1),
        f("producer_epoch", INT16),
    ),
)
