"""StreamsGroupHeartbeat (key 88) and StreamsGroupDescribe (key 89), versions 0-1, flexible
(KIP-1071 streams groups), as Kafka 4.4.0 serves them (StreamsGroupHeartbeatRequest/Response
and StreamsGroupDescribeRequest/Response.json). Version 1 replaced the heartbeat answer's
int32 acceptable recovery lag with an int64 one, and added the topology description.
"""

from protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    Array,
    Struct,
    api,
    array,
    f,
)

_KEY_VALUE = array(f("key", STRING), f("value", STRING))
_TOPIC_INFO = array(
    f("name", STRING),
    f("partitions", INT32),
    f("replication_factor", INT16),
    f("topic_configs", _KEY_VALUE),
)
_ENDPOINT = (f("host", STRING), f("port", UINT16))
_TASK_OFFSET = array(f("subtopology_id", STRING), f("partition", INT32), f("offset", INT64))
_TASK_IDS = array(f("subtopology_id", STRING), f("partitions", Array(INT32)))

_SUBTOPOLOGY = array(
    f("subtopology_id", STRING),
    f("source_topics", Array(STRING)),
    f("source_topic_regex", Array(STRING)),
    f("state_changelog_topics", _TOPIC_INFO),
    f("repartition_sink_topics", Array(STRING)),
    f("repartition_source_topics", _TOPIC_INFO),
    f(
        "copartition_groups",
        array(
            f("source_topics", Array(INT16)),
            f("source_topic_regex", Array(INT16)),
            f("repartition_source_topics", Array(INT16)),
        ),
    ),
)

STREAMS_GROUP_HEARTBEAT = api(
    88,
    "StreamsGroupHeartbeat",
    "0-1",
    "0+",
    request=(
        f("group_id", STRING),
        f("member_id", STRING),
        f("member_epoch", INT32),
        f("endpoint_information_epoch", INT32),
        f("instance_id", STRING, nullable="0+", default=None),
        f("rack_id", STRING, nullable="0+", default=None),
        f("rebalance_timeout_ms", INT32, default=-1),
        f(
            "topology",
            Struct(f("epoch", INT32), f("subtopologies", _SUBTOPOLOGY)),
            nullable="0+",
            default=None,
        ),
        f("active_tasks", _TASK_IDS, nullable="0+", default=None),
        f("standby_tasks", _TASK_IDS, nullable="0+", default=None),
        f("warmup_tasks", _TASK_IDS, nullable="0+", default=None),
        f("process_id", STRING, nullable="0+", default=None),
        f("user_endpoint", Struct(*_ENDPOINT), nullable="0+", default=None),
        f("client_tags", _KEY_VALUE, nullable="0+", default=None),
        f("task_offsets", _TASK_OFFSET, nullable="0+", default=None),
        f("task_end_offsets", _TASK_OFFSET, nullable="0+", default=None),
        f("shutdown_application", BOOL, default=False),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+", default=None),
        f("member_id", STRING),
        f("member_epoch", INT32),
        f("heartbeat_interval_ms", INT32),
        f("acceptable_recovery_lag_legacy", INT32, "0"),
        f("task_offset_interval_ms", INT32),
        f("acceptable_recovery_lag", INT64, "1+", default=-1),
        f(
            "status",
            array(f("status_code", INT8), f("status_detail", STRING)),
            nullable="0+",
            default=None,
        ),
        f("active_tasks", _TASK_IDS, nullable="0+", default=None),
        f("standby_tasks", _TASK_IDS, nullable="0+", default=None),
        f("warmup_tasks", _TASK_IDS, nullable="0+", default=None),
        f("topology_description_required", BOOL, "1+", default=False),
        f("endpoint_information_epoch", INT32),
        f(
            "partitions_by_user_endpoint",
            array(
                f("user_endpoint", Struct(*_ENDPOINT)),
                f("active_partitions", array(f("topic", STRING), f("partitions", Array(INT32)))),
                f("standby_partitions", array(f("topic", STRING), f("partitions", Array(INT32)))),
            ),
            nullable="0+",
            default=None,
        ),
    ),
)

_ASSIGNMENT = Struct(
    f("active_tasks", _TASK_IDS), f("standby_tasks", _TASK_IDS), f("warmup_tasks", _TASK_IDS)
)
_NODE = (
    f("name", STRING, "1+"),
    f("node_type", INT8, "1+"),
    f("source_topics", Array(STRING), "1+"),
    f("sink_topic", STRING, "1+", nullable="1+", default=None),
    f("stores", Array(STRING), "1+"),
    f("successors", Array(STRING), "1+"),
)

STREAMS_GROUP_DESCRIBE = api(
    89,
    "StreamsGroupDescribe",
    "0-1",
    "0+",
    request=(
        f("group_ids", Array(STRING)),
        f("include_authorized_operations", BOOL),
        f("include_topology_description", BOOL, "1+", default=False),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "groups",
            array(
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+", default=None),
                f("group_id", STRING),
                f("group_state", STRING),
                f("group_epoch", INT32),
                f("assignment_epoch", INT32),
                f(
                    "topology",
                    Struct(
                        f("epoch", INT32),
                        f(
                            "subtopologies",
                            array(
                                f("subtopology_id", STRING),
                                f("source_topics", Array(STRING)),
                                f("repartition_sink_topics", Array(STRING)),
                                f("state_changelog_topics", _TOPIC_INFO),
                                f("repartition_source_topics", _TOPIC_INFO),
                            ),
                            nullable="0+",
                            default=None,
                        ),
                    ),
                    nullable="0+",
                    default=None,
                ),
                f(
                    "members",
                    array(
                        f("member_id", STRING),
                        f("member_epoch", INT32),
                        f("instance_id", STRING, nullable="0+", default=None),
                        f("rack_id", STRING, nullable="0+", default=None),
                        f("client_id", STRING),
                        f("client_host", STRING),
                        f("topology_epoch", INT32),
                        f("process_id", STRING),
                        f("user_endpoint", Struct(*_ENDPOINT), nullable="0+", default=None),
                        f("client_tags", _KEY_VALUE),
                        f("task_offsets", _TASK_OFFSET),
                        f("task_end_offsets", _TASK_OFFSET),
                        f("assignment", _ASSIGNMENT),
                        f("target_assignment", _ASSIGNMENT),
                        f("is_classic", BOOL),
                    ),
                ),
                f("authorized_operations", INT32, default=-2147483648),
                f(
                    "topology_description",
                    Struct(
                        f(
                            "subtopologies",
                            array(f("subtopology_id", STRING), f("nodes", array(*_NODE))),
                            "1+",
                        ),
                        f(
                            "global_stores",
                            array(
                                f("source", Struct(*_NODE), "1+"),
                                f("processor", Struct(*_NODE), "1+"),
                            ),
                            "1+",
                        ),
                    ),
                    "1+",
                    nullable="1+",
                    default=None,
                ),
                f("topology_description_status", INT8, "1+", default=0),
                f("assignor_name", STRING, "1+", nullable="1+", default=None),
            ),
        ),
    ),
)
