"""The kafka-topics.sh and kafka-acls.sh stand-ins librdkafka's suite runs (test_kafka_topics
and test_kafka_cmd in test.c), against a real broker, checked on what the broker stored."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from storage.acl_store import AclStore, StoredAcl
from storage.topic_config_store import TopicConfigStore
from tests.peer import kafka_acls, kafka_cli
from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        yield proc
    finally:
        proc.kill() if not proc.is_running() else proc.stop()


def run_script(kafka_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    # As test.c runs it: system() with the line the test formatted.
    return subprocess.run(
        f"{kafka_path}/bin/{command}", shell=True, capture_output=True, text=True, timeout=60
    )


def test_kafka_topics_create_alter_and_delete_reach_the_broker_as_kafkas_cli_does(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    kafka_path = kafka_cli.install(tmp_path / "kafka")
    bootstrap = f"--bootstrap-server {broker.bootstrap}"

    created = run_script(
        kafka_path,
        f'kafka-topics.sh {bootstrap} --create --topic "ts_topic" --replication-factor 1 '
        "--partitions 1 --config message.timestamp.type=LogAppendTime",
    )
    assert created.returncode == 0, created.stderr
    altered = run_script(
        kafka_path, f"kafka-topics.sh {bootstrap} --alter --topic ts_topic --partitions 3"
    )
    assert altered.returncode == 0, altered.stderr
    assert (
        run_script(
            kafka_path, f"kafka-topics.sh {bootstrap} --create --topic gone --partitions 1"
        ).returncode
        == 0
    )
    deleted = run_script(kafka_path, f"kafka-topics.sh {bootstrap} --delete --topic gone")
    assert deleted.returncode == 0, deleted.stderr
    broker.stop()

    data = broker.data_dir
    assert sorted(p.name for p in data.glob("ts_topic-*")) == [
        "ts_topic-0",
        "ts_topic-1",
        "ts_topic-2",
    ]
    assert not list(data.glob("gone-*"))
    stored = {entry.name: entry.configs for entry in TopicConfigStore.open(data).entries()}
    assert stored["ts_topic"] == {"message.timestamp.type": "LogAppendTime"}


AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
TOPIC, GROUP = 2, 3
LITERAL, PREFIXED = 3, 4
ALL, READ, WRITE, CREATE, DESCRIBE = 2, 3, 4, 5, 8
DENY, ALLOW = 2, 3


def stored_acls(broker: BrokerProcess) -> set[StoredAcl]:
    """The ACLs in the broker's acls.dat (read with the broker stopped, then restarted)."""
    broker.stop()
    store = AclStore.open(broker.data_dir)
    assert store.problem is None
    acls = set(store.all())
    broker.start()
    return acls


def test_kafka_acls_adds_lists_and_removes_acls_as_librdkafkas_tests_run_it(
    tmp_path: Path,
) -> None:
    broker = BrokerProcess(tmp_path / "data", AUTHORIZER).start()
    try:
        kafka_path = kafka_cli.install(tmp_path / "kafka")
        bootstrap = f"--bootstrap-server {broker.bootstrap}"
        # 0115_producer_auth's and 0119_consumer_auth's command lines, as test_kafka_cmd
        # formats them.
        for line in (
            f"kafka-acls.sh {bootstrap} --add --deny-principal 'User:*' --operation All "
            "--deny-host '*' --topic 'unauth'",
            f"kafka-acls.sh {bootstrap} --add --allow-principal 'User:*' --operation Describe "
            "--allow-host '*' --topic 'fetch'",
            f"kafka-acls.sh {bootstrap} --add --deny-principal 'User:*' --operation Read "
            "--deny-host '*' --topic 'fetch'",
        ):
            done = run_script(kafka_path, line)
            assert done.returncode == 0, done.stdout + done.stderr
        assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=fetch, " in (
            done.stdout
        )
        assert "(principal=User:*, host=*, operation=READ, permissionType=DENY)" in done.stdout
        assert stored_acls(broker) == {
            StoredAcl(TOPIC, "unauth", LITERAL, "User:*", "*", ALL, DENY),
            StoredAcl(TOPIC, "fetch", LITERAL, "User:*", "*", DESCRIBE, ALLOW),
            StoredAcl(TOPIC, "fetch", LITERAL, "User:*", "*", READ, DENY),
        }

        bootstrap = f"--bootstrap-server {broker.bootstrap}"  # a new port after the restart
        listed = run_script(kafka_path, f"kafka-acls.sh {bootstrap} --list --topic fetch")
        assert listed.returncode == 0, listed.stderr
        assert "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=fetch, " in (
            listed.stdout
        )
        assert "operation=DESCRIBE, permissionType=ALLOW" in listed.stdout
        assert "unauth" not in listed.stdout

        removed = run_script(
            kafka_path,
            f"kafka-acls.sh {bootstrap} --remove --force --allow-principal 'User:*' "
            "--operation Describe --allow-host '*' --topic 'fetch'",
        )
        assert removed.returncode == 0, removed.stderr
        # Without principals, --remove takes everything on the resource.
        everything = run_script(
            kafka_path, f"kafka-acls.sh {bootstrap} --remove --force --topic unauth"
        )
        assert everything.returncode == 0, everything.stderr
        assert stored_acls(broker) == {
            StoredAcl(TOPIC, "fetch", LITERAL, "User:*", "*", READ, DENY),
        }

        # --producer/--consumer and prefixed patterns. (No cluster ACL here: one would take
        # CreateAcls' ALTER on the cluster away from everyone else, as in Kafka.)
        bootstrap = f"--bootstrap-server {broker.bootstrap}"
        roles = run_script(
            kafka_path,
            f"kafka-acls.sh {bootstrap} --add --allow-principal User:app --producer "
            "--consumer --topic orders- --group app --resource-pattern-type "
            "prefixed",
        )
        assert roles.returncode == 0, roles.stderr
        assert stored_acls(broker) - {
            StoredAcl(TOPIC, "fetch", LITERAL, "User:*", "*", READ, DENY)
        } == {
            StoredAcl(TOPIC, "orders-", PREFIXED, "User:app", "*", op, ALLOW)
            for op in (WRITE, DESCRIBE, CREATE, READ)
        } | {StoredAcl(GROUP, "app", PREFIXED, "User:app", "*", READ, ALLOW)}
    finally:
        if broker.is_running():
            broker.stop()


