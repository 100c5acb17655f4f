"""WriteTxnMarkers (key 27), version 1 (Kafka 4.0 dropped v0), flexible
(WriteTxnMarkersRequest/Response.json)."""

from protocol.schema import BOOL, INT16, INT32, INT64, STRING, Array, api, array, f

WRITE_TXN_MARKERS = api(
    27,
    "WriteTxnMarkers",
    "1",
    "1+",
    request=(
        f(
            "markers",
            array(
                f("producer_id", INT64),
                f("producer_epoch", INT16),
                f("transaction_result", BOOL),
                f("topics", array(f("name", STRING), f("partition_indexes", Array(INT32)))),
                f("coordinator_epoch", INT32),
            ),
        ),
    ),
    response=(
        f(
            "markers",
            array(
                f("producer_id", INT64),
                f(
                    "topics",
                    array(
                        f("name", STRING),
                        f(
                            "partitions",
                            array(f("partition_index", INT32), f("error_code", INT16)),
                        ),
                    ),
                ),
            ),
        ),
    ),
)
