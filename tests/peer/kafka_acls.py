"""A stand-in for Kafka 4.0's bin/kafka-acls.sh (org.apache.kafka.tools.AclCommand).

librdkafka's suite runs it through test_kafka_cmd (0109_auto_create_topics, 0115_producer_auth,
0119_consumer_auth) with lines such as

    kafka-acls.sh --bootstrap-server H:P --add --deny-principal 'User:*' --operation All
        --deny-host '*' --topic 't'
    kafka-acls.sh --bootstrap-server H:P --remove --force --allow-principal 'User:*'
        --operation Describe --allow-host '*' --topic 't'

What AclCommand does, and this does, over the Kafka protocol (kafka-python's admin client):
- exactly one of --add, --remove, --list; --bootstrap-server (or --bootstrap-controller).
- resources: --topic, --group, --transactional-id, --delegation-token, --user-principal
  (repeatable), --cluster; --resource-pattern-type (literal by default; any/match only to
  list or remove). --producer (WRITE, DESCRIBE, CREATE on topics; WRITE, DESCRIBE on
  transactional ids; IDEMPOTENT_WRITE on the cluster with --idempotent) and --consumer
  (READ, DESCRIBE on topics, READ on groups) stand for --operation.
- entries: every (principal, host, operation) of --allow-principal x --allow-host (default
  '*' when a principal is given) x --operation (default All), and the same for --deny-*.
  Operations by name as SecurityUtils.operation (PascalCase, any case); one a resource type
  does not support (AclEntry.supportedOperations, plus All) is a usage error.
- --add: CreateAcls per resource, after printing "Adding ACLs for resource `...`".
- --remove: asks "(y/n)" on stdin unless --force; with entries, DeleteAcls of one filter per
  entry, without, of everything on the resource filter.
- --list: DescribeAcls (per resource filter, or everything), printed per resource;
  --principal keeps one principal's.
Usage errors print the message on stderr and exit 1 (CommandLineUtils.printUsageAndExit); a
failed request prints "Error while executing ACL command: ..." and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass

CLUSTER_NAME = "kafka-cluster"
RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER")
PATTERN_TYPES = ("ANY", "MATCH", "LITERAL", "PREFIXED")
OPERATIONS = (
    "ALL",
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
    "CREATE_TOKENS",
    "DESCRIBE_TOKENS",
)
# AclEntry.supportedOperations (ALL is accepted on every type).
SUPPORTED = {
    "TOPIC": {
        "READ",
        "WRITE",
        "CREATE",
        "DESCRIBE",
        "DELETE",
        "ALTER",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
    },
    "GROUP": {"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"},
    "CLUSTER": {
        "CREATE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
        "ALTER",
        "DESCRIBE",
    },
    "TRANSACTIONAL_ID": {"DESCRIBE", "WRITE"},
    "DELEGATION_TOKEN": {"DESCRIBE"},
    "USER": {"CREATE_TOKENS", "DESCRIBE_TOKENS"},
}


class UsageError(Exception):
    pass


@dataclass(frozen=True, order=True)
class Resource:
    type: str
    name: str
    pattern: str

    def __str__(self) -> str:  # ResourcePattern.toString
        return (
            f"ResourcePattern(resourceType={self.type}, name={self.name}, "
            f"patternType={self.pattern})"
        )


@dataclass(frozen=True, order=True)
class Entry:
    principal: str
    host: str
    operation: str
    permission: str

    def __str__(self) -> str:  # AccessControlEntry.toString
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation}, "
            f"permissionType={self.permission})"
        )


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def operation(name: str) -> str:
    """SecurityUtils.operation: "DescribeConfigs", "DESCRIBECONFIGS", "describeconfigs"."""
    by_name = {_pascal(op): op for op in OPERATIONS} | {
        _pascal(op).upper(): op for op in OPERATIONS
    }
    return by_name.get(name) or by_name.get(name.upper()) or "UNKNOWN"


def principal(text: str) -> str:
    """SecurityUtils.parseKafkaPrincipal: type:name."""
    if ":" not in text:
        raise UsageError(f"expected a string in format principalType:principalName but got {text}")
    return text


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kafka-acls.sh", add_help=True)
    p.add_argument("--bootstrap-server")
    p.add_argument("--bootstrap-controller")
    p.add_argument("--command-config")
    for name in ("topic", "group", "transactional-id", "delegation-token", "user-principal"):
        p.add_argument(f"--{name}", action="append", default=[])
    p.add_argument("--cluster", action="store_true")
    p.add_argument("--idempotent", action="store_true")
    p.add_argument("--resource-pattern-type", default="LITERAL")
    for flag in ("add", "remove", "list", "producer", "consumer", "force"):
        p.add_argument(f"--{flag}", action="store_true")
    for name in ("operation", "allow-principal", "deny-principal", "allow-host", "deny-host"):
        p.add_argument(f"--{name}", action="append", default=None)
    p.add_argument("--principal", action="append", default=None)
    return p


def parse(argv: list[str]) -> argparse.Namespace:
    """The options, checked as AclCommandOptions.checkArgs; raises UsageError."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        raise UsageError(f"invalid arguments: {' '.join(argv)}") from exc
    if args.bootstrap_server and args.bootstrap_controller:
        raise UsageError(
            "Only one of --bootstrap-server or --bootstrap-controller must be specified"
        )
    if not args.bootstrap_server and not args.bootstrap_controller:
        raise UsageError("One of --bootstrap-server or --bootstrap-controller must be specified")
    if sum((args.add, args.remove, args.list)) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
    if args.list and (
        args.producer
        or args.consumer
        or args.allow_host
        or args.allow_principal
        or args.deny_host
        or args.deny_principal
    ):
        raise UsageError("Option \"[list]\" can't be used with option \"[producer, consumer, "
                         "allow-host, allow-principal, deny-host, deny-principal]\"")  # fmt: skip
    if (args.producer or args.consumer) and (
        args.operation or args.deny_principal or args.deny_host
    ):
        raise UsageError("Option \"[producer|consumer]\" can't be used with option "
                         "\"[operation, deny-principal, deny-host]\"")  # fmt: skip
    if args.principal is not None and not args.list:
        raise UsageError("The --principal option is only available if --list is set")
    if args.producer and not args.topic:
        raise UsageError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise UsageError("The --idempotent option is only available if --producer is set")
    if args.consumer and (
        not args.topic
        or not args.group
        or (not args.producer and (args.cluster or args.transactional_id))
    ):
        raise UsageError(
            "With --consumer you must specify a --topic and a --group and no --cluster or "
            "--transactional-id option should be specified."
        )
    pattern = args.resource_pattern_type.upper()
    if pattern not in PATTERN_TYPES:
        raise UsageError(f"Unknown resource-pattern-type: {args.resource_pattern_type}")
    args.resource_pattern_type = pattern
    return args