def test_kafka_acls_fails_as_aclcommand_without_an_authorizer(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    kafka_path = kafka_cli.install(tmp_path / "kafka")
    done = run_script(
        kafka_path,
        f"kafka-acls.sh --bootstrap-server {broker.bootstrap} --add --allow-principal User:a "
        "--topic t",
    )
    assert done.returncode == 1
    assert "\nError while executing ACL command: " in done.stdout
    assert "SecurityDisabled" in done.stdout


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--add --topic t", "One of --bootstrap-server or --bootstrap-controller"),
        ("--bootstrap-server h:1 --topic t", "exactly one action"),
        ("--bootstrap-server h:1 --add --list", "exactly one action"),
        (
            "--bootstrap-server h:1 --add --topic t",
            "You must specify one of: --allow-principal, --deny-principal",
        ),
        (
            "--bootstrap-server h:1 --add --allow-principal User:a",
            "You must provide at least one resource",
        ),
        (
            "--bootstrap-server h:1 --add --allow-principal User:a --group g --operation Write",
            "ResourceType GROUP only supports operations",
        ),
        (
            "--bootstrap-server h:1 --add --allow-principal a --topic t",
            "expected a string in format principalType:principalName but got a",
        ),
        (
            "--bootstrap-server h:1 --add --allow-principal User:a --topic t "
            "--resource-pattern-type match",
            "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.",
        ),
        (
            "--bootstrap-server h:1 --add --producer --allow-principal User:a",
            "With --producer you must specify a --topic",
        ),
    ],
)
def test_usage_errors_are_aclcommands(
    line: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert kafka_acls.kafka_acls(line.split()) == 1
    assert message in capsys.readouterr().err


def test_producer_roles_with_idempotence_add_idempotent_write_on_the_cluster() -> None:
    line = (
        "--bootstrap-server h:1 --add --allow-principal User:app --producer --idempotent "
        "--topic t --transactional-id tx"
    )
    args = kafka_acls.parse(line.split())
    plan = kafka_acls.plan(args)

    def ops(kind: str, name: str) -> set[str]:
        return {e.operation for e in plan[kafka_acls.Resource(kind, name, "LITERAL")]}

    assert ops("TOPIC", "t") == {"WRITE", "DESCRIBE", "CREATE"}
    assert ops("TRANSACTIONAL_ID", "tx") == {"WRITE", "DESCRIBE"}
    assert ops("CLUSTER", "kafka-cluster") == {"IDEMPOTENT_WRITE"}
    assert {e.host for entries in plan.values() for e in entries} == {"*"}


def test_operation_names_are_read_as_securityutils_reads_them() -> None:
    assert kafka_acls.operation("All") == "ALL"
    assert kafka_acls.operation("DescribeConfigs") == "DESCRIBE_CONFIGS"
    assert kafka_acls.operation("describeconfigs") == "DESCRIBE_CONFIGS"
    assert kafka_acls.operation("IDEMPOTENTWRITE") == "IDEMPOTENT_WRITE"
    # The enum name with its underscore is not one of SecurityUtils' names.
    assert kafka_acls.operation("DESCRIBE_CONFIGS") == "UNKNOWN"


def test_scripts_we_do_not_serve_fail_with_the_reason(tmp_path: Path) -> None:
    kafka_path = kafka_cli.install(tmp_path / "kafka")

    done = run_script(kafka_path, "kafka-configs.sh --bootstrap-server 127.0.0.1:1 --alter")

    assert done.returncode == 1
    assert "not served" in done.stderr
