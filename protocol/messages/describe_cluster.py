"""DescribeCluster (key 60), versions 0-2, flexible in all (DescribeClusterRequest/Response).

endpoint_type (v1+): 1 = broker, 2 = controller (KIP-919).
"""

from protocol.schema import BOOL, INT8, INT16, INT32, STRING, api, array, f

DESCRIBE_CLUSTER = api(
    60,
    "DescribeCluster",
    "0-2",
    "0+",
    request=(
        f("include_cluster_authorized_operations", BOOL),
        f("endpoint_type", INT8, "1+", default=1),
        f("include_fenced_brokers", BOOL, "2+"),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+", default=None),
        f("endpoint_type", INT8, "1+", default=1),
        f("cluster_id", STRING),
        f("controller_id", INT32, default=-1),
        f(
            "brokers",
            array(
                f("broker_id", INT32),
                f("host", STRING),
                f("port", INT32),
                f("rack", STRING, nullable="0+", default=None),
                f("is_fenced", BOOL, "2+"),
            ),
        ),
        f("cluster_authorized_operations", INT32, default=-2147483648),
    ),
)
