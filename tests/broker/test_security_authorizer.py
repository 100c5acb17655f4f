"""StandardAuthorizer's decisions (StandardAuthorizerData.authorize/findResult), directly."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.security import acl
from broker.security.authorizer import AclFileError, StandardAuthorizer
from broker.security.settings import AuthorizerSettings
from storage.acl_store import FILE_NAME, AclStore, StoredAcl


def authorizer(tmp_path: Path, *acls: StoredAcl, everyone: bool = False) -> StandardAuthorizer:
    store = AclStore.open(tmp_path)
    store.replace(acls)
    return StandardAuthorizer(AuthorizerSettings(True, ("User:root",), everyone), store)


def topic_acl(
    name: str,
    op: int,
    perm: int = acl.ALLOW,
    *,
    principal: str = "User:alice",
    host: str = "*",
    pattern: int = acl.LITERAL,
) -> StoredAcl:
    return StoredAcl(acl.TOPIC, name, pattern, principal, host, op, perm)


def may(
    auth: StandardAuthorizer, op: int, name: str, who: str = "User:alice", host: str = "10.0.0.1"
) -> bool:
    return auth.authorize(who, host, op, acl.TOPIC, name)


def test_read_write_delete_alter_imply_describe_and_alter_configs_implies_describe_configs(
    tmp_path: Path,
) -> None:
    for op in (acl.READ, acl.WRITE, acl.DELETE, acl.ALTER):
        auth = authorizer(tmp_path, topic_acl("t", op))
        assert may(auth, acl.DESCRIBE, "t") and may(auth, op, "t")
    auth = authorizer(tmp_path, topic_acl("t", acl.CREATE))
    assert not may(auth, acl.DESCRIBE, "t")
    auth = authorizer(tmp_path, topic_acl("t", acl.ALTER_CONFIGS))
    assert may(auth, acl.DESCRIBE_CONFIGS, "t") and not may(auth, acl.DESCRIBE, "t")


def test_deny_beats_allow_and_a_deny_of_read_does_not_deny_describe(tmp_path: Path) -> None:
    auth = authorizer(
        tmp_path,
        topic_acl("*", acl.ALL),
        topic_acl("pay", acl.READ, acl.DENY, pattern=acl.PREFIXED),
    )
    assert not may(auth, acl.READ, "payments")
    assert may(auth, acl.DESCRIBE, "payments")
    assert may(auth, acl.READ, "orders")


def test_literal_prefixed_wildcard_principal_and_host_matching(tmp_path: Path) -> None:
    auth = authorizer(
        tmp_path,
        topic_acl("logs", acl.WRITE, principal="User:*"),
        topic_acl("app-", acl.READ, pattern=acl.PREFIXED, host="10.0.0.1"),
    )
    assert may(auth, acl.WRITE, "logs", who="User:bob")
    assert not may(auth, acl.WRITE, "logs-2", who="User:bob")  # literal: exact name only
    assert may(auth, acl.READ, "app-1")
    assert not may(auth, acl.READ, "app-1", host="10.0.0.2")
    assert not may(auth, acl.READ, "ap")


def test_no_acl_on_the_resource_follows_allow_everyone_and_super_users_pass(
    tmp_path: Path,
) -> None:
    closed = authorizer(tmp_path, topic_acl("other", acl.READ))
    assert not may(closed, acl.READ, "free")
    assert may(closed, acl.ALL, "anything", who="User:root")
    opened = authorizer(tmp_path, topic_acl("other", acl.READ, principal="User:bob"), everyone=True)
    assert may(opened, acl.READ, "free")
    # ACLs on the resource, none for alice: denied even with allow.everyone.
    assert not may(opened, acl.READ, "other")


def test_write_on_any_topic_unless_a_wildcard_deny(tmp_path: Path) -> None:
    auth = authorizer(tmp_path, topic_acl("t", acl.WRITE))
    assert auth.authorize_any("User:alice", "h", acl.WRITE, acl.TOPIC)
    assert not auth.authorize_any("User:bob", "h", acl.WRITE, acl.TOPIC)
    auth = authorizer(tmp_path, topic_acl("t", acl.WRITE), topic_acl("*", acl.WRITE, acl.DENY))
    assert not auth.authorize_any("User:alice", "h", acl.WRITE, acl.TOPIC)
    auth = authorizer(tmp_path, topic_acl("t", acl.WRITE), topic_acl("t", acl.WRITE, acl.DENY))
    assert not auth.authorize_any("User:alice", "h", acl.WRITE, acl.TOPIC)


def test_an_unreadable_acl_file_stops_the_authorizer(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_bytes(b"\x00\x01garbage")
    with pytest.raises(AclFileError, match="unreadable"):
        StandardAuthorizer(AuthorizerSettings(True), AclStore.open(tmp_path))
