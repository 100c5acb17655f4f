"""CreateTopics (key 19), versions 2-7, flexible from 5 (CreateTopicsRequest/Response.json).

Kafka 4.0 serves 2-7 (KIP-896 removed v0-1); fields are annotated with the versions the JSON
gives them, so validate_only ("1+") is present in every served version.
"""

from protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, Array, api, array, f

CREATE_TOPICS = api(
    19,
    "CreateTopics",
    "2-7",
    "5+",
    request=(
        f(
            "topics",
            array(
                f("name", STRING),
                f("num_partitions", INT32),
                f("replication_factor", INT16),
                f(
                    "assignments",
                    array(f("partition_index", INT32), f("broker_ids", Array(INT32))),
                ),
                f("configs", array(f("name", STRING), f("value", STRING, nullable="0+"))),
            ),
        ),
        f("timeout_ms", INT32, default=60000),
        f("validate_only", BOOL, "1+"),
    ),
    response=(
        f("throttle_time_ms", INT32, "2+"),
        f(
            "topics",
            array(
                f("name", STRING),
                f("topic_id", UUID, "7+"),
                f("error_code", INT16),
                f("error_message", STRING, "1+", nullable="0+"),
                f("topic_config_error_code", INT16, "5+", tag=0),
                f("num_partitions", INT32, "5+", default=-1),
                f("replication_factor", INT16, "5+", default=-1),
                f(
                    "configs",
                    array(
                        f("name", STRING, "5+"),
                        f("value", STRING, "5+", nullable="5+"),
                        f("read_only", BOOL, "5+"),
                        f("config_source", INT8, "5+", default=-1),
                        f("is_sensitive", BOOL, "5+"),
                    ),
                    "5+",
                    nullable="5+",
                ),
            ),
        ),
    ),
)
