"""The checks of Kafka 4.0's KafkaApis that a client meets at the edges: FindCoordinator
for a transactional id, AddPartitionsToTxn's broker-only v4+ and client v0-3 checks, the
secrets files' modes and the start-up warning for unsecured OAUTHBEARER. Raw requests
against a broker process with SASL users and ACLs; outcomes checked in what it stored."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from protocol.errors import ErrorCode
from protocol.messages.add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from protocol.messages.alter_user_scram_credentials import ALTER_USER_SCRAM_CREDENTIALS
from protocol.messages.describe_transactions import DESCRIBE_TRANSACTIONS
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.schema import Message
from storage.acl_store import FILE_NAME as ACL_FILE
from storage.scram_credential_store import FILE_NAME as SCRAM_FILE
from tests.e2e.test_offset_for_leader_epoch import ask
from tests.e2e.test_security_acls import (
    CLUSTER,
    DESCRIBE,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    create,
    creation,
    login,
    records,
)
from tests.support.broker_process import BrokerProcess, running
from tests.support.produce import create_topic, produce
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS
from tests.support.sasl import acl_overrides

pytestmark = KAFKA_PYTHON_SCHEMA_READS

TRANSACTION_KEY = 1
UNSECURED_OAUTH = "enables OAUTHBEARER with unsecured (unsigned, alg=none) tokens"


def find_txn_coordinator(client: RawClient, version: int, txn_id: str) -> Message:
    body = (
        Message(key_type=TRANSACTION_KEY, coordinator_keys=[txn_id])
        if version >= 4
        else Message(key=txn_id, key_type=TRANSACTION_KEY)
    )
    return client.request(FIND_COORDINATOR, version, body)


def test_find_coordinator_for_a_transaction_needs_describe_on_the_transactional_id(
    acl_broker: BrokerProcess,
) -> None:
    with login(acl_broker, "alice") as alice:
        [denied] = find_txn_coordinator(alice, 4, "fc-tx").coordinators
        old = find_txn_coordinator(alice, 3, "fc-tx")
    # Per key from v4 (Kafka leaves the key's message at its default), the whole answer before.
    assert (denied.error_code, denied.error_message, denied.node_id, denied.host, denied.port) == (
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        "",
        -1,
        "",
        -1,
    )
    assert (old.error_code, old.error_message, old.node_id) == (
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        "Transactional Id authorization failed.",
        -1,
    )
    acl_broker.wait_for_log("Principal = User:alice is Denied operation = Describe")
    with login(acl_broker, "admin") as admin:
        assert create(admin, creation(TRANSACTIONAL_ID, "fc-tx", "User:alice", WRITE)) == [
            (0, None)
        ]
    with login(acl_broker, "alice") as alice:
        [found] = find_txn_coordinator(alice, 4, "fc-tx").coordinators
        old = find_txn_coordinator(alice, 3, "fc-tx")
    assert (found.error_code, found.port) == (0, acl_broker.ports["SASL_PLAINTEXT"])
    assert (old.error_code, old.error_message) == (0, "NONE")


def _add_v4(client: RawClient, txn_id: str, opened: Message, topic: str) -> Message:
    return client.request(
        ADD_PARTITIONS_TO_TXN,
        4,
        Message(
            transactions=[
                Message(
                    transactional_id=txn_id,
                    producer_id=opened.producer_id,
                    producer_epoch=opened.producer_epoch,
                    verify_only=False,
                    topics=[Message(name=topic, partitions=[0])],
                )
            ]
        ),
    )


def _add_v3(client: RawClient, txn_id: str, opened: Message, *topics: str) -> dict[str, int]:
    answer = client.request(
        ADD_PARTITIONS_TO_TXN,
        3,
        Message(
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=opened.producer_id,
            v3_and_below_producer_epoch=opened.producer_epoch,
            v3_and_below_topics=[Message(name=t, partitions=[0]) for t in topics],
        ),
    )
    return {
        t.name: p.partition_error_code
        for t in answer.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def _transaction(client: RawClient, txn_id: str) -> tuple[str, list[str]]:
    answer = client.request(DESCRIBE_TRANSACTIONS, 0, Message(transactional_ids=[txn_id]))
    [state] = answer.transaction_states
    return state.transaction_state, [t.topic for t in state.topics]


def test_add_partitions_to_txn_v4_is_for_brokers_and_v3_checks_each_topic_as_kafka(
    acl_broker: BrokerProcess,
) -> None:
    with login(acl_broker, "admin") as admin:
        create_topic(admin, "apt-topic")
        create_topic(admin, "apt-closed")
        assert (
            create(
                admin,
                creation(TRANSACTIONAL_ID, "apt-", "User:alice", WRITE, pattern=4),
                creation(TOPIC, "apt-topic", "User:alice", WRITE),
            )
            == [(0, None)] * 2
        )
    with login(acl_broker, "alice") as alice:
        opened = alice.request(
            INIT_PRODUCER_ID, 4, Message(transactional_id="apt-1", transaction_timeout_ms=60000)
        )
        assert opened.error_code == 0
        # v4+ come only from other brokers: CLUSTER_ACTION, whatever else alice may do.
        refused = _add_v4(alice, "apt-1", opened, "apt-topic")
        assert (refused.error_code, refused.results_by_transaction) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            [],
        )
        # v3: every failed partition named (denied, unknown), the rest not attempted; an
        # internal topic is never the client's to add.
        assert _add_v3(alice, "apt-1", opened, "apt-topic", "apt-closed", "apt-nowhere") == {
            "apt-topic": ErrorCode.OPERATION_NOT_ATTEMPTED,
            "apt-closed": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "apt-nowhere": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
    with login(acl_broker, "admin") as admin:
        assert _transaction(admin, "apt-1") == ("Empty", [])
        assert _add_v3(admin, "apt-1", opened, "apt-topic", "apt-missing") == {
            "apt-topic": ErrorCode.OPERATION_NOT_ATTEMPTED,
            "apt-missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert _add_v3(admin, "apt-1", opened, "apt-topic", "__consumer_offsets") == {
            "apt-topic": ErrorCode.OPERATION_NOT_ATTEMPTED,
            "__consumer_offsets": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
        assert _transaction(admin, "apt-1") == ("Empty", [])
        # The broker's own principal (a super user) may send v4.
        added = _add_v4(admin, "apt-1", opened, "apt-topic")
        assert added.error_code == 0
        [result] = added.results_by_transaction
        assert [p.partition_error_code for p in result.topic_results[0].results_by_partition] == [0]
        assert _transaction(admin, "apt-1") == ("Ongoing", ["apt-topic"])


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_acl_and_scram_files_are_readable_by_the_broker_user_only(
    acl_broker: BrokerProcess,
) -> None:
    salt = b"salt-carol"
    with login(acl_broker, "admin") as admin:
        assert create(admin, creation(TOPIC, "modes", "User:alice", DESCRIBE)) == [(0, None)]
        answer = admin.request(
            ALTER_USER_SCRAM_CREDENTIALS,
            0,
            Message(
                deletions=[],
                upsertions=[
                    Message(
                        name="carol",
                        mechanism=1,
                        iterations=4096,
                        salt=salt,
                        salted_password=hashlib.pbkdf2_hmac("sha256", b"pw", salt, 4096),
                    )
                ],
            ),
        )
        assert [r.error_code for r in answer.results] == [0]
    assert _mode(acl_broker.data_dir / ACL_FILE) == 0o600
    assert _mode(acl_broker.data_dir / SCRAM_FILE) == 0o600


def test_files_written_world_readable_before_are_made_private_at_start(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data", acl_overrides()).start()
    try:
        with login(proc, "admin") as admin:
            assert create(admin, creation(TOPIC, "old", "User:alice", DESCRIBE)) == [(0, None)]
        proc.stop()
        os.chmod(proc.data_dir / ACL_FILE, 0o644)  # as an earlier version wrote it
        proc.start()
        assert _mode(proc.data_dir / ACL_FILE) == 0o600
    finally:
        proc.stop()


def test_unsecured_oauthbearer_is_warned_about_at_start(tmp_path: Path) -> None:
    with running(tmp_path / "oauth", acl_overrides()) as with_oauth:
        with_oauth.wait_for_log(re.escape(f"listener SASL_PLAINTEXT {UNSECURED_OAUTH}"))
    plain_only = acl_overrides(**{"sasl.enabled.mechanisms": "PLAIN"})
    with running(tmp_path / "plain", plain_only) as without:
        assert not any(UNSECURED_OAUTH in line for line in without.lines)


def _end_offset(client: RawClient, topic: str) -> tuple[int, int]:
    """OffsetForLeaderEpoch v4 for epoch 0 of partition 0: (error code, end offset)."""
    error_code, _, end_offset = ask(client, 4, topic, 0)
    return error_code, end_offset


def test_offset_for_leader_epoch_answers_a_cluster_action_principal_every_topic(
    acl_broker: BrokerProcess,
) -> None:
    with login(acl_broker, "admin") as admin:
        create_topic(admin, "ofle")
        assert produce(admin, "ofle", records("e", 3)).error_code == 0
    with login(acl_broker, "alice") as alice:
        assert _end_offset(alice, "ofle") == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)
    with login(acl_broker, "admin") as admin:
        # CLUSTER_ACTION (9): what brokers hold; KafkaApis then skips the topic checks.
        assert create(admin, creation(CLUSTER, "kafka-cluster", "User:alice", 9)) == [(0, None)]
    with login(acl_broker, "alice") as alice:
        assert _end_offset(alice, "ofle") == (0, 3)
