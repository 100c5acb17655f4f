"""DescribeQuorum (key 55), versions 0-2, flexible in all (KIP-595, KIP-836, KIP-853).

v1 adds the replicas' last fetch and caught-up timestamps; v2 error messages, the voters'
directory ids and their listeners (nodes).
"""

from protocol.schema import INT16, INT32, INT64, STRING, UINT16, UUID, api, array, f

_REPLICA_STATE = array(
    f("replica_id", INT32),
    f("replica_directory_id", UUID, "2+"),
    f("log_end_offset", INT64),
    f("last_fetch_timestamp", INT64, "1+", default=-1),
    f("last_caught_up_timestamp", INT64, "1+", default=-1),
)

DESCRIBE_QUORUM = api(
    55,
    "DescribeQuorum",
    "0-2",
    "0+",
    request=(
        f(
            "topics",
            array(
                f("topic_name", STRING),
                f("partitions", array(f("partition_index", INT32))),
            ),
        ),
    ),
    response=(
        f("error_code", INT16),
        f("error_message", STRING, "2+", nullable="2+"),
        f(
            "topics",
            array(
                f("topic_name", STRING),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("error_code", INT16),
                        f("error_message", STRING, "2+", nullable="2+"),
                        f("leader_id", INT32),
                        f("leader_epoch", INT32),
                        f("high_watermark", INT64),
                        f("current_voters", _REPLICA_STATE),
                        f("observers", _REPLICA_STATE),
                    ),
                ),
            ),
        ),
        f(
            "nodes",
            array(
                f("node_id", INT32, "2+"),
                f(
                    "listeners",
                    array(
                        f("name", STRING, "2+"),
                        f("host", STRING, "2+"),
                        f("port", UINT16, "2+"),
                    ),
                    "2+",
                ),
            ),
            "2+",
        ),
    ),
)
