"""DeleteRecords (key 21), versions 0-2, flexible from 2 (DeleteRecordsRequest/Response.json)."""

from protocol.schema import INT16, INT32, INT64, STRING, api, array, f

DELETE_RECORDS = api(
    21,
    "DeleteRecords",
    "0-2",
    "2+",
    request=(
        f(
            "topics",
            array(
                f("name", STRING),
                f("partitions", array(f("partition_index", INT32), f("offset", INT64))),
            ),
        ),
        f("timeout_ms", INT32),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "topics",
            array(
                f("name", STRING),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("low_watermark", INT64),
                        f("error_code", INT16),
                    ),
                ),
            ),
        ),
    ),
)
