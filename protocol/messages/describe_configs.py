"""DescribeConfigs (key 32), versions 1-4, flexible from 4 (DescribeConfigsRequest/Response).

Kafka 4.0 serves 1-4; ``is_default`` exists only in v0 and is described for fidelity.
"""

from protocol.schema import BOOL, INT8, INT16, INT32, STRING, Array, api, array, f

DESCRIBE_CONFIGS = api(
    32,
    "DescribeConfigs",
    "1-4",
    "4+",
    request=(
        f(
            "resources",
            array(
                f("resource_type", INT8),
                f("resource_name", STRING),
                f("configuration_keys", Array(STRING), nullable="0+"),
            ),
        ),
        f("include_synonyms", BOOL, "1+"),
        f("include_documentation", BOOL, "3+"),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "results",
            array(
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+"),
                f("resource_type", INT8),
                f("resource_name", STRING),
                f(
                    "configs",
                    array(
                        f("name", STRING),
                        f("value", STRING, nullable="0+"),
                        f("read_only", BOOL),
                        f("config_source", INT8, "1+", default=-1),
                        f("is_default", BOOL, "0"),
                        f("is_sensitive", BOOL),
                        f(
                            "synonyms",
                            array(
                                f("name", STRING, "1+"),
                                f("value", STRING, "1+", nullable="0+"),
                                f("source", INT8, "1+"),
                            ),
                            "1+",
                        ),
                        f("config_type", INT8, "3+"),
                        f("documentation", STRING, "3+", nullable="0+"),
                    ),
                ),
            ),
        ),
    ),
)
