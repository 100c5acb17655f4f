"""FindCoordinator (key 10), versions 0-6, flexible from 3 (FindCoordinatorRequest/Response.json).

v4+ batches keys: ``coordinator_keys`` in, one ``coordinators`` entry per key out.
"""

from protocol.schema import INT8, INT16, INT32, STRING, Array, api, array, f

FIND_COORDINATOR = api(
    10,
    "FindCoordinator",
    "0-6",
    "3+",
    request=(
        f("key", STRING, "0-3"),
        # 0 = group, 1 = transaction, 2 = share.
        f("key_type", INT8, "1+"),
        f("coordinator_keys", Array(STRING), "4+"),
    ),
    response=(
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16, "0-3"),
        f("error_message", STRING, "1-3", nullable="1-3"),
        f("node_id", INT32, "0-3"),
        f("host", STRING, "0-3"),
        f("port", INT32, "0-3"),
        f(
            "coordinators",
            array(
                f("key", STRING, "4+"),
                f("node_id", INT32, "4+"),
                f("host", STRING, "4+"),
                f("port", INT32, "4+"),
                f("error_code", INT16, "4+"),
                f("error_message", STRING, "4+", nullable="4+"),
            ),
            "4+",
        ),
    ),
)