def resources(args: argparse.Namespace, die_if_none: bool) -> set[Resource]:
    """AclCommand.getResourceFilter."""
    pattern = args.resource_pattern_type
    found = {Resource("TOPIC", t.strip(), pattern) for t in args.topic}
    if pattern == "LITERAL" and (args.cluster or args.idempotent):
        found.add(Resource("CLUSTER", CLUSTER_NAME, "LITERAL"))
    found |= {Resource("GROUP", g.strip(), pattern) for g in args.group}
    found |= {Resource("TRANSACTIONAL_ID", t, pattern) for t in args.transactional_id}
    found |= {Resource("DELEGATION_TOKEN", t.strip(), pattern) for t in args.delegation_token}
    found |= {Resource("USER", u.strip(), pattern) for u in args.user_principal}
    if not found and die_if_none:
        raise UsageError(
            "You must provide at least one resource: --topic <topic> or --cluster or "
            "--group <group> or --delegation-token <Delegation Token ID>"
        )
    return found


def _hosts(hosts: list[str] | None, principals: list[str] | None) -> set[str]:
    if hosts:
        return {h.strip() for h in hosts}
    return {"*"} if principals else set()


def entries(args: argparse.Namespace, operations: Iterable[str]) -> set[Entry]:
    """AclCommand.getAcl: principals x hosts x operations, ALLOW then DENY."""
    out: set[Entry] = set()
    for permission, principals, hosts in (
        ("ALLOW", args.allow_principal, args.allow_host),
        ("DENY", args.deny_principal, args.deny_host),
    ):
        names = {principal(p.strip()) for p in principals or []}
        for host in _hosts(hosts, principals) if names else set():
            out |= {Entry(name, host, op, permission) for name in names for op in operations}
    return out


def plan(args: argparse.Namespace) -> dict[Resource, set[Entry]]:
    """AclCommand.getResourceFilterToAcls: the entries for each resource (filter)."""
    result: dict[Resource, set[Entry]] = {}
    if not args.producer and not args.consumer:
        ops = {operation(o.strip()) for o in args.operation or ["All"]}
        cli = entries(args, ops)
        result = {resource: set(cli) for resource in resources(args, True)}
    if args.producer:
        for resource in resources(args, True):
            if resource.type == "TOPIC":
                result[resource] = entries(args, {"WRITE", "DESCRIBE", "CREATE"})
            elif resource.type == "TRANSACTIONAL_ID":
                result[resource] = entries(args, {"WRITE", "DESCRIBE"})
        if args.idempotent:
            cluster = Resource("CLUSTER", CLUSTER_NAME, "LITERAL")
            result[cluster] = entries(args, {"IDEMPOTENT_WRITE"})
    if args.consumer:
        for resource in resources(args, True):
            if resource.type == "TOPIC":
                result.setdefault(resource, set()).update(entries(args, {"READ", "DESCRIBE"}))
            elif resource.type == "GROUP":
                result.setdefault(resource, set()).update(entries(args, {"READ"}))
    for resource, acls in result.items():
        valid = SUPPORTED[resource.type] | {"ALL"}
        if any(acl.operation not in valid for acl in acls):
            names = ", ".join(sorted(valid))
            raise UsageError(f"ResourceType {resource.type} only supports operations {names}")
    return result


# -- requests -------------------------------------------------------------------------------


