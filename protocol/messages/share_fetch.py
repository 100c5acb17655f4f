"""ShareFetch (key 78), versions 1-2, flexible (KIP-932 share groups).

v2 adds ShareAcquireMode (KIP-1206) and IsRenewAck (KIP-1222, the RENEW acknowledgement).
Topics are named by id only. Records come as whole batches; AcquiredRecords says which offsets
of them this member holds. (ShareFetchRequest/Response.json of Kafka 4.4; version 0 was 4.0's
early access.)
"""

from protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UUID,
    Array,
    Struct,
    api,
    array,
    f,
)

ACKNOWLEDGEMENT_BATCH = array(
    f("first_offset", INT64), f("last_offset", INT64), f("acknowledge_types", Array(INT8))
)
LEADER_ID_AND_EPOCH = Struct(f("leader_id", INT32), f("leader_epoch", INT32))
NODE_ENDPOINTS = array(
    f("node_id", INT32),
    f("host", STRING),
    f("port", INT32),
    f("rack", STRING, nullable="0+", default=None),
)

SHARE_FETCH = api(
    78,
    "ShareFetch",
    "1-2",
    "0+",
    request=(
        f("group_id", STRING, nullable="0+", default=None),
        f("member_id", STRING, nullable="0+"),
        f("share_session_epoch", INT32),
        f("max_wait_ms", INT32),
        f("min_bytes", INT32),
        f("max_bytes", INT32, default=0x7FFFFFFF),
        f("max_records", INT32, "1+"),
        f("batch_size", INT32, "1+"),
        f("share_acquire_mode", INT8, "2+", default=0),
        f("is_renew_ack", BOOL, "2+", default=False),
        f(
            "topics",
            array(
                f("topic_id", UUID),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("partition_max_bytes", INT32, "0", default=0),
                        f("acknowledgement_batches", ACKNOWLEDGEMENT_BATCH),
                    ),
                ),
            ),
        ),
        f("forgotten_topics_data", array(f("topic_id", UUID), f("partitions", Array(INT32)))),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+", default=None),
        f("acquisition_lock_timeout_ms", INT32, "1+"),
        f(
            "responses",
            array(
                f("topic_id", UUID),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("error_code", INT16),
                        f("error_message", STRING, nullable="0+", default=None),
                        f("acknowledge_error_code", INT16),
                        f("acknowledge_error_message", STRING, nullable="0+", default=None),
                        f("current_leader", LEADER_ID_AND_EPOCH),
                        f("records", RECORDS, nullable="0"),
                        f(
                            "acquired_records",
                            array(
                                f("first_offset", INT64),
                                f("last_offset", INT64),
                                f("delivery_count", INT16),
                            ),
                        ),
                    ),
                ),
            ),
        ),
        f("node_endpoints", NODE_ENDPOINTS),
    ),
)
