"""ShareAcknowledge (key 79), versions 1-2, flexible (KIP-932 share groups).

v2 adds IsRenewAck and the answer's AcquisitionLockTimeoutMs (KIP-1222, RENEW).
(ShareAcknowledgeRequest/Response.json of Kafka 4.4; version 0 was 4.0's early access.)
"""

from protocol.messages.share_fetch import ACKNOWLEDGEMENT_BATCH, LEADER_ID_AND_EPOCH, NODE_ENDPOINTS
from protocol.schema import BOOL, INT16, INT32, STRING, UUID, api, array, f

SHARE_ACKNOWLEDGE = api(
    79,
    "ShareAcknowledge",
    "1-2",
    "0+",
    request=(
        f("group_id", STRING, nullable="0+", default=None),
        f("member_id", STRING, nullable="0+"),
        f("share_session_epoch", INT32),
        f("is_renew_ack", BOOL, "2+", default=False),
        f(
            "topics",
            array(
                f("topic_id", UUID),
                f(
                    "partitions",
                    array(
                        f("partition_index", INT32),
                        f("acknowledgement_batches", ACKNOWLEDGEMENT_BATCH),
                    ),
                ),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+", default=None),
        f("acquisition_lock_timeout_ms", INT32, "2+", default=0),
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
                        f("current_leader", LEADER_ID_AND_EPOCH),
                    ),
                ),
            ),
        ),
        f("node_endpoints", NODE_ENDPOINTS),
    ),
)
