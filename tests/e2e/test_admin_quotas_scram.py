"""Client quotas (Describe/AlterClientQuotas) and SCRAM credentials
(Describe/AlterUserScramCredentials), answered as a one-broker Kafka 4.0 and checked on the
files the broker keeps in its data dir, across a restart."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.alter_client_quotas import ALTER_CLIENT_QUOTAS
from protocol.messages.alter_user_scram_credentials import ALTER_USER_SCRAM_CREDENTIALS
from protocol.messages.describe_client_quotas import DESCRIBE_CLIENT_QUOTAS
from protocol.messages.describe_user_scram_credentials import DESCRIBE_USER_SCRAM_CREDENTIALS
from protocol.schema import Message
from storage.client_quota_store import FILE_NAME as QUOTA_FILE
from storage.client_quota_store import decode as decode_quotas
from storage.client_quota_store import entity_key
from storage.scram_credential_store import FILE_NAME as SCRAM_FILE
from storage.scram_credential_store import decode as decode_credentials
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS

EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def _entry(entity: dict[str, str | None], ops: dict[str, float | None]) -> Message:
    return Message(
        entity=[Message(entity_type=t, entity_name=n) for t, n in entity.items()],
        ops=[
            Message(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops.items()
        ],
    )


def _alter(client: RawClient, entries: list[Message], version: int = 1, **kw: bool) -> Message:
    return client.request(
        ALTER_CLIENT_QUOTAS, version, Message(entries=entries, validate_only=kw.get("validate"))
    )


def _describe(
    client: RawClient, components: list[tuple[str, int, str | None]], strict: bool = False
) -> Message:
    return client.request(
        DESCRIBE_CLIENT_QUOTAS,
        1,
        Message(
            components=[Message(entity_type=t, match_type=m, match=n) for t, m, n in components],
            strict=strict,
        ),
    )


def _described(answer: Message) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert answer.error_code == 0, answer.error_message
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            v.key: v.value for v in entry.values
        }
        for entry in answer.entries
    }


def _stored_quotas(data_dir: Path) -> dict[object, dict[str, float]]:
    return dict(decode_quotas((data_dir / QUOTA_FILE).read_bytes()))


def test_client_quotas_are_stored_and_described_with_kafkas_matching(broker: BrokerProcess) -> None:
    alice_c1 = {"user": "alice", "client-id": "c1"}
    with RawClient(broker.port) as client:
        answer = _alter(
            client,
            [
                _entry({"user": "alice"}, {"producer_byte_rate": 1024.0}),
                _entry(alice_c1, {"consumer_byte_rate": 2048.0, "request_percentage": 12.5}),
                _entry({"user": None}, {"producer_byte_rate": 10.0}),
                _entry({"ip": "127.0.0.1"}, {"connection_creation_rate": 5.0}),
            ],
        )
        assert [(e.error_code, e.error_message) for e in answer.entries] == [(0, None)] * 4
        everything = _describe(client, [])
        alice_exact = _describe(client, [("user", EXACT, "alice")])
        alice_strict = _describe(client, [("user", EXACT, "alice")], strict=True)
        default_user = _describe(client, [("user", DEFAULT, None)])
        any_user_and_client = _describe(
            client, [("user", SPECIFIED, None), ("client-id", SPECIFIED, None)]
        )
        ips = _describe(client, [("ip", SPECIFIED, None)])
        empty = client.request(DESCRIBE_CLIENT_QUOTAS, 0, Message(components=[], strict=False))
        removed = _alter(client, [_entry(alice_c1, {"request_percentage": None})], version=0)
    alice = (("user", "alice"),)
    pair = (("client-id", "c1"), ("user", "alice"))
    assert _described(everything) == {
        alice: {"producer_byte_rate": 1024.0},
        pair: {"consumer_byte_rate": 2048.0, "request_percentage": 12.5},
        (("user", None),): {"producer_byte_rate": 10.0},
        (("ip", "127.0.0.1"),): {"connection_creation_rate": 5.0},
    }
    assert set(_described(alice_exact)) == {alice, pair}
    assert set(_described(alice_strict)) == {alice}
    assert set(_described(default_user)) == {(("user", None),)}
    assert set(_described(any_user_and_client)) == {pair}
    assert set(_described(ips)) == {(("ip", "127.0.0.1"),)}
    # Kafka's ClientQuotasImage.describe leaves the message unset: "" rather than null.
    assert everything.error_message == ""
    assert len(empty.entries) == 4
    assert [e.error_code for e in removed.entries] == [0]
    assert _stored_quotas(broker.data_dir) == {
        entity_key({"user": "alice"}): {"producer_byte_rate": 1024.0},
        entity_key(alice_c1): {"consumer_byte_rate": 2048.0},
        entity_key({"user": None}): {"producer_byte_rate": 10.0},
        entity_key({"ip": "127.0.0.1"}): {"connection_creation_rate": 5.0},
    }
    broker.stop()
    broker.start()
    with RawClient(broker.port) as client:
        again = _describe(client, [("user", EXACT, "alice"), ("client-id", EXACT, "c1")])
    assert _described(again) == {pair: {"consumer_byte_rate": 2048.0}}


def test_client_quota_alterations_are_validated_as_kafka_does(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        answer = _alter(
            client,
            [
                _entry({"user": "u1"}, {"producer_byte_rate": 1.5}),
                _entry({"user": "u2"}, {"no_such_quota": 1.0}),
                _entry({"user": "u3"}, {"consumer_byte_rate": -1.0}),
                _entry({"group": "g"}, {"producer_byte_rate": 1.0}),
                _entry({"user": ""}, {"producer_byte_rate": 1.0}),
                _entry({"ip": "10.0.0.1", "user": "u4"}, {"connection_creation_rate": 1.0}),
                _entry({"ip": "10.0.0.2"}, {"producer_byte_rate": 1.0}),
                _entry({}, {"producer_byte_rate": 1.0}),
                _entry({"user": "u5"}, {"request_percentage": 50.0}),
            ],
        )
        validate_only = _alter(
            client, [_entry({"user": "u6"}, {"producer_byte_rate": 7.0})], validate=True
        )
        described = _describe(client, [])
    results = {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): (
            entry.error_code,
            entry.error_message,
        )
        for entry in answer.entries
    }
    invalid = ErrorCode.INVALID_REQUEST
    assert results == {
        (("user", "u1"),): (invalid, "producer_byte_rate cannot be a fractional value."),
        (("user", "u2"),): (invalid, "Invalid configuration key no_such_quota"),
        (("user", "u3"),): (invalid, "Quota consumer_byte_rate must be greater than 0"),
        (("group", "g"),): (invalid, "Unhandled client quota entity type: group"),
        (("user", ""),): (invalid, "Empty user not supported"),
        (("ip", "10.0.0.1"), ("user", "u4")): (
            invalid,
            "Invalid quota entity combination, IP entity shouldnot be combined with User or "
            "ClientId",
        ),
        (("ip", "10.0.0.2"),): (invalid, "Invalid configuration key producer_byte_rate"),
        (): (invalid, "Invalid empty client quota entity"),
        (("user", "u5"),): (0, None),
    }
    assert [e.error_code for e in validate_only.entries] == [0]
    assert _described(described) == {(("user", "u5"),): {"request_percentage": 50.0}}
    assert _stored_quotas(broker.data_dir) == {
        entity_key({"user": "u5"}): {"request_percentage": 50.0}
    }


@pytest.mark.parametrize(
    ("components", "message"),
    [
        (
            [("user", EXACT, None)],
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        ),
        (
            [("user", DEFAULT, "x")],
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
        ),
        (
            [("user", SPECIFIED, "x")],
            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
        ),
        ([("user", 7, None)], "Unknown match type 7"),
        ([("", EXACT, "x")], "Invalid empty entity type."),
        (
            [("user", EXACT, "a"), ("user", DEFAULT, None)],
            "Entity type user cannot appear more than once in the filter.",
        ),
        (
            [("ip", SPECIFIED, None), ("user", SPECIFIED, None)],
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        ),
    ],
)
def test_bad_client_quota_filters_are_invalid_requests(
    shared_broker: BrokerProcess, components: list[tuple[str, int, str | None]], message: str
) -> None:
    with RawClient(shared_broker.port) as client:
        answer = _describe(client, components)
    assert (answer.error_code, answer.error_message, answer.entries) == (
        ErrorCode.INVALID_REQUEST,
        message,
        None,
    )


def test_client_quota_filter_of_an_unknown_entity_type_is_unsupported(
    shared_broker: BrokerProcess,
) -> None:
    with RawClient(shared_broker.port) as client:
        answer = _describe(client, [("group", SPECIFIED, None)])
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.UNSUPPORTED_VERSION,
        "Unsupported entity type group",
    )


def _salted(password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", password, salt, iterations)


def _upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> Message:
    salt = b"salt-" + name.encode()
    return Message(
        name=name,
        mechanism=mechanism,
        iterations=iterations,
        salt=salt,
        salted_password=_salted(b"secret", salt, 4096),
    )


def _alter_scram(
    client: RawClient, upsertions: list[Message], deletions: list[Message]
) -> dict[str, tuple[int, str | None]]:
    answer = client.request(
        ALTER_USER_SCRAM_CREDENTIALS, 0, Message(deletions=deletions, upsertions=upsertions)
    )
    return {r.user: (r.error_code, r.error_message) for r in answer.results}


def _describe_scram(client: RawClient, users: list[str] | None) -> Message:
    return client.request(
        DESCRIBE_USER_SCRAM_CREDENTIALS,
        0,
        Message(users=None if users is None else [Message(name=u) for u in users]),
    )


def test_scram_credentials_without_users_are_not_found(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        named = _describe_scram(client, ["nobody", "twice", "twice"])
        everyone = _describe_scram(client, None)
    assert named.error_code == 0
    assert {r.user: (r.error_code, r.error_message, r.credential_infos) for r in named.results} == {
        "nobody": (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: nobody",
            [],
        ),
        "twice": (
            ErrorCode.DUPLICATE_RESOURCE,
            "Cannot describe SCRAM credentials for the same user twice in a single request: twice",
            [],
        ),
    }
    assert everyone.error_code == 0 and everyone.results == []


def test_scram_credentials_are_stored_as_kafka_stores_them(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        results = _alter_scram(
            client,
            [
                _upsert("alice"),
                _upsert("bob", mechanism=2, iterations=8192),
                _upsert("few", iterations=100),
                _upsert("many", iterations=20000),
                _upsert("odd", mechanism=3),
                _upsert(""),
                _upsert("dup"),
                _upsert("dup", mechanism=2),
            ],
            [Message(name="ghost", mechanism=1)],
        )
        described = _describe_scram(client, ["alice", "bob"])
    assert results == {
        "alice": (0, None),
        "bob": (0, None),
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "dup": (
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        ),
        "ghost": (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
    }
    infos = {
        r.user: [(c.mechanism, c.iterations) for c in r.credential_infos] for r in described.results
    }
    assert infos == {"alice": [(1, 4096)], "bob": [(2, 8192)]}
    stored = decode_credentials((broker.data_dir / SCRAM_FILE).read_bytes())
    assert set(stored) == {("alice", 1), ("bob", 2)}
    alice = stored[("alice", 1)]
    salted = _salted(b"secret", b"salt-alice", 4096)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    assert alice.salt == b"salt-alice" and alice.iterations == 4096
    assert alice.stored_key == hashlib.sha256(client_key).digest()
    assert alice.server_key == hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    assert b"secret" not in (broker.data_dir / SCRAM_FILE).read_bytes()
    broker.stop()
    broker.start()
    with RawClient(broker.port) as client:
        deleted = _alter_scram(client, [], [Message(name="bob", mechanism=2)])
        everyone = _describe_scram(client, [])
    assert deleted == {"bob": (0, None)}
    assert [(r.user, r.error_code) for r in everyone.results] == [("alice", 0)]
    assert set(decode_credentials((broker.data_dir / SCRAM_FILE).read_bytes())) == {("alice", 1)}


def test_clients_manage_scram_credentials(broker: BrokerProcess) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )
    from kafka.admin import KafkaAdminClient
    from kafka.admin import ScramMechanism as KpMechanism
    from kafka.admin import UserScramCredentialUpsertion as KpUpsertion

    confluent = AdminClient({"bootstrap.servers": broker.bootstrap})
    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 10000), b"pw", b"salty"
    )
    for future in confluent.alter_user_scram_credentials([upsert]).values():
        future.result(10)
    described = confluent.describe_user_scram_credentials(["carol"])["carol"].result(10)
    everyone = confluent.describe_user_scram_credentials().result(10)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 10000)
    ]
    assert list(everyone) == ["carol"]
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        errors = admin.alter_user_scram_credentials(
            [KpUpsertion("dave", KpMechanism.SCRAM_SHA_256, "pw")]
        )
        kp_described = admin.describe_user_scram_credentials(["dave", "nobody"])
    finally:
        admin.close()
    assert errors == {"dave": None}
    assert kp_described["dave"]["error"] is None
    assert kp_described["nobody"]["error"]
    stored = decode_credentials((broker.data_dir / SCRAM_FILE).read_bytes())
    assert {k: v.iterations for k, v in stored.items()} == {("carol", 2): 10000, ("dave", 1): 4096}
