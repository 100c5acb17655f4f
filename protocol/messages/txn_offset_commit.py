"""TxnOffsetCommit (key 28), versions 0-5, flexible from 3 (TxnOffsetCommitRequest/
Response.json).

v3 adds the consumer's generation, member id and instance id (KIP-447); v5 is transactions
v2 (the group is added to the transaction implicitly).
"""

from protocol.schema import INT16, INT32, INT64, STRING, api, array, f

TXN_OFFSET_COMMIT = api(
    28,
    "TxnOffsetCommit",
    "0-5",
    "3+",
    request=(
        f("transactional_id", STRING),
        f("group_id", STRING),
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("generation_id", INT32, "3+", default=-1),
        f("member_id", STRING, "3+", default=""),
        f("group_instance_id", STRING, "3+", nullable="3+", default=None),
        f(
            "topics",
            array(
                f("name", STRING),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("committed_offset", INT64),
                        f("committed_leader_epoch", INT32, "2+", default=-1),
                        f("committed_metadata", STRING, nullable="0+"),
                    ),
                ),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "topics",
            array(
                f("name", STRING),
                f("partitions", array(f("partition_index", INT32), f("error_code", INT16))),
            ),
        ),
    ),
)