def _pattern(resource: Resource) -> object:
    from kafka.admin import ACLResourcePatternType, ResourcePattern, ResourcePatternFilter
    from kafka.admin import ResourceType as KafkaResourceType

    kind = KafkaResourceType[resource.type]
    pattern = ACLResourcePatternType[resource.pattern]
    if resource.pattern in ("ANY", "MATCH"):
        return ResourcePatternFilter(kind, resource.name, pattern)
    return ResourcePattern(kind, resource.name, pattern)


def _acl(resource: Resource, entry: Entry, concrete: bool) -> object:
    from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType

    cls = ACL if concrete else ACLFilter
    return cls(
        principal=entry.principal,
        host=entry.host,
        operation=ACLOperation[entry.operation],
        permission_type=ACLPermissionType[entry.permission],
        resource_pattern=_pattern(resource),
    )


def _any_filter(resource: Resource | None) -> object:
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
        ResourceType,
    )

    pattern = (
        ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)
        if resource is None
        else _pattern(resource)
    )
    return ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY, pattern)


class CommandError(Exception):
    pass


def _described(admin: object, filters: list[object]) -> dict[Resource, set[Entry]]:
    found: dict[Resource, set[Entry]] = {}
    for acl_filter in filters:
        acls, _ = admin.describe_acls(acl_filter)  # type: ignore[attr-defined]
        for acl in acls:
            pattern = acl.resource_pattern
            resource = Resource(
                pattern.resource_type.name, pattern.resource_name, pattern.pattern_type.name
            )
            found.setdefault(resource, set()).add(
                Entry(acl.principal, acl.host, acl.operation.name, acl.permission_type.name)
            )
    return found


def _print_acls(found: dict[Resource, set[Entry]]) -> None:
    for resource, acls in sorted(found.items()):
        print(f"Current ACLs for resource `{resource}`:")
        print("\n".join(f" \t{acl}" for acl in sorted(acls)) + "\n")


def _confirm(args: argparse.Namespace, message: str) -> bool:
    if args.force:
        return True
    print(message)
    return sys.stdin.readline().strip().lower() == "y"


def add_plan(args: argparse.Namespace) -> dict[Resource, set[Entry]]:
    """AclCommand.getResourceToAcls: a specific pattern type and entries for every resource."""
    if args.resource_pattern_type in ("ANY", "MATCH"):
        raise UsageError(
            f"A '--resource-pattern-type' value of '{args.resource_pattern_type}' is not valid "
            "when adding acls."
        )
    planned = plan(args)
    if any(not acls for acls in planned.values()):
        raise UsageError(
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
        )
    return planned


def run(admin: object, args: argparse.Namespace) -> None:
    if args.add:
        for resource, acls in add_plan(args).items():
            print(f"Adding ACLs for resource `{resource}`: ")
            print("\n".join(f" \t{acl}" for acl in sorted(acls)) + "\n")
            done = admin.create_acls([_acl(resource, a, True) for a in sorted(acls)])  # type: ignore[attr-defined]
            if done["failed"]:
                raise CommandError(", ".join(e.__name__ for e in done["failed"]))
    elif args.remove:
        for resource, acls in plan(args).items():
            if acls:
                listed = "\n".join(f" \t{acl}" for acl in sorted(acls))
                message = (
                    f"Are you sure you want to remove ACLs: \n{listed}\n from resource filter "
                    f"`{resource}`? (y/n)"
                )
                filters = [_acl(resource, a, False) for a in sorted(acls)]
            else:
                message = (
                    "Are you sure you want to delete all ACLs for resource filter "
                    f"`{resource}`? (y/n)"
                )
                filters = [_any_filter(resource)]
            if not _confirm(args, message):
                continue
            for _filter, _matched, error in admin.delete_acls(filters):  # type: ignore[attr-defined]
                if error.errno != 0:
                    raise CommandError(error.__name__)
    else:
        chosen = resources(args, False)
        filters = [_any_filter(r) for r in sorted(chosen)] if chosen else [_any_filter(None)]
        found = _described(admin, filters)
        if args.principal is None:
            _print_acls(found)
            return
        for name in args.principal:
            print(f"ACLs for principal `{name}`")
            _print_acls(
                {
                    r: {a for a in acls if a.principal == name}
                    for r, acls in found.items()
                    if any(a.principal == name for a in acls)
                }
            )


def kafka_acls(argv: list[str]) -> int:
    try:
        args = parse(argv)
        # Usage errors before connecting, as AclCommand.
        if args.add:
            add_plan(args)
        elif args.remove:
            plan(args)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 1
    from kafka.admin import KafkaAdminClient

    extra: dict[str, str] = {}
    if args.command_config:
        from broker.config import parse_properties

        with open(args.command_config) as props:
            extra = parse_properties(props.read())
    admin = KafkaAdminClient(
        bootstrap_servers=args.bootstrap_server or args.bootstrap_controller,
        client_id="kafka-acls",
        **{k.replace(".", "_"): v for k, v in extra.items()},
    )
    try:
        run(admin, args)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 1
    except Exception as exc:  # AclCommand: any failure of the admin calls
        print(f"Error while executing ACL command: {exc}")
        return 1
    finally:
        admin.close()
    return 0
