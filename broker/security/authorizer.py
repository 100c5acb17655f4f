"""Authorization as Kafka's StandardAuthorizer (StandardAuthorizerData.authorize).

- A principal named in ``super.users`` may do anything.
- The ACLs that apply to a resource: LITERAL ones with its exact name, the LITERAL wildcard
  ``*``, and PREFIXED ones whose name starts the resource's name; of those, the ones whose
  principal is the caller's or ``User:*`` and whose host is the caller's address or ``*``.
- A matching DENY wins. An ALLOW matches its own operation or ALL; for DESCRIBE also READ,
  WRITE, DELETE and ALTER, for DESCRIBE_CONFIGS also ALTER_CONFIGS (ALLOW only). A DENY
  matches its own operation or ALL.
- No ACL at all on the resource (whoever it names) -> ``allow.everyone.if.no.acl.found``
  (default false: denied); ACLs on it but none allowing -> denied.
Denials are logged as Kafka's authorizer logger does (INFO, "Principal = ... is Denied").
ACLs are kept durably (storage.acl_store) before CreateAcls/DeleteAcls answer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from broker.runtime.startup_errors import StartupError
from broker.security.acl import (
    ALL,
    ALLOW,
    ALTER,
    ALTER_CONFIGS,
    DELETE,
    DENY,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    LITERAL,
    OPERATIONS,
    PREFIXED,
    READ,
    RESOURCE_TYPES,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    WRITE,
    AclFilter,
)
from broker.security.settings import AuthorizerSettings
from storage.acl_store import AclStore, StoredAcl

log = logging.getLogger("kafka.authorizer.logger")

_IMPLIES_DESCRIBE = {DESCRIBE, READ, WRITE, DELETE, ALTER}
_IMPLIES_DESCRIBE_CONFIGS = {DESCRIBE_CONFIGS, ALTER_CONFIGS}


class AclFileError(StartupError):
    """The ACL file cannot be read: the broker does not start (the command line reports it
    as every other start-up failure, without importing this module when no authorizer is
    configured)."""


class StandardAuthorizer:
    def __init__(self, settings: AuthorizerSettings, store: AclStore) -> None:
        if store.problem is not None:
            # Serving with no ACLs could open everything up: refuse to start instead.
            raise AclFileError(f"ACL file {store.path} is unreadable: {store.problem}")
        self.settings = settings
        self.store = store
        self._super_users = frozenset(settings.super_users)
        self._by_type: dict[int, list[StoredAcl]] = {}
        self._index(store.all())

    def _index(self, acls: Iterable[StoredAcl]) -> None:
        by_type: dict[int, list[StoredAcl]] = {}
        for acl in acls:
            by_type.setdefault(acl.resource_type, []).append(acl)
        self._by_type = by_type

    # -- decisions -----------------------------------------------------------------------

    def authorize(
        self,
        principal: str,
        host: str,
        operation: int,
        resource_type: int,
        name: str,
        *,
        log_denied: bool = True,
    ) -> bool:
        if principal in self._super_users:
            return True
        found_resource_acls = False
        allowed = False
        for acl in self._by_type.get(resource_type, ()):
            if not _applies_to(acl, name):
                continue
            found_resource_acls = True
            result = _result(acl, principal, host, operation)
            if result == DENY:
                if log_denied:
                    self._log_denied(principal, host, operation, resource_type, name)
                return False
            if result == ALLOW:
                allowed = True
        if allowed:
            return True
        if not found_resource_acls and self.settings.allow_everyone_if_no_acl_found:
            return True
        if log_denied:
            self._log_denied(principal, host, operation, resource_type, name)
        return False

    def authorize_any(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """Authorizer.authorizeByResourceType: may the principal do ``operation`` on SOME
        resource of this type (InitProducerId without IDEMPOTENT_WRITE on the cluster needs
        WRITE on any topic)? A DENY on the literal ``*`` forbids all; else an ALLOW on a
        resource that no DENY covers (the same literal name, or a PREFIXED deny that starts
        it) is enough."""
        if principal in self._super_users:
            return True
        acls = self._by_type.get(resource_type, [])
        denies = [a for a in acls if _result(a, principal, host, operation) == DENY]
        if any(a.pattern_type == LITERAL and a.resource_name == WILDCARD for a in denies):
            return False
        for acl in acls:
            if _result(acl, principal, host, operation) != ALLOW:
                continue
            denied = any(
                (d.pattern_type == PREFIXED and acl.resource_name.startswith(d.resource_name))
                or (
                    acl.pattern_type == LITERAL
                    and d.pattern_type == LITERAL
                    and d.resource_name == acl.resource_name
                )
                for d in denies
            )
            if not denied:
                return True
        return not acls and self.settings.allow_everyone_if_no_acl_found

    def _log_denied(
        self, principal: str, host: str, operation: int, resource_type: int, name: str
    ) -> None:
        log.info(
            "Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s",
            principal,
            OPERATIONS.get(operation, operation),
            host,
            RESOURCE_TYPES.get(resource_type, resource_type),
            name,
        )

    # -- the ACL APIs --------------------------------------------------------------------

    def acls(self, acl_filter: AclFilter) -> list[StoredAcl]:
        return sorted(acl for acl in self.store.all() if acl_filter.matches(acl))

    def create(self, acls: Iterable[StoredAcl]) -> None:
        new = self.store.all() | frozenset(acls)
        if new != self.store.all():
            self.store.replace(new)
            self._index(new)

    def delete(self, filters: Iterable[AclFilter]) -> list[list[StoredAcl]]:
        """The ACLs each filter removed (an ACL matched by two filters is listed by both)."""
        current = self.store.all()
        matched = [sorted(acl for acl in current if f.matches(acl)) for f in filters]
        gone = {acl for group in matched for acl in group}
        if gone:
            remaining = current - gone
            self.store.replace(remaining)
            self._index(remaining)
        return matched


def _applies_to(acl: StoredAcl, name: str) -> bool:
    if acl.pattern_type == LITERAL:
        return acl.resource_name in (name, WILDCARD)
    return acl.pattern_type == PREFIXED and name.startswith(acl.resource_name)


def _result(acl: StoredAcl, principal: str, host: str, operation: int) -> int | None:
    """StandardAuthorizerData.findResult: ALLOW, DENY, or None when the ACL does not match."""
    if acl.principal not in (principal, WILDCARD_PRINCIPAL):
        return None
    if acl.host not in (WILDCARD, host):
        return None
    if acl.operation != ALL:
        if acl.permission_type == ALLOW:
            if operation == DESCRIBE:
                if acl.operation not in _IMPLIES_DESCRIBE:
                    return None
            elif operation == DESCRIBE_CONFIGS:
                if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif acl.operation != operation:
                return None
        elif acl.operation != operation:
            return None
    return acl.permission_type
