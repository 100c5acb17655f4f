"""DeleteTopics (key 20), versions 1-6, flexible from 4 (DeleteTopicsRequest/Response.json).

v6 names topics by name or by topic id (``topics``); v1-5 by name only (``topic_names``).
"""

from protocol.schema import INT16, INT32, STRING, UUID, Array, api, array, f

DELETE_TOPICS = api(
    20,
    "DeleteTopics",
    "1-6",
    "4+",
    request=(
        f(
            "topics",
            array(
                f("name", STRING, "6+", nullable="6+", default=None),
                f("topic_id", UUID, "6+"),
            ),
            "6+",
        ),
        f("topic_names", Array(STRING), "0-5"),
        f("timeout_ms", INT32),
    ),
    response=(
        f("throttle_time_ms", INT32, "1+"),
        f(
            "responses",
            array(
                f("name", STRING, nullable="6+"),
                f("topic_id", UUID, "6+"),
                f("error_code", INT16),
                f("error_message", STRING, "5+", nullable="5+", default=None),
            ),
        ),
    ),
)
