"""ACL vocabulary and rules: Kafka's ResourceType, PatternType, AclOperation and
AclPermissionType codes, what a new ACL must be (AclControlManager.validateNewAcl), and how
a filter matches a binding (AclBindingFilter.matches, ResourcePatternFilter.matches)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from storage.acl_store import StoredAcl

# ResourceType
ANY_RESOURCE, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 1, 2, 3, 4, 5, 6, 7
RESOURCE_TYPES = {
    TOPIC: "Topic",
    GROUP: "Group",
    CLUSTER: "Cluster",
    TRANSACTIONAL_ID: "TransactionalId",
    DELEGATION_TOKEN: "DelegationToken",
    USER: "User",
}
# PatternType
ANY_PATTERN, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
# AclOperation
ANY_OPERATION, ALL = 1, 2
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
CREATE_TOKENS, DESCRIBE_TOKENS, TWO_PHASE_COMMIT = 13, 14, 15
OPERATIONS = {
    ALL: "All",
    READ: "Read",
    WRITE: "Write",
    CREATE: "Create",
    DELETE: "Delete",
    ALTER: "Alter",
    DESCRIBE: "Describe",
    CLUSTER_ACTION: "ClusterAction",
    DESCRIBE_CONFIGS: "DescribeConfigs",
    ALTER_CONFIGS: "AlterConfigs",
    IDEMPOTENT_WRITE: "IdempotentWrite",
    CREATE_TOKENS: "CreateTokens",
    DESCRIBE_TOKENS: "DescribeTokens",
    TWO_PHASE_COMMIT: "TwoPhaseCommit",
}
# AclPermissionType
ANY_PERMISSION, DENY, ALLOW = 1, 2, 3

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"

_RESOURCE_NAMES = {1: "ANY", **{k: v.upper() for k, v in RESOURCE_TYPES.items()}}
_PATTERN_NAMES = {1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
# AclOperation's enum names: ClusterAction -> CLUSTER_ACTION.
_OPERATION_NAMES = {
    1: "ANY",
    **{k: re.sub(r"(?<!^)([A-Z])", r"_\1", name).upper() for k, name in OPERATIONS.items()},
}
_PERMISSION_NAMES = {1: "ANY", 2: "DENY", 3: "ALLOW"}


def _enum(names: dict[int, str], code: int) -> str:
    return names.get(code, "UNKNOWN")


def validate_new(acl: StoredAcl) -> str | None:
    """AclApis' checks, then AclControlManager.validateNewAcl's: a reason, or None.

    AclApis.createAcls refuses a CLUSTER resource not named kafka-cluster and an empty
    resource name before anything reaches the controller, so its messages win over the
    controller's (whose own "Resource name should not be empty" a broker never passes on)."""
    if acl.resource_type == CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.resource_name:
        return "Invalid empty resource name"
    if acl.resource_type not in RESOURCE_TYPES:
        return f"Invalid resourceType {_enum(_RESOURCE_NAMES, acl.resource_type)}"
    if acl.pattern_type not in (LITERAL, PREFIXED):
        return f"Invalid patternType {_enum(_PATTERN_NAMES, acl.pattern_type)}"
    if acl.operation not in OPERATIONS:
        return f"Invalid operation {_enum(_OPERATION_NAMES, acl.operation)}"
    if acl.permission_type not in (DENY, ALLOW):
        return f"Invalid permissionType {_enum(_PERMISSION_NAMES, acl.permission_type)}"
    return None


@dataclass(frozen=True, slots=True)
class AclFilter:
    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    def problem(self) -> str | None:
        """AclControlManager.validateFilter: an unknown pattern or entry filter."""
        if self.resource_type not in (ANY_RESOURCE, *RESOURCE_TYPES) or self.pattern_type not in (
            ANY_PATTERN,
            MATCH,
            LITERAL,
            PREFIXED,
        ):
            return "Unknown patternFilter."
        if self.operation not in (ANY_OPERATION, *OPERATIONS) or self.permission_type not in (
            ANY_PERMISSION,
            DENY,
            ALLOW,
        ):
            return "Unknown entryFilter."
        return None

    def matches(self, acl: StoredAcl) -> bool:
        return (
            self._matches_pattern(acl)
            and (self.principal is None or self.principal == acl.principal)
            and (self.host is None or self.host == acl.host)
            and self.operation in (ANY_OPERATION, acl.operation)
            and self.permission_type in (ANY_PERMISSION, acl.permission_type)
        )

    def _matches_pattern(self, acl: StoredAcl) -> bool:
        if self.resource_type not in (ANY_RESOURCE, acl.resource_type):
            return False
        if self.pattern_type == MATCH:
            # ResourcePatternFilter.matches with MATCH: the filter names a resource; the ACL
            # applies to it (same literal name, the literal wildcard, or a prefix of it).
            if self.resource_name is None:
                return True
            if acl.pattern_type == LITERAL:
                return acl.resource_name in (self.resource_name, WILDCARD)
            return self.resource_name.startswith(acl.resource_name)
        if self.pattern_type not in (ANY_PATTERN, acl.pattern_type):
            return False
        return self.resource_name is None or self.resource_name == acl.resource_name


def describe(acl: StoredAcl) -> str:
    """As Kafka prints an AclBinding in its logs."""
    return (
        f"(pattern=ResourcePattern(resourceType={_enum(_RESOURCE_NAMES, acl.resource_type)}, "
        f"name={acl.resource_name}, patternType={_enum(_PATTERN_NAMES, acl.pattern_type)}), "
        f"entry=(principal={acl.principal}, host={acl.host}, "
        f"operation={_enum(_OPERATION_NAMES, acl.operation)}, "
        f"permissionType={_enum(_PERMISSION_NAMES, acl.permission_type)}))"
    )
