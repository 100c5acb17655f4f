"""ApiVersions (key 18), versions 0-4, flexible from 3 (ApiVersionsRequest/Response.json)."""

from protocol.schema import BOOL, INT16, INT32, INT64, STRING, api, array, f

API_VERSIONS = api(
    18,
    "ApiVersions",
    "0-4",
    "3+",
    request=(
        f("client_software_name", STRING, "3+"),
        f("client_software_version", STRING, "3+"),
    ),
    response=(
        f("error_code", INT16),
        f(
            "api_keys",
            array(
                f("api_key", INT16),
                f("min_version", INT16),
                f("max_version", INT16),
            ),
        ),
        f("throttle_time_ms", INT32, "1+"),
        f(
            "supported_features",
            array(
                f("name", STRING, "3+"),
                f("min_version", INT16, "3+"),
                f("max_version", INT16, "3+"),
            ),
            "3+",
            tag=0,
        ),
        f("finalized_features_epoch", INT64, "3+", tag=1, default=-1),
        f(
            "finalized_features",
            array(
                f("name", STRING, "3+"),
                f("max_version_level", INT16, "3+"),
                f("min_version_level", INT16, "3+"),
            ),
            "3+",
            tag=2,
        ),
        f("zk_migration_ready", BOOL, "3+", tag=3, default=False),
    ),
)
