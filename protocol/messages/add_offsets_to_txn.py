"""AddOffsetsToTxn (key 25), versions 0-4, flexible from 3 (AddOffsetsToTxnRequest/
Response.json)."""

from protocol.schema import INT16, INT32, INT64, STRING, api, f

ADD_OFFSETS_TO_TXN = api(
    25,
    "AddOffsetsToTxn",
    "0-4",
    "3+",
    request=(
        f("transactional_id", STRING),
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("group_id", STRING),
    ),
    response=(f("throttle_time_ms", INT32), f("error_code", INT16)),
)
