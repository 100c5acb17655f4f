"""Stand-ins for the Kafka distribution's bin/ scripts that librdkafka's suite runs.

The suite calls `$KAFKA_PATH/bin/kafka-topics.sh --bootstrap-server $BROKERS ...`
(test.c: test_kafka_topics) to create topics with configs, add partitions and delete
topics, and `$KAFKA_PATH/bin/kafka-acls.sh --bootstrap-server ... --add --deny-principal
'User:*' --operation All --deny-host '*' --topic t` (test_kafka_cmd: 0109, 0115, 0119);
`install(dir)` writes a `bin/` there whose scripts run this module with the same
arguments. Both are served through kafka-python's admin client, sending the requests
Kafka's tools send: kafka-topics.sh CreateTopics/CreatePartitions/DeleteTopics
(TopicCommand), kafka-acls.sh CreateAcls/DeleteAcls/DescribeAcls (tests/peer/kafka_acls.py,
as Kafka 4.0's AclCommand). Any other script (kafka-configs.sh, kafka-run-class.sh) exits 1
saying what we lack, so the test that needs it fails with that reason.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ["kafka-topics.sh", "kafka-acls.sh", "kafka-configs.sh", "kafka-run-class.sh"]


def install(kafka_path: Path) -> Path:
    bin_dir = kafka_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for script in SCRIPTS:
        path = bin_dir / script
        path.write_text(
            "#!/bin/sh\n"
            f"PYTHONPATH={shlex.quote(str(ROOT))} exec {shlex.quote(sys.executable)} "
            f'-m tests.peer.kafka_cli {script} "$@"\n'
        )
        path.chmod(0o755)
    return kafka_path


def kafka_topics(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-topics.sh")
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic", required=True)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true")
    action.add_argument("--alter", action="store_true")
    action.add_argument("--delete", action="store_true")
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--replication-factor", type=int)
    parser.add_argument("--config", action="append", default=[])
    args = parser.parse_args(argv)

    from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap_server, client_id="kafka-topics")
    try:
        if args.create:
            configs = dict(item.split("=", 1) for item in args.config)
            admin.create_topics(
                [
                    NewTopic(
                        args.topic,
                        args.partitions if args.partitions is not None else -1,
                        args.replication_factor if args.replication_factor is not None else -1,
                        topic_configs=configs,
                    )
                ]
            )
            print(f"Created topic {args.topic}.")
        elif args.alter:
            admin.create_partitions({args.topic: NewPartitions(args.partitions)})
        else:
            admin.delete_topics([args.topic])
    finally:
        admin.close()
    return 0


def main(argv: list[str]) -> int:
    script, rest = argv[0], argv[1:]
    if script == "kafka-topics.sh":
        return kafka_topics(rest)
    if script == "kafka-acls.sh":
        from tests.peer.kafka_acls import kafka_acls

        return kafka_acls(rest)
    print(
        f"{script} {' '.join(rest)}: not served by minikafka's stand-in "
        "(dynamic configs through the CLI and JMX are not implemented)",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
