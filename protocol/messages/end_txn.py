"""EndTxn (key 26), versions 0-5, flexible from 3 (EndTxnRequest/Response.json).

v5 is transactions v2 (KIP-890 part 2): the answer carries the producer id and epoch the
producer continues with.
"""

from protocol.schema import BOOL, INT16, INT32, INT64, STRING, api, f

END_TXN = api(
    26,
    "EndTxn",
    "0-5",
    "3+",
    request=(
        f("transactional_id", STRING),
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("committed", BOOL),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("producer_id", INT64, "5+", default=-1),
        f("producer_epoch", INT16, "5+", default=-1),
    ),
)
