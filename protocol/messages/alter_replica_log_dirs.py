"""AlterReplicaLogDirs (key 34), versions 1-2, flexible from 2 (AlterReplicaLogDirsRequest/
Response).

Kafka 4.0 serves 1-2 (v0 was removed by KIP-896); v1 is the same as v0.
"""

from protocol.schema import INT16, INT32, STRING, Array, api, array, f

ALTER_REPLICA_LOG_DIRS = api(
    34,
    "AlterReplicaLogDirs",
    "1-2",
    "2+",
    request=(
        f(
            "dirs",
            array(
                f("path", STRING),
                f("topics", array(f("name", STRING), f("partitions", Array(INT32)))),
            ),
        ),
    ),
    response=(
        f("throttle_time_ms", INT32),
        f(
            "results",
            array(
                f("topic_name", STRING),
                f(
                    "partitions",
                    array(f("partition_index", INT32), f("error_code", INT16)),
                ),
            ),
        ),
    ),
)
