"""Metadata (key 3), versions 0-13, flexible from 9 (MetadataRequest/Response.json)."""

from protocol.schema import BOOL, INT16, INT32, STRING, UUID, Array, api, array, f

METADATA = api(
    3,
    "Metadata",
    "0-13",
    "9+",
    request=(
        # v0: an empty array means "all topics"; v1+: null means all topics.
        f(
            "topics",
            array(f("topic_id", UUID, "10+"), f("name", STRING, nullable="10+")),
            nullable="1+",
        ),
        f("allow_auto_topic_creation", BOOL, "4+", default=True),
        f("include_cluster_authorized_operations", BOOL, "8-10"),
        f("include_topic_authorized_operations", BOOL, "8+"),
    ),
    response=(
        f("throttle_time_ms", INT32, "3+"),
        f(
            "brokers",
            array(
                f("node_id", INT32),
                f("host", STRING),
                f("port", INT32),
                f("rack", STRING, "1+", nullable="1+", default=None),
            ),
        ),
        f("cluster_id", STRING, "2+", nullable="2+", default=None),
        f("controller_id", INT32, "1+", default=-1),
        f(
            "topics",
            array(
                f("error_code", INT16),
                f("name", STRING, nullable="12+"),
                f("topic_id", UUID, "10+"),
                f("is_internal", BOOL, "1+"),
                f(
                    "partitions",
                    array(
                        f("error_code", INT16),
                        f("partition_index", INT32),
                        f("leader_id", INT32),
                        f("leader_epoch", INT32, "7+", default=-1),
                        f("replica_nodes", Array(INT32)),
                        f("isr_nodes", Array(INT32)),
                        f("offline_replicas", Array(INT32), "5+"),
                    ),
                ),
                f("topic_authorized_operations", INT32, "8+", default=-2147483648),
            ),
        ),
        f("cluster_authorized_operations", INT32, "8-10", default=-2147483648),
        f("error_code", INT16, "13+"),
    ),
)
