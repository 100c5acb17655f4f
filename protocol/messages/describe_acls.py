"""DescribeAcls (key 29), versions 0-3, flexible from 2 (KIP-140; v1 adds pattern types,
KIP-290). Enum codes: resource type 1 ANY, 2 TOPIC, 3 GROUP, 4 CLUSTER, 5 TRANSACTIONAL_ID,
6 DELEGATION_TOKEN, 7 USER; pattern type 1 ANY, 2 MATCH, 3 LITERAL, 4 PREFIXED; operation
1 ANY, 2 ALL, 3 READ ... 15 TWO_PHASE_COMMIT; permission 1 ANY, 2 DENY, 3 ALLOW."""

from protocol.schema import INT8, INT16, INT32, STRING, api, array, f

DESCRIBE_ACLS = api(
    29,
    "DescribeAcls",
    "0-3",
    "2+",
    request=(
        f("resource_type_filter", INT8),
        f("resource_name_filter", STRING, nullable="0+"),
        f("pattern_type_filter", INT8, versions="1+", default=3),
        f("principal_filter", STRING, nullable="0+"),
        f("host_filter", STRING, nullable="0+"),
        f("operation", INT8),
        f("permission_type", INT8),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+"),
        f(
            "resources",
            array(
                f("resource_type", INT8),
                f("resource_name", STRING),
                f("pattern_type", INT8, versions="1+", default=3),
                f(
                    "acls",
                    array(
                        f("principal", STRING),
                        f("host", STRING),
                        f("operation", INT8),
                        f("permission_type", INT8),
                    ),
                ),
            ),
        ),
    ),
)
